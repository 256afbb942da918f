// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// expert kernel "avx512-vnni-gemm": int8 and int4 weights packed at load
// (QuantMatrix::pack: blocks of 16 rows, each group of 64 columns as 16
// quads of 4 codes). The same idea as avx512-bf16-gemm for quantised
// weights: per quad one load gives 16 rows' 4 codes (int4: one load gives
// two quads, in the low and the high nibbles) and vpdpbusd multiplies them by each
// token's 4 int8 activations, broadcast, into 16 rows' int32 sums; at the
// end of a group the sums are converted and multiplied by the vector of the
// 16 rows' scales into fp32 accumulators, so no sum is reduced across lanes.
// Activations are quantised to int8 per token (one scale per token), as in
// avx512-vnni; the codes' offset (128, int4 8) comes back out as the
// accumulator's start value, -offset x (the group's activation sum).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/quant_tokens.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vec_math.h"

namespace moebench {
namespace {

#define MOEBENCH_VNNI_GEMM __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

constexpr int kTile = 6;  // tokens per register tile (two int32 and two fp32 accumulators each)

// Two consecutive quads' 64 codes each as unsigned bytes, from where the
// first starts (int4: 64 bytes, the first quad in the low nibbles, the
// second in the high ones).
template <bool kInt4>
MOEBENCH_VNNI_GEMM inline void load_quads(const uint8_t* p, __m512i& a0, __m512i& a1) {
  if constexpr (!kInt4) {
    a0 = _mm512_loadu_si512(p);
    a1 = _mm512_loadu_si512(p + 64);
  } else {
    const __m512i b = _mm512_loadu_si512(p);
    const __m512i m = _mm512_set1_epi8(0x0f);
    a0 = _mm512_and_si512(b, m);
    a1 = _mm512_and_si512(_mm512_srli_epi16(b, 4), m);
  }
}

MOEBENCH_VNNI_GEMM inline __m512i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Gate and up for rows [16 rb, 16 rb + 16) and tokens [t0, t0 + NT):
// h[t][r] = silu(gate) * up in fp32 (inter per token).
template <bool kInt4, int NT>
MOEBENCH_VNNI_GEMM void gate_up_tile(const QuantMatrix& G, const QuantMatrix& U, const QTokens& x,
                                     int64_t t0, int64_t rb, int64_t inter, float* h) {
  constexpr int64_t qb = kInt4 ? 32 : 64;
  const int64_t ng = G.groups, w = ng * kQuantGroup;
  __m512 fg[NT], fu[NT];
  for (int t = 0; t < NT; ++t) fg[t] = fu[t] = _mm512_setzero_ps();
  // With few tokens, two sets of int32 sums (even and odd quads) so that
  // more than one dependency chain is in flight per matrix.
  constexpr int S = NT <= 2 ? 2 : 1;
  for (int64_t g = 0; g < ng; ++g) {
    __m512i ig[S][NT], iu[S][NT];
    for (int t = 0; t < NT; ++t) {
      ig[0][t] = iu[0][t] = _mm512_set1_epi32(x.start[size_t((t0 + t) * ng + g)]);
      for (int k = 1; k < S; ++k) ig[k][t] = iu[k][t] = _mm512_setzero_si512();
    }
    const uint8_t* cg = G.pcodes.data() + (rb * ng + g) * 16 * qb;
    const uint8_t* cu = U.pcodes.data() + (rb * ng + g) * 16 * qb;
    const int8_t* xg = x.q.data() + t0 * w + g * kQuantGroup;
    for (int q = 0; q < 16; q += 2) {
      __m512i a0, a1, b0, b1;
      load_quads<kInt4>(cg + q * qb, a0, a1);
      load_quads<kInt4>(cu + q * qb, b0, b1);
      for (int t = 0; t < NT; ++t) {
        const __m512i x0 = bcast4(xg + t * w + 4 * q), x1 = bcast4(xg + t * w + 4 * q + 4);
        ig[0][t] = _mm512_dpbusd_epi32(ig[0][t], a0, x0);
        iu[0][t] = _mm512_dpbusd_epi32(iu[0][t], b0, x0);
        ig[S - 1][t] = _mm512_dpbusd_epi32(ig[S - 1][t], a1, x1);
        iu[S - 1][t] = _mm512_dpbusd_epi32(iu[S - 1][t], b1, x1);
      }
    }
    const __m512 sg = _mm512_loadu_ps(G.pscale.data() + (rb * ng + g) * 16);
    const __m512 su = _mm512_loadu_ps(U.pscale.data() + (rb * ng + g) * 16);
    for (int t = 0; t < NT; ++t) {
      for (int k = 1; k < S; ++k) {
        ig[0][t] = _mm512_add_epi32(ig[0][t], ig[k][t]);
        iu[0][t] = _mm512_add_epi32(iu[0][t], iu[k][t]);
      }
      fg[t] = _mm512_fmadd_ps(vec::to_ps16(ig[0][t]), sg, fg[t]);
      fu[t] = _mm512_fmadd_ps(vec::to_ps16(iu[0][t]), su, fu[t]);
    }
  }
  const int64_t r0 = rb * 16;
  const __mmask16 m = vec::block_mask(inter - r0);
  for (int t = 0; t < NT; ++t) {
    const __m512 s = _mm512_set1_ps(x.scale[size_t(t0 + t)]);
    const __m512 hv = vec::silu_mul16(_mm512_mul_ps(fg[t], s), _mm512_mul_ps(fu[t], s));
    _mm512_mask_storeu_ps(h + (t0 + t) * inter + r0, m, hv);
  }
}

// Down for rows [16 rb, 16 rb + 16 MR) and tokens [t0, t0 + NT):
// out[t][c] += w[t] * (down_c . h_t).
template <bool kInt4, int NT, int MR>
MOEBENCH_VNNI_GEMM void down_tile(const QuantMatrix& D, const QTokens& h, int64_t t0, int64_t rb,
                                  int64_t hidden, const float* w, float* out) {
  constexpr int64_t qb = kInt4 ? 32 : 64;
  const int64_t ng = D.groups, wd = ng * kQuantGroup;
  __m512 f[MR][NT];
  for (int m = 0; m < MR; ++m) {
    for (int t = 0; t < NT; ++t) f[m][t] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < ng; ++g) {
    __m512i acc[MR][NT];
    for (int t = 0; t < NT; ++t) {
      const __m512i st = _mm512_set1_epi32(h.start[size_t((t0 + t) * ng + g)]);
      for (int m = 0; m < MR; ++m) acc[m][t] = st;
    }
    const int8_t* hg = h.q.data() + t0 * wd + g * kQuantGroup;
    for (int q = 0; q < 16; q += 2) {
      __m512i a0[MR], a1[MR];
      for (int m = 0; m < MR; ++m)
        load_quads<kInt4>(D.pcodes.data() + (((rb + m) * ng + g) * 16 + q) * qb, a0[m], a1[m]);
      for (int t = 0; t < NT; ++t) {
        const __m512i x0 = bcast4(hg + t * wd + 4 * q), x1 = bcast4(hg + t * wd + 4 * q + 4);
        for (int m = 0; m < MR; ++m) {
          acc[m][t] = _mm512_dpbusd_epi32(acc[m][t], a0[m], x0);
          acc[m][t] = _mm512_dpbusd_epi32(acc[m][t], a1[m], x1);
        }
      }
    }
    for (int m = 0; m < MR; ++m) {
      const __m512 s = _mm512_loadu_ps(D.pscale.data() + ((rb + m) * ng + g) * 16);
      for (int t = 0; t < NT; ++t) f[m][t] = _mm512_fmadd_ps(vec::to_ps16(acc[m][t]), s, f[m][t]);
    }
  }
  for (int m = 0; m < MR; ++m) {
    const int64_t c0 = (rb + m) * 16;
    const __mmask16 mk = vec::block_mask(hidden - c0);
    for (int t = 0; t < NT; ++t) {
      vec::add_scaled16(out + (t0 + t) * hidden + c0, mk, w[t0 + t] * h.scale[size_t(t0 + t)],
                        f[m][t]);
    }
  }
}

class VnniGemmKernel final : public ExpertKernel {
 public:
  std::string name() const override { return "avx512-vnni-gemm"; }
  bool supports(WeightDtype d) const override {
    return d == WeightDtype::kInt8 || d == WeightDtype::kInt4;
  }
  bool needs_packed() const override { return true; }

