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
  for (int r = 0; r < NR; ++r) {
    for (int t = 0; t < NT; ++t) out[r * NT + t] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

// Runs dot_block over rows [r0, r1) of NS row sets, RB rows of each set at
// a time (NS x RB rows share each load of x) and up to 4 tokens at a time;
// f(row, token, set, value) consumes the sums, a block's set 0 first.
template <int NS, int RB, class F>
MOEBENCH_AVX512_BF16 void for_rows(const uint16_t* const* sets, int64_t r0, int64_t r1,
                                   int64_t row_len, const uint16_t* x, int64_t stride,
                                   int64_t tokens, F&& f) {
  constexpr int NR = NS * RB;
  float sums[NR * 4];
  int64_t r = r0;
  for (; r + RB <= r1; r += RB) {
    const uint16_t* rows[NR];
    for (int i = 0; i < NR; ++i) rows[i] = sets[i / RB] + (r + i % RB) * row_len;
    int64_t t = 0;
    for (; t + 4 <= tokens; t += 4) {
      dot_block<NR, 4>(rows, x + t * stride, stride, row_len, sums);
      for (int i = 0; i < NR; ++i) {
        for (int j = 0; j < 4; ++j) f(r + i % RB, t + j, i / RB, sums[i * 4 + j]);
      }
    }
    const int64_t left = tokens - t;
    auto tail = [&](auto nt) {
      constexpr int NT = decltype(nt)::value;
      dot_block<NR, NT>(rows, x + t * stride, stride, row_len, sums);
      for (int i = 0; i < NR; ++i) {
        for (int j = 0; j < NT; ++j) f(r + i % RB, t + j, i / RB, sums[i * NT + j]);
      }
    };
    if (left == 1) tail(std::integral_constant<int, 1>{});
    if (left == 2) tail(std::integral_constant<int, 2>{});
    if (left == 3) tail(std::integral_constant<int, 3>{});
  }
  if constexpr (RB > 1) {
    if (r < r1)
      for_rows<NS, 1>(sets, r, r1, row_len, x, stride, tokens, f);  // the last rows, one at a time
  }
}

class Avx512Bf16Kernel final : public ExpertKernel {
 public:
  std::string name() const override { return "avx512-bf16"; }

  MOEBENCH_AVX512_BF16 void run(const Bf16Expert& e, const float* x, int64_t tokens, const float* w,
                                float* out) override {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    const int64_t hs = H + (H & 1), is = I + (I & 1);  // token strides: even, the padding is zero
    xb_.assign(size_t(tokens * hs), 0);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t k = 0; k < H; ++k) xb_[size_t(t * hs + k)] = to_bf16(x[t * H + k]);
    }
    g_.assign(size_t(tokens * I), 0.0f);
    hb_.assign(size_t(tokens * is), 0);
    const uint16_t* gu[2] = {e.gate.data(), e.up.data()};
    for_rows<2, 2>(gu, 0, I, H, xb_.data(), hs, tokens,
                   [&](int64_t r, int64_t t, int which, float v) {
                     if (which == 0) {
                       g_[size_t(t * I + r)] = v;
                     } else {
                       const float g = g_[size_t(t * I + r)];
                       hb_[size_t(t * is + r)] = to_bf16(g / (1.0f + std::exp(-g)) * v);
                     }
                   });
    const uint16_t* d[1] = {e.down.data()};
    for_rows<1, 4>(d, 0, H, I, hb_.data(), is, tokens,
                   [&](int64_t c, int64_t t, int, float v) { out[t * H + c] += w[t] * v; });
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
