// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Activation quantisation for the int8/int4 kernels with AVX-512 (16 values
// per instruction) or AVX2 (8): the same int8 values and scale as the
// scalar quantise_activations (expert_ffn_impl.h), bit for bit. The scalar
// loop (lround and a division per value) runs on the thread that calls the
// kernel while the pool's other threads wait: on a DeepSeek-V3 expert at
// four tokens per expert it took about 0.1 ms of a 0.8 ms call here
// (docs/KERNELS.md, "Activation quantisation").
// GCC 12's intrinsics (_mm512_max_ps, _mm512_roundscale_ps, ...) pass
// _mm512_undefined_*() as the unused merge source, which -Wuninitialized
// reports once inlined: a false positive in the header (as in avx512-vnni).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "core/util/cpu_info.h"
#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/quant_tokens.h"
#include "kernels/cpu/vec_math.h"

namespace moebench {

#define MOEBENCH_QUANT_AVX512 __attribute__((target("avx512f,avx512bw")))
#define MOEBENCH_QUANT_AVX2 __attribute__((target("avx2")))

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

MOEBENCH_QUANT_AVX2 float quantise_activations_avx2(const float* x, int64_t n, int8_t* q) {
  // max |x| over whole vectors, the rest as the scalar loop (max is exact,
  // so the order does not change it).
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 amax_v = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    amax_v = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), amax_v);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, amax_v);
  float a = 0;
  for (float l : lanes) a = std::max(a, l);
  for (int64_t k = i; k < n; ++k) a = std::max(a, std::abs(x[k]));
  const float s = a > 0 ? a / 127.0f : 1.0f;
  const __m256 sv = _mm256_set1_ps(s), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f),
               zero = _mm256_setzero_ps();
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), sv);  // IEEE, as x[i] / s
    // lround as in the AVX-512 version: v - trunc(v) is exact.
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 up = _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(v, t), abs_mask), half, _CMP_GE_OQ);
    const __m256 neg = _mm256_cmp_ps(v, zero, _CMP_LT_OQ);
    // t + 1 where up and not negative, t - 1 where up and negative.
    const __m256 step =
        _mm256_and_ps(up, _mm256_or_ps(one, _mm256_and_ps(neg, _mm256_set1_ps(-0.0f))));
    const __m256 r = _mm256_add_ps(t, step);
    const __m256i k = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvttps_epi32(r), lo), hi);
    // Eight int32 in [-127, 127] to eight bytes.
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(k), _mm256_extracti128_si256(k, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), _mm_packs_epi16(w, w));
  }
  for (; i < n; ++i) q[i] = int8_t(std::clamp(int(std::lround(x[i] / s)), -127, 127));
  return s;
}

namespace {

// Sum of 64 int8: as unsigned bytes q + 128, summed by vpsadbw into 64-bit
// lanes, less 64 x 128.
MOEBENCH_QUANT_AVX512 int64_t group_sum_avx512(const int8_t* q) {
  const __m512i u = _mm512_xor_si512(_mm512_loadu_si512(q), _mm512_set1_epi8(char(0x80)));
  return _mm512_reduce_add_epi64(_mm512_sad_epu8(u, _mm512_setzero_si512())) - 64 * 128;
}

MOEBENCH_QUANT_AVX2 int64_t group_sum_avx2(const int8_t* q) {
  const __m256i bias = _mm256_set1_epi8(char(0x80));
  const __m256i a = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)), bias);
  const __m256i b =
      _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32)), bias);
  const __m256i s = _mm256_add_epi64(_mm256_sad_epu8(a, _mm256_setzero_si256()),
                                     _mm256_sad_epu8(b, _mm256_setzero_si256()));
  const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  return _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1) - 64 * 128;
}

int64_t group_sum_scalar(const int8_t* q) {
  int64_t s = 0;
  for (int i = 0; i < 64; ++i) s += q[i];
  return s;
}

}  // namespace

void QTokens::set(const float* x, int64_t tokens, int64_t n, int offset, Isa isa) {
  groups = (n + kQuantGroup - 1) / kQuantGroup;
  const int64_t w = groups * kQuantGroup;
  q.assign(size_t(tokens * w), 0);
  start.assign(size_t(tokens * groups), 0);
  scale.assign(size_t(tokens), 1.0f);
  static_assert(kQuantGroup == 64, "one 64-byte load per group");
  if (isa == Isa::kAuto) {
    const CpuInfo& c = cpu_info();
    isa = c.avx512f && c.avx512bw ? Isa::kAvx512 : c.avx2 ? Isa::kAvx2 : Isa::kScalar;
  }
  // The code for this ISA, chosen once (all give the same values).
  float (*quantise)(const float*, int64_t, int8_t*) = quantise_activations;
  int64_t (*group_sum)(const int8_t*) = group_sum_scalar;
  if (isa == Isa::kAvx512) {
    quantise = quantise_activations_avx512;
    group_sum = group_sum_avx512;
  } else if (isa == Isa::kAvx2) {
    quantise = quantise_activations_avx2;
    group_sum = group_sum_avx2;
  }
  for (int64_t t = 0; t < tokens; ++t) {
    int8_t* qt = &q[size_t(t * w)];
    scale[size_t(t)] = quantise(x + t * n, n, qt);
    if (offset == 0) continue;  // every start value 0, as assigned above
    for (int64_t g = 0; g < groups; ++g)
      start[size_t(t * groups + g)] = int32_t(-offset * group_sum(qt + g * kQuantGroup));
  }
}

}  // namespace moebench
