// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The rest of a layer on the GPU, for real: what the simulated backend's
// "attention", "shared-experts", "dense-ffn" and "lm-head" tasks stand for
// (core/engine/cost_model.h), run on the stream of a GpuExperts' compute
// lane so that a replay's marks time them like the routed experts.
//
//   attention  RMSNorm; the input projection (q, k, v) as one bf16 GEMM
//              (cuBLAS, fp32 accumulate); the new tokens' K and V written
//              into a KV cache in device memory; attention of every new
//              token over `context` cached entries of its sequence (a
//              kernel of our own: one block per token and query head,
//              scores in shared memory in tiles with a running softmax);
//              the output projection; the residual; RMSNorm; the router
//              (a GEMM to fp32 scores, softmax and top-k per token)
//   shared     the shared experts as one FFN of their summed width
//              (gate|up GEMM, SiLU-multiply, down GEMM), weights resident
//   dense      a dense layer's FFN, the same way
//   lm head    RMSNorm and the vocabulary GEMM to fp32 logits
//
// Weights are bf16 and random (their values do not change the time); the
// layers' weight sets and KV caches are rings of a few (LayerShape::rings),
// so that consecutive layers read different memory, as a model does, and
// more than the L2 holds. MLA models (DeepSeek) run in the absorbed form
// their decode kernels use: one query per head against a single shared
// latent of kv_lora_rank + qk_rope_head_dim per token (multi-query
// attention of that width); the projections keep the model's parameter
// count (ModelSpec::attention_params), so they read its bytes.
//
// Like the cost model, every new token of a task attends to the same
// `context` entries of its sequence (a prefill's mean), and the tokens are
// spread evenly over the task's sequences. Builds without CUDA compile a
// stub whose constructor throws moebench::Error (gpu_layer_none.cc).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/gpu_layer_shape.h"

namespace moebench::gpu {

class GpuLayer {
 public:
  struct Options {
    LayerShape shape;
    int64_t max_tokens = 512;    // new tokens per task
    int64_t max_sequences = 64;  // sequences per task
    int64_t max_context = 4096;  // cached entries per sequence
    int rings = 4;               // weight sets and KV caches, used layer % rings
    bool lm_head = true;         // allocate the vocabulary matrix
  };
  // `stream`: the cudaStream_t to run on (a GpuExperts' compute lane,
  // GpuExperts::stream), nullptr for a stream of its own.
  GpuLayer(const Options& o, void* stream);
  ~GpuLayer();
  GpuLayer(const GpuLayer&) = delete;
  GpuLayer& operator=(const GpuLayer&) = delete;

  const Options& options() const;
  int64_t device_bytes() const;

  // Asynchronous on the stream; each throws moebench::Error for a count
  // outside the options (tokens >= 1, 1 <= sequences <= tokens, context >= 1).
  void attention(int layer, int64_t tokens, int64_t sequences, int64_t context);
  void shared_experts(int layer, int64_t tokens);  // throws when the model has none
  void dense_ffn(int layer, int64_t tokens);       // throws when the model has no dense layer
  void lm_head(int64_t tokens);
  void synchronize();
  // The top-k expert ids the router chose for the last attention's tokens
  // (tokens x top_k, token-major), after synchronize(); for tests.
  std::vector<int32_t> last_routing();
  // The attention output of the last attention() (tokens x q_heads x
  // value_dim, fp32), for tests against attention_reference.
  std::vector<float> last_attention_output();
  // The query and the cached K/V the last attention() read, for a test's
  // reference (fp32 copies of the bf16 values): q [tokens x q_heads x
  // score_dim], kv of `sequence` [context x kv_entry_elems].
  std::vector<float> last_queries();
  std::vector<float> cached_entries(int layer, int64_t sequence, int64_t context);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace moebench::gpu
