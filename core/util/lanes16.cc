// Compiled in the routing libraries (-O3, per-ISA clones; see core/CMakeLists.txt).

#include "core/util/lanes16.h"

#include "core/util/detmath.h"

namespace moebench::lanes {

namespace {

// rows[0..16) (row i = value i of 16 lanes) become rows[b] = lane b's 16
// values. Four rounds of interleaving rows i and i + 8 (a perfect shuffle)
// transpose a 16 x 16 tile.
__attribute__((always_inline)) inline void transpose16(v16* rows) {
#if defined(__clang__)  // clang's form of the same two shuffles (the sanitizer and fuzz builds)
#define MOEBENCH_SHUFFLE_LO(a, b) __builtin_shufflevector(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23)
#define MOEBENCH_SHUFFLE_HI(a, b) \
  __builtin_shufflevector(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)
#else
  const i16v lo = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23};
  const i16v hi = {8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
#define MOEBENCH_SHUFFLE_LO(a, b) __builtin_shuffle(a, b, lo)
#define MOEBENCH_SHUFFLE_HI(a, b) __builtin_shuffle(a, b, hi)
#endif
  for (int round = 0; round < 4; ++round) {
    v16 next[16];
    for (int i = 0; i < 8; ++i) {
      next[2 * i] = MOEBENCH_SHUFFLE_LO(rows[i], rows[i + 8]);
      next[2 * i + 1] = MOEBENCH_SHUFFLE_HI(rows[i], rows[i + 8]);
    }
    for (int i = 0; i < 16; ++i) rows[i] = next[i];
  }
#undef MOEBENCH_SHUFFLE_LO
#undef MOEBENCH_SHUFFLE_HI
}

}  // namespace

MOEBENCH_CLONES void unpack_at(const float* src, int64_t n, int valid, float* const* dst, int64_t offset) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    v16 rows[16];
    for (int q = 0; q < 16; ++q) rows[q] = load16(src + (i + q) * 16);
    transpose16(rows);
    for (int b = 0; b < valid; ++b) store16(dst[b] + offset + i, rows[b]);
  }
  for (; i < n; ++i) {
    for (int b = 0; b < valid; ++b) dst[b][offset + i] = src[i * 16 + b];
  }
}

void unpack(const float* src, int64_t n, int valid, float* const* dst) { unpack_at(src, n, valid, dst, 0); }

namespace {
__attribute__((always_inline)) inline float dot_impl(const float* a, const float* b, int64_t n) {
  v16 acc = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) acc += load16(a + i) * load16(b + i);
  float lanes[16];
  std::memcpy(lanes, &acc, 64);
  for (int w = 8; w >= 1; w >>= 1) {
    for (int j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  }
  float s = lanes[0];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}
}  // namespace

MOEBENCH_CLONES float dot(const float* a, const float* b, int64_t n) { return dot_impl(a, b, n); }

MOEBENCH_CLONES void gemv(const float* W, const float* bias, const float* x, int64_t rows, int64_t n, float* out) {
  for (int64_t r = 0; r < rows; ++r) out[r] = (bias ? bias[r] : 0.0f) + dot_impl(W + r * n, x, n);
}

MOEBENCH_CLONES void gemv_batch(const float* W, const float* bias, const float* const* xs, int64_t nx, int64_t rows,
                                int64_t n, float* out) {
  const int64_t n16 = n / 16 * 16;
  for (int64_t j0 = 0; j0 < nx; j0 += 16) {
    const int valid = int(nx - j0 < 16 ? nx - j0 : 16);
    const float* x[16];
    for (int q = 0; q < 16; ++q) x[q] = xs[j0 + (q < valid ? q : 0)];
    for (int64_t r = 0; r < rows; ++r) {
      const float* w = W + r * n;
      // Input q's 16 partial sums in acc[q], as dot_impl's acc.
      v16 acc[16] = {};
      for (int64_t i = 0; i < n16; i += 16) {
        const v16 wv = load16(w + i);
        for (int q = 0; q < 16; ++q) acc[q] += wv * load16(x[q] + i);
      }
      // acc[b] becomes lane b of every input; dot_impl's tree (lanes[j] +=
      // lanes[j + w], w = 8, 4, 2, 1) on those vectors leaves each input's sum in acc[0].
      transpose16(acc);
      for (int wdt = 8; wdt >= 1; wdt >>= 1) {
        for (int j = 0; j < wdt; ++j) acc[j] += acc[j + wdt];
      }
      float s[16];
      std::memcpy(s, &acc[0], 64);
      for (int q = 0; q < valid; ++q) {
        float t = s[q];
        for (int64_t i = n16; i < n; ++i) t += w[i] * x[q][i];
        out[(j0 + q) * rows + r] = (bias ? bias[r] : 0.0f) + t;
      }
    }
  }
}

}  // namespace moebench::lanes
