// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPU layer's shapes (kernels/cuda/gpu_layer.h) from a model, and its
// attention's CPU reference: plain C++, no GPU needed. The model is only
// declared here: CUDA sources include this header and are compiled as C++17.

#include <cstdint>

namespace moebench {
struct ModelSpec;
}

namespace moebench::gpu {

// The shapes the layer's kernels run, from the model (gpu_layer_shape.cc;
// no GPU needed, tested on the CPU).
struct LayerShape {
  int64_t hidden = 0;
  int64_t q_heads = 0, kv_heads = 0;     // kv_heads divides q_heads
  int64_t score_dim = 0, value_dim = 0;  // per head; a KV entry holds K (score_dim) and V
  // Input projection: its output columns (q, k and v; MLA: its compressed
  // parts), chosen so that its weights and the output projection's are the
  // model's attention parameters.
  int64_t in_proj = 0;
  int64_t out_proj_in = 0;  // the output projection's input width (heads x value width)
  // One token's KV entry per layer, bf16 values: K of kv head g at
  // g x score_dim, its V at v_offset + g x value_dim (GQA: all the K, then
  // all the V; MLA: the latent, whose first kv_lora_rank values are V).
  int64_t kv_entry_elems = 0, v_offset = 0;
  int64_t experts = 0, top_k = 0;
  int64_t shared_inter = 0;  // all shared experts as one FFN of this width (0: none)
  int64_t dense_inter = 0;   // a dense layer's FFN width (0: none)
  int64_t vocab = 0;
  int64_t attention_weight_bytes() const { return (in_proj + out_proj_in) * hidden * 2; }
};
// Throws moebench::Error naming the model and field when a shape the
// kernels need is missing (no heads, a kv_heads that does not divide the
// heads, ...).
LayerShape layer_shape(const ModelSpec& m);

// The attention of one token and query head on the CPU (fp32):
// softmax(q . K / sqrt(score_dim)) . V over `context` entries of
// s.kv_entry_elems values, K and V of the head's kv head as above. The GPU
// kernel's reference in tests.
void attention_reference(const LayerShape& s, const float* q, int64_t head, const float* entries,
                         int64_t context, float* out);

}  // namespace moebench::gpu
