// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The real backend's non-expert work: attention with its norms
// and the router, the FFN of dense blocks and the lm head, executed on this
// machine at the model's shapes with the kernels of kernels/cpu/dense_ops.h
// and the bf16 expert kernel (dense FFN), on the executor's thread pool.
//
// Per transformer block: RMSNorm; the query, key and value projections
// (grouped-query: q, k, v; DeepSeek's MLA: q or q_a, RMSNorm, q_b, and
// kv_a with RMSNorm of its latent part); the new tokens' keys and values
// written into the sequence's bf16 KV cache at their positions; causal
// attention of each new token over its sequence's cache (MLA in the
// absorbed form, kernels/cpu/dense_ops.h); the output projection and the
// residual; RMSNorm; on MoE blocks the router (a [experts x hidden]
// projection, softmax, top-k). The weights are seeded random bf16 values
// at the model's shapes (dense_dtype is bf16 in every preset; an int8
// dense model is refused by name); the KV cache holds, for each sequence
// slot of a step, max_positions rows per block.
//
// Memory: as for the experts (real_cpu_executor.h), as many distinct
// blocks' weights and KV caches as `budget_gib` holds are allocated (at
// least one), and block b uses buffer b mod n: a model whose attention
// weights exceed the budget (DeepSeek-V3: 22 GiB over 61 blocks) keeps
// each task's shape and traffic but not its page placement. The lm head
// and one dense FFN are always allocated (dense blocks share it).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/model_spec.h"
#include "core/engine/executor.h"
#include "kernels/cpu/dense_ops.h"
#include "kernels/cpu/expert_ffn.h"

namespace moebench {

class ThreadPool;

// What RealCpuBlocks holds for a run of this shape: `buffers` attention
// blocks (weights and KV cache each, as many as the budget allows, at least
// one), the lm head, the dense FFN and the step's scratch, and at its peak
// the largest of those matrices a second time (built row-major, then packed),
// in bytes.
struct BlocksFootprint {
  int64_t buffers = 0;
  uint64_t block_weights = 0, kv_cache = 0, lm_head = 0, dense_ffn = 0, scratch = 0, packing = 0;
  uint64_t total() const {
    return uint64_t(buffers) * (block_weights + kv_cache) + lm_head + dense_ffn + scratch + packing;
  }
};
BlocksFootprint blocks_footprint(const ModelSpec& m, double budget_gib, int64_t max_sequences,
                                 int64_t max_positions, int64_t max_step_tokens);

class RealCpuBlocks {
 public:
  // Allocates every buffer (seconds for gigabytes). Throws moebench::Error
  // when the budget does not fit in the memory free now, or the model's
  // dense dtype is not bf16.
  RealCpuBlocks(const ModelSpec& model, double budget_gib, int64_t max_sequences,
                int64_t max_positions, int64_t max_step_tokens, ThreadPool* pool, uint64_t seed);
  ~RealCpuBlocks();

  void attention(int32_t block, const StepTokens& st);
  void dense_ffn(int32_t block, int64_t tokens);
  void lm_head(int64_t tokens);

  int64_t buffers() const { return int64_t(blocks_.size()); }
  double gib() const;  // weights and KV caches allocated
  std::string dense_kernel() const;
  DenseIsa isa() const { return isa_; }
  int64_t max_sequences() const { return max_seqs_; }
  int64_t max_positions() const { return max_pos_; }
  int64_t max_step_tokens() const { return max_tokens_; }

 private:
  struct Block;
  void mla(Block& b, const StepTokens& st);
  void gqa(Block& b, const StepTokens& st);

  const ModelSpec& model_;
  ThreadPool* pool_;
  DenseIsa isa_;
  int64_t max_seqs_, max_pos_, max_tokens_;
  std::vector<std::unique_ptr<Block>> blocks_;
  Linear lm_head_;
  std::unique_ptr<ExpertKernel> ffn_kernel_;
  std::unique_ptr<ExpertWeights> ffn_;
  // Activations: the residual stream x and scratch, [max_tokens x width].
  std::vector<float> x_, h_, q_, kv_, att_, y_, logits_, ones_;
  std::vector<int64_t> row0_;
  std::vector<int32_t> top_;
};

}  // namespace moebench
