// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers shared by the packed expert kernels: vector math (AVX-512,
// compiled with target attributes; callers need avx512f) and their loop
// over row blocks and token tiles.
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/thread_pool.h"

namespace moebench::vec {

// e^x = 2^n e^f with x = n ln2 + f, |f| <= ln2 / 2, e^f by the degree-6
// Taylor polynomial, highest coefficient first (Horner). Shared by exp16
// here and avx2-gemm's exp8, which differ only in vector width and in how
// they scale by 2^n.
inline constexpr float kLog2e = 1.44269504f, kLn2 = 0.693147181f;
inline constexpr float kExpPoly[7] = {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6,
                                      0.5f,       1.0f,       1.0f};

// e^x for 16 lanes, scaled by 2^n with vscalefps; inputs clamped to +-88.
// The zero-masked forms with every lane selected compile to the same
// unmasked instructions; the plain _mm512_max_ps, _mm512_roundscale_ps and
// _mm512_scalef_ps of GCC 12 pass _mm512_undefined_ps() as the (unused)
// merge source, which -Wuninitialized reported ~190 times once inlined.
__attribute__((target("avx512f"))) inline __m512 exp16(__m512 x) {
  constexpr __mmask16 kAll = 0xffff;
  x = _mm512_maskz_max_ps(kAll, _mm512_maskz_min_ps(kAll, x, _mm512_set1_ps(88.0f)),
                          _mm512_set1_ps(-88.0f));
  const __m512 n = _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2), x);
  __m512 p = _mm512_set1_ps(kExpPoly[0]);
  for (int i = 1; i < 7; ++i) p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExpPoly[i]));
  return _mm512_maskz_scalef_ps(kAll, p, n);
}

// int32 -> fp32 for 16 lanes (vcvtdq2ps), zero-masked with every lane
// selected for the same reason as in exp16: the plain _mm512_cvtepi32_ps
// passes an undefined merge source that -Wmaybe-uninitialized reports.
__attribute__((target("avx512f"))) inline __m512 to_ps16(__m512i x) {
  return _mm512_maskz_cvtepi32_ps(__mmask16(0xffff), x);
}

// silu(g) * u for 16 lanes.
__attribute__((target("avx512f"))) inline __m512 silu_mul16(__m512 g, __m512 u) {
  const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
  return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), u);
}

// The lanes of a 16-row block that exist when `left` rows remain from its
// first (all 16 from 16 on).
inline __mmask16 block_mask(int64_t left) {
  return __mmask16((1u << (left < 16 ? left : 16)) - 1);
}

// o[lane] += s * v[lane] for the lanes of m (one fused multiply-add; the
// other lanes of o are neither read nor written): how every packed kernel
// accumulates a block of its down projection into the layer output.
__attribute__((target("avx512f"))) inline void add_scaled16(float* o, __mmask16 m, float s,
                                                            __m512 v) {
  _mm512_mask_storeu_ps(o, m, _mm512_fmadd_ps(_mm512_set1_ps(s), v, _mm512_maskz_loadu_ps(m, o)));
}

// fp32 rows [tokens x n] to bf16 rows of `len` (>= n; columns n..len of
// each row are left as they are: the caller zeroes them), 16 values per
// vcvtneps2bf16: round to nearest even as to_bf16 (expert_ffn.h), except
// that the instruction reads denormal inputs as zero. The tile kernels'
// and avx512-bf16-gemm's activations.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) inline void rows_to_bf16(
    const float* x, int64_t tokens, int64_t n, int64_t len, uint16_t* out) {
  for (int64_t t = 0; t < tokens; ++t) {
    const float* src = x + t * n;
    uint16_t* dst = out + t * len;
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k),
                          (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + k)));
    }
    if (k < n) {
      const __mmask16 m = block_mask(n - k);
      _mm256_mask_storeu_epi16(dst + k, m,
                               (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + k)));
    }
  }
}

// Calls f.template operator()<NT>() with NT = n, 1 <= n <= Max.
template <int Max, int N = 1, class F>
void with_tile(int64_t n, F&& f) {
  if constexpr (N == Max) {
    f.template operator()<N>();
  } else if (n == N) {
    f.template operator()<N>();
  } else {
    with_tile<Max, N + 1>(n, f);
  }
}

// The loop both packed kernels run: row blocks [0, blocks), whole blocks
// per thread from the pool's queue, and in each block the tokens in tiles
// of at most Tile: f.template operator()<NT>(block, t0) for the tile of NT
// tokens starting at t0.
template <int Tile, class F>
void for_block_tiles(ThreadPool* pool, int64_t blocks, int64_t tokens, F&& f) {
  parallel_ranges(pool, blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t t0 = 0; t0 < tokens; t0 += Tile) {
        with_tile<Tile>(tokens - t0 < Tile ? tokens - t0 : Tile,
                        [&]<int NT>() { f.template operator()<NT>(b, t0); });
      }
    }
  });
}

}  // namespace moebench::vec
