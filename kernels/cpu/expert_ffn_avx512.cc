// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// expert kernel "avx512-bf16": bf16 dot products (vdpbf16ps, 32 products
// into 16 fp32 lanes per instruction), compiled for AVX-512 with target
// attributes and constructed only when cpu_info() reports avx512_bf16.
//
// Gate and up run in one pass: each weight chunk is loaded once for up to
// four tokens, and two gate rows and two up rows (four down rows) share
// each load of x. Activations
// (x, and silu(gate) * up) are rounded to bf16 like the weights; all sums
// are fp32. Odd widths are handled by masked loads (a masked-off lane reads
// nothing and contributes zero).
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/row_blocks.h"
#include "kernels/cpu/thread_pool.h"

namespace moebench {
namespace {

#define MOEBENCH_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

// acc[r][t] = rows[r] . xs[t] over n bf16 values, for NR rows and NT tokens
// (xs[t] = x + t * stride).
template <int NR, int NT>
MOEBENCH_AVX512_BF16 inline void dot_block(const uint16_t* const* rows, const uint16_t* x,
                                           int64_t stride, int64_t n, float* out /* [NR][NT] */) {
  __m512 acc[NR][NT];
  for (int r = 0; r < NR; ++r) {
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  int64_t k = 0;
  for (; k + 32 <= n; k += 32) {
    __m512i xv[NT];
    for (int t = 0; t < NT; ++t) xv[t] = _mm512_loadu_si512(x + t * stride + k);
    for (int r = 0; r < NR; ++r) {
      const __m512i w = _mm512_loadu_si512(rows[r] + k);
      for (int t = 0; t < NT; ++t)
        acc[r][t] = _mm512_dpbf16_ps(acc[r][t], (__m512bh)w, (__m512bh)xv[t]);
    }
  }
  if (k < n) {
    const __mmask32 m = __mmask32((uint64_t(1) << (n - k)) - 1);
    __m512i xv[NT];
    for (int t = 0; t < NT; ++t) xv[t] = _mm512_maskz_loadu_epi16(m, x + t * stride + k);
    for (int r = 0; r < NR; ++r) {
      const __m512i w = _mm512_maskz_loadu_epi16(m, rows[r] + k);
      for (int t = 0; t < NT; ++t)
        acc[r][t] = _mm512_dpbf16_ps(acc[r][t], (__m512bh)w, (__m512bh)xv[t]);
    }
  }
  alignas(64) float lanes[16];
  for (int r = 0; r < NR; ++r) {
    for (int t = 0; t < NT; ++t) {
      _mm512_store_ps(lanes, acc[r][t]);
      out[r * NT + t] = row_blocks::sum16(lanes);
    }
  }
}

// Row sets of bf16 weights ([rows x n] each) against bf16 tokens.
struct Bf16Dot {
  const uint16_t* const* sets;
  int64_t n;          // row length
  const uint16_t* x;  // token t at x + t * stride
  int64_t stride;
  template <int NR, int NT>
  MOEBENCH_AVX512_BF16 void block(const int* set, const int64_t* row, int64_t t0, float* sums) {
    const uint16_t* rows[NR];
    for (int i = 0; i < NR; ++i) rows[i] = sets[set[i]] + row[i] * n;
    dot_block<NR, NT>(rows, x + t0 * stride, stride, n, sums);
  }
};

class Avx512Bf16Kernel final : public ExpertKernel {
 public:
  std::string name() const override { return "avx512-bf16"; }
  bool supports(WeightDtype d) const override { return d == WeightDtype::kBf16; }

  MOEBENCH_AVX512_BF16 void compute(const ExpertWeights& e, const float* x, int64_t tokens,
                                    const float* w, float* out, ThreadPool* pool) override {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    const int64_t hs = H + (H & 1), is = I + (I & 1);  // token strides: even, the padding is zero
    xb_.assign(size_t(tokens * hs), 0);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t k = 0; k < H; ++k) xb_[size_t(t * hs + k)] = to_bf16(x[t * H + k]);
    }
    hb_.assign(size_t(tokens * is), 0);
    g_.assign(size_t(tokens * I), 0.0f);
    const uint16_t* gu[2] = {e.gate.data(), e.up.data()};
    Bf16Dot gate_up{gu, H, xb_.data(), hs};
    parallel_ranges(pool, I, row_blocks::kGateUpGrain, [&](int64_t r0, int64_t r1) {
      row_blocks::gate_up_silu(
          gate_up, r0, r1, I, tokens, g_.data(),
          [&](int64_t r, int64_t t, float h) { hb_[size_t(t * is + r)] = to_bf16(h); });
    });
    const uint16_t* d[1] = {e.down.data()};
    Bf16Dot down{d, I, hb_.data(), is};
    parallel_ranges(pool, H, row_blocks::kDownGrain, [&](int64_t c0, int64_t c1) {
      row_blocks::for_rows<1, 4>(down, c0, c1, tokens, [&](int64_t c, int64_t t, int, float v) {
        out[t * H + c] += w[t] * v;
      });
    });
  }

 private:
  std::vector<uint16_t> xb_, hb_;
  std::vector<float> g_;
};

}  // namespace

std::unique_ptr<ExpertKernel> make_avx512_bf16_kernel() {
  return std::make_unique<Avx512Bf16Kernel>();
}

}  // namespace moebench
