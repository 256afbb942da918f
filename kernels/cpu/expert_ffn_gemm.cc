// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// expert kernel "avx512-bf16-gemm": bf16 weights packed at load
// (ExpertWeights::pack: blocks of 16 rows, columns in pairs), for many
// tokens per expert. Where avx512-bf16 keeps one accumulator per (row,
// token) and ends every dot product in a horizontal sum, this kernel
// vectorises over 16 rows: per column pair it loads the 16 rows' two
// weights once and multiplies them by each token's two activations,
// broadcast (vdpbf16ps), so a 16-row block by 12 tokens keeps 12 (down: 24)
// accumulators in registers, none reduced across lanes. Gate and up run
// together and SiLU is applied in registers (exp by range reduction and a
// polynomial, relative error about 1e-7); each thread takes whole row blocks
// from the pool's queue, so the result does not depend on the thread count.
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vec_math.h"

namespace moebench {
namespace {

#define MOEBENCH_GEMM __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

constexpr int kTile = 12;  // tokens per register tile

// 16 fp32 lanes to 16 bf16 (round to nearest even, as to_bf16).
MOEBENCH_GEMM inline __m256i to_bf16_16(__m512 v) {
  return (__m256i)_mm512_cvtneps_pbh(v);
}

// Tokens' activations as bf16 pairs: x[t] at xb + t * kp (32-bit words),
// kp = packed_pairs(n) as the weights (the padding zero).
struct Pairs {
  std::vector<uint32_t> v;
  int64_t kp = 0;
  MOEBENCH_GEMM void set_from_f32(const float* x, int64_t tokens, int64_t n) {
    kp = packed_pairs(n);
    v.assign(size_t(tokens * kp), 0);
    // A pair's word holds column 2i in its low half, 2i + 1 in its high
    // one: in memory, the row's bf16 values in order.
    vec::rows_to_bf16(x, tokens, n, 2 * kp, reinterpret_cast<uint16_t*>(v.data()));
  }
};

// Gate and up for rows [16 rb, 16 rb + 16) and tokens [t0, t0 + NT):
// h = silu(gate) * up into hb (bf16 pairs per token, kp_h words per token).
template <int NT>
MOEBENCH_GEMM void gate_up_tile(const uint16_t* pg, const uint16_t* pu, int64_t kp,
                                const uint32_t* x, int64_t t0, int64_t rb, int64_t inter,
                                uint16_t* hb, int64_t h_stride) {
  __m512 g[NT], u[NT];
  for (int t = 0; t < NT; ++t) g[t] = u[t] = _mm512_setzero_ps();
  const uint16_t* wg = pg + rb * kp * 32;
  const uint16_t* wu = pu + rb * kp * 32;
  const uint32_t* xt = x + t0 * kp;
  for (int64_t k = 0; k < kp; ++k) {
    const __m512bh a = (__m512bh)_mm512_loadu_si512(wg + k * 32);
    const __m512bh b = (__m512bh)_mm512_loadu_si512(wu + k * 32);
    for (int t = 0; t < NT; ++t) {
      const __m512bh xv = (__m512bh)_mm512_set1_epi32(int(xt[t * kp + k]));
      g[t] = _mm512_dpbf16_ps(g[t], a, xv);
      u[t] = _mm512_dpbf16_ps(u[t], b, xv);
    }
  }
  const int64_t r0 = rb * 16;
  const __mmask16 m = vec::block_mask(inter - r0);
  for (int t = 0; t < NT; ++t) {
    const __m256i h = to_bf16_16(vec::silu_mul16(g[t], u[t]));
    _mm256_mask_storeu_epi16(hb + (t0 + t) * h_stride + r0, m, h);
  }
}

// Down for rows [16 rb, 16 rb + 32) (two row blocks when there are) and
// tokens [t0, t0 + NT): out[t][c] += w[t] * (down_c . h_t).
template <int NT, int MR>
MOEBENCH_GEMM void down_tile(const uint16_t* pd, int64_t kp, const uint32_t* h, int64_t t0,
                             int64_t rb, int64_t hidden, const float* w, float* out) {
  __m512 acc[MR][NT];
  for (int m = 0; m < MR; ++m) {
    for (int t = 0; t < NT; ++t) acc[m][t] = _mm512_setzero_ps();
  }
  const uint32_t* ht = h + t0 * kp;
  for (int64_t k = 0; k < kp; ++k) {
    __m512bh a[MR];
    for (int m = 0; m < MR; ++m) a[m] = (__m512bh)_mm512_loadu_si512(pd + ((rb + m) * kp + k) * 32);
    for (int t = 0; t < NT; ++t) {
      const __m512bh xv = (__m512bh)_mm512_set1_epi32(int(ht[t * kp + k]));
      for (int m = 0; m < MR; ++m) acc[m][t] = _mm512_dpbf16_ps(acc[m][t], a[m], xv);
    }
  }
  for (int m = 0; m < MR; ++m) {
    const int64_t c0 = (rb + m) * 16;
    const __mmask16 mk = vec::block_mask(hidden - c0);
    for (int t = 0; t < NT; ++t)
      vec::add_scaled16(out + (t0 + t) * hidden + c0, mk, w[t0 + t], acc[m][t]);
  }
}

class GemmBf16Kernel final : public ExpertKernel {
 public:
  std::string name() const override { return "avx512-bf16-gemm"; }
  bool supports(WeightDtype d) const override { return d == WeightDtype::kBf16; }
  bool needs_packed() const override { return true; }

 protected:
  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool* pool) override {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    xp_.set_from_f32(x, tokens, H);
    const int64_t kp_h = packed_pairs(I);      // words per token of h
    hb_.assign(size_t(tokens * kp_h * 2), 0);  // bf16, row length even (padding zero)
    vec::for_block_tiles<kTile>(pool, (I + 15) / 16, tokens, [&]<int NT>(int64_t rb, int64_t t0) {
      gate_up_tile<NT>(e.pgate.data(), e.pup.data(), xp_.kp, xp_.v.data(), t0, rb, I, hb_.data(),
                       kp_h * 2);
    });
    const auto* h = reinterpret_cast<const uint32_t*>(hb_.data());
    const int64_t blocks_h = (H + 15) / 16;
    // Two row blocks per task where there are two, so each activation
    // broadcast feeds two vector products.
    vec::for_block_tiles<kTile>(pool, (blocks_h + 1) / 2, tokens,
                                [&]<int NT>(int64_t p, int64_t t0) {
                                  if (2 * p + 1 < blocks_h) {
                                    down_tile<NT, 2>(e.pdown.data(), kp_h, h, t0, 2 * p, H, w, out);
                                  } else {
                                    down_tile<NT, 1>(e.pdown.data(), kp_h, h, t0, 2 * p, H, w, out);
                                  }
                                });
  }

 private:
  Pairs xp_;
  std::vector<uint16_t> hb_;
};

}  // namespace

std::unique_ptr<ExpertKernel> make_avx512_bf16_gemm_kernel() {
  return std::make_unique<GemmBf16Kernel>();
}

}  // namespace moebench
