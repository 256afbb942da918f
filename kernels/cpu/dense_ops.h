// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The non-expert work of a transformer block on the CPU, for the real
// backend's whole-step execution: a bf16 linear layer, RMSNorm,
// the router's softmax and top-k, and causal attention of new tokens over a
// bf16 KV cache, in one form that covers both attentions of the model
// presets:
//
//   grouped-query attention  (Mixtral, Qwen): heads query heads, kv_heads
//       key and value heads of head_dim; head h reads kv head
//       h / (heads / kv_heads)
//   multi-head latent attention, absorbed  (DeepSeek-V2/V3): the cache holds
//       one row per token, the compressed latent c (kv_lora_rank) followed by
//       the rotary key part r (qk_rope_head_dim); each head's query is moved
//       into the latent space beforehand (q_nope through the head's slice of
//       kv_b), so attention is one shared "kv head" with keys [c | r] and
//       values c, and each head's latent output goes through its value slice
//       of kv_b afterwards. This is how DeepSeek's and KTransformers'
//       decoders run MLA: the cache read per token is the compressed row
//       (ModelSpec::kv_bytes_per_token), the FLOPs over the context are
//       heads x (2 kv_lora_rank + qk_rope_head_dim) x 2 per cached token.
//
// Three implementations, picked at run time from the CPU (never from the
// build flags): AVX-512 BF16 (linear layers on the packed layout of the
// bf16 expert kernels, activations rounded to bf16, vdpbf16ps), AVX2 with
// FMA (bf16 widened to fp32), and plain loops (any x86-64). Rotary position
// embedding is not applied (its cost is a few multiplies per query and key
// element); the values are random: the real backend measures time, and the
// tests check each kernel against the reference loops.

#include <cstdint>
#include <vector>

namespace moebench {

class ThreadPool;

enum class DenseIsa { kReference, kAvx2, kAvx512Bf16 };
const char* to_string(DenseIsa isa);
// The fastest this CPU runs: AVX-512 BF16, else AVX2 with FMA, else the loops.
DenseIsa best_dense_isa();

// A projection: bf16 weights [rows x cols]; y_t = W x_t.
class Linear {
 public:
  Linear() = default;
  // Weights uniform in +-1 / sqrt(cols) from a seeded generator, rounded to
  // bf16 and stored for `isa` (packed for AVX-512 BF16, row-major otherwise).
  static Linear random(int64_t rows, int64_t cols, uint64_t seed, DenseIsa isa);
  // y[t * rows + r] = sum_c W[r][c] x[t * cols + c] for t < tokens (y is
  // overwritten). With a pool, whole blocks of 16 rows per thread (the
  // result does not depend on the thread count); null runs on the caller.
  void apply(const float* x, int64_t tokens, float* y, ThreadPool* pool) const;
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  DenseIsa isa() const { return isa_; }
  int64_t bytes() const { return rows_ * cols_ * 2; }
  float at(int64_t r, int64_t c) const;  // the weight as the kernels read it

 private:
  int64_t rows_ = 0, cols_ = 0;
  DenseIsa isa_ = DenseIsa::kReference;
  std::vector<uint16_t> w_;  // row-major, or packed (AVX-512 BF16)
};

// x[t] = x[t] / rms(x[t]) for t < tokens, rows of n (the learned scale is
// 1: random weights would not change the time).
void rms_norm(float* x, int64_t tokens, int64_t n);

// Softmax over each token's `experts` logits and the indices of the k
// largest (ties to the lower index) into top[t * k ...].
void softmax_top_k(const float* logits, int64_t tokens, int64_t experts, int64_t k, int32_t* top);

// Causal attention over a bf16 cache. Query t (q + t * heads * key_dim,
// one key_dim vector per head) sits at position pos[t] of its sequence,
// whose cache rows start at cache_row0[t] (rows cache_row0[t] + 0 ..
// cache_row0[t] + pos[t] are attended: its own row is written before the
// call). Key j of kv head g is at k + (row * k_stride + g * key_dim), its
// value at v + (row * v_stride + g * value_dim). out[t][h] (value_dim
// each) = sum_j softmax_j(scale * q . k_j) v_j. One task per (token, head)
// on the pool.
struct AttentionShape {
  int64_t heads = 0, kv_heads = 0, key_dim = 0, value_dim = 0;
  int64_t k_stride = 0, v_stride = 0;  // elements per cache row
  float scale = 1;
};
void attention(const AttentionShape& s, const float* q, int64_t tokens, const int64_t* pos,
               const int64_t* cache_row0, const uint16_t* k, const uint16_t* v, float* out,
               ThreadPool* pool, DenseIsa isa);

// fp32 to bf16 (round to nearest even), n values.
void to_bf16_row(const float* x, int64_t n, uint16_t* out);

}  // namespace moebench
