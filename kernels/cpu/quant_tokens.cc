// Activation quantisation for the VNNI kernels with AVX-512: the same int8
// values and scale as the scalar quantise_activations (expert_ffn_impl.h),
// 16 values per instruction. The scalar loop (lround and a division per
// value) runs on the thread that calls the kernel while the pool's other
// threads wait: on a DeepSeek-V3 expert at four tokens per expert it took
// about 0.1 ms of a 0.8 ms call here (docs/KERNELS.md, "Activation
// quantisation").
// GCC 12's intrinsics (_mm512_max_ps, _mm512_roundscale_ps, ...) pass
// _mm512_undefined_*() as the unused merge source, which -Wuninitialized
// reports once inlined: a false positive in the header (as in avx512-vnni).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/quant_tokens.h"
#include "kernels/cpu/vec_math.h"

namespace moebench {

#define MOEBENCH_QUANT_AVX512 __attribute__((target("avx512f,avx512bw")))

MOEBENCH_QUANT_AVX512 float quantise_activations_avx512(const float* x, int64_t n, int8_t* q) {
  // max |x|: vmaxps returns its second operand when either is NaN, so a NaN
  // value leaves the running maximum as std::max(amax, |x|) does.
  __m512 amax = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 v = _mm512_abs_ps(_mm512_maskz_loadu_ps(vec::block_mask(n - i), x + i));
    amax = _mm512_max_ps(v, amax);
  }
  const float a = _mm512_reduce_max_ps(amax);
  const float s = a > 0 ? a / 127.0f : 1.0f;
  const __m512 sv = _mm512_set1_ps(s), half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = vec::block_mask(n - i);
    const __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), sv);  // IEEE, as x[i] / s
    // lround: to nearest, halfway cases away from zero. v - trunc(v) is
    // exact, so the fraction decides without a rounding of its own.
    const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), half, _CMP_GE_OQ);
    const __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    __m512 r = _mm512_mask_add_ps(t, up & ~neg, t, one);
    r = _mm512_mask_sub_ps(r, up & neg, r, one);
    const __m512i k = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvttps_epi32(r), lo), hi);
    _mm512_mask_cvtepi32_storeu_epi8(q + i, m, k);
  }
  return s;
}

MOEBENCH_QUANT_AVX512 void QTokens::set(const float* x, int64_t tokens, int64_t n, int offset) {
  groups = (n + kQuantGroup - 1) / kQuantGroup;
  const int64_t w = groups * kQuantGroup;
  q.assign(size_t(tokens * w), 0);
  start.assign(size_t(tokens * groups), 0);
  scale.assign(size_t(tokens), 1.0f);
  static_assert(kQuantGroup == 64, "one 64-byte load per group");
  const __m512i bias = _mm512_set1_epi8(char(0x80));
  for (int64_t t = 0; t < tokens; ++t) {
    int8_t* qt = &q[size_t(t * w)];
    scale[size_t(t)] = quantise_activations_avx512(x + t * n, n, qt);
    for (int64_t g = 0; g < groups; ++g) {
      // Sum of 64 int8: as unsigned bytes q + 128, summed by vpsadbw into
      // eight 64-bit lanes, less 64 x 128.
      const __m512i u = _mm512_xor_si512(_mm512_loadu_si512(qt + g * kQuantGroup), bias);
      const int64_t sum =
          _mm512_reduce_add_epi64(_mm512_sad_epu8(u, _mm512_setzero_si512())) - 64 * 128;
      start[size_t(t * groups + g)] = int32_t(-offset * sum);
    }
  }
}

}  // namespace moebench