 protected:
  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool* pool) override {
    if (e.dtype == WeightDtype::kInt4) {
      run_as<true>(e, x, tokens, w, out, pool);
    } else {
      run_as<false>(e, x, tokens, w, out, pool);
    }
  }

 private:
  template <bool kInt4>
  void run_as(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
              ThreadPool* pool) {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    const int offset = kInt4 ? 8 : 128;
    xq_.set(x, tokens, H, offset);
    h_.assign(size_t(tokens * I), 0.0f);
    vec::for_block_tiles<kTile>(pool, (I + 15) / 16, tokens, [&]<int NT>(int64_t rb, int64_t t0) {
      gate_up_tile<kInt4, NT>(e.qgate, e.qup, xq_, t0, rb, I, h_.data());
    });
    hq_.set(h_.data(), tokens, I, offset);
    const int64_t blocks = (H + 15) / 16;
    // Two row blocks per task where there are two (as avx512-bf16-gemm).
    vec::for_block_tiles<kTile>(pool, (blocks + 1) / 2, tokens, [&]<int NT>(int64_t p, int64_t t0) {
      if (2 * p + 1 < blocks) {
        down_tile<kInt4, NT, 2>(e.qdown, hq_, t0, 2 * p, H, w, out);
      } else {
        down_tile<kInt4, NT, 1>(e.qdown, hq_, t0, 2 * p, H, w, out);
      }
    });
  }

  QTokens xq_, hq_;
  std::vector<float> h_;
};

}  // namespace

std::unique_ptr<ExpertKernel> make_avx512_vnni_gemm_kernel() {
  return std::make_unique<VnniGemmKernel>();
}

}  // namespace moebench
