#pragma once
// Helpers shared by the packed expert kernels: vector math (AVX-512,
// compiled with target attributes; callers need avx512f) and the dispatch
// of a token tile's size to a template argument.
#include <immintrin.h>

#include <cstdint>

namespace moebench::vec {

// e^x for 16 lanes: x = n ln2 + f, e^f by a degree-6 polynomial on
// |f| <= ln2 / 2, scaled by 2^n (vscalefps); inputs clamped to +-88.
__attribute__((target("avx512f"))) inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.0f)), _mm512_set1_ps(-88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693147181f), x);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// silu(g) * u for 16 lanes.
__attribute__((target("avx512f"))) inline __m512 silu_mul16(__m512 g, __m512 u) {
  const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
  return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), u);
}

// Calls f.template operator()<NT>() with NT = n (1 <= n <= 12; larger n: 12).
template <class F>
void with_tile(int64_t n, F&& f) {
  switch (n) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    case 4:
      return f.template operator()<4>();
    case 5:
      return f.template operator()<5>();
    case 6:
      return f.template operator()<6>();
    case 7:
      return f.template operator()<7>();
    case 8:
      return f.template operator()<8>();
    case 9:
      return f.template operator()<9>();
    case 10:
      return f.template operator()<10>();
    case 11:
      return f.template operator()<11>();
    default:
      return f.template operator()<12>();
  }
}

}  // namespace moebench::vec
