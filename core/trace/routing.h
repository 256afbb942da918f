// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Router functions: logits of one token in one layer -> top-k ids, combine
// weights and the scores of all experts. Deterministic (det:: math); equal
// scores are ordered by the lower expert id, whatever the visiting order.
// Output ids are in rank order (best first).

#include <cstdint>

#include "core/trace/trace.h"

namespace moebench {

// Scratch space for route(); reuse between calls.
struct RoutingScratch {
  std::vector<float> select, group_score;
  std::vector<int32_t> groups, seeds;
  std::vector<float> block_scores, block_aux, pen;
  struct Saved {
    int64_t at;
    float v;
  };
  std::vector<Saved> saved;
  std::vector<int32_t> block_ids;
  std::vector<uint8_t> allowed;
};

// logits[E] (+ selection_bias[E] or nullptr) -> ids[k], weights[k], probs[E]
// (softmax probabilities, or sigmoid scores for sigmoid routing).
void route(const RoutingConfig& cfg, const float* logits, const float* selection_bias, int32_t* ids,
           float* weights, float* probs, RoutingScratch& scratch);

// Routes 16 tokens at once. logits is [E][16] (token in the lane); lanes
// [0, valid) are routed, ids/weights go to ids[b] / weights[b] (k each) and,
// when probs != nullptr, scores to probs[b] (E each; every probs[b] with
// b < valid must then be non-null). Scores are computed for
// all 16 lanes in vector code; equal scores are ordered by lower id.
void route_block(const RoutingConfig& cfg, const float* logits, int valid, int32_t* const* ids,
                 float* const* weights, float* const* probs, RoutingScratch& scratch);

// Top-k indices of `x[n]` in descending order (ties: lower index first),
// restricted to indices with allowed[i] (nullptr = all).
void top_k_indices(const float* x, int64_t n, int64_t k, const uint8_t* allowed, int32_t* out);

}  // namespace moebench
