// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
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
#define MOEBENCH_SHUFFLE_LO(a, b) \
  __builtin_shufflevector(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23)
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

MOEBENCH_CLONES void unpack_at(const float* src, int64_t n, int valid, float* const* dst,
                               int64_t offset) {
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

void unpack(const float* src, int64_t n, int valid, float* const* dst) {
  unpack_at(src, n, valid, dst, 0);
}

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

MOEBENCH_CLONES float dot(const float* a, const float* b, int64_t n) {
  return dot_impl(a, b, n);
}

namespace {

// R rows of W times Q inputs (R x Q = 16 dot products) from row r0: the 16
// accumulators are independent, so their additions overlap (one dot product
// alone waits on its single chain), and each row of W is loaded once for the
// Q inputs. Every product keeps dot_impl's order: lane i sums elements i,
// i + 16, ... in order; the tree lanes[j] += lanes[j + w] (w = 8, 4, 2, 1) is
// done on the transposed accumulators (acc[b] = lane b of all 16 products);
// the remainder n % 16 last, in order; the bias added to the sum.
template <int R, int Q>
__attribute__((always_inline)) inline void tile(const float* W, const float* bias,
                                                const float* const* x, int64_t r0, int64_t rows,
                                                int64_t n, float* out_j0) {
  static_assert(R * Q == 16);
  const int64_t n16 = n / 16 * 16;
  const float* w = W + r0 * n;
  v16 acc[16] = {};  // product (row r, input q) in acc[q * R + r]
  for (int64_t i = 0; i < n16; i += 16) {
    v16 xv[Q];
    for (int q = 0; q < Q; ++q) xv[q] = load16(x[q] + i);
    for (int r = 0; r < R; ++r) {
      const v16 wv = load16(w + r * n + i);
      for (int q = 0; q < Q; ++q) acc[q * R + r] += wv * xv[q];
    }
  }
  transpose16(acc);
  for (int wdt = 8; wdt >= 1; wdt >>= 1) {
    for (int j = 0; j < wdt; ++j) acc[j] += acc[j + wdt];
  }
  float s[16];
  std::memcpy(s, &acc[0], 64);
  for (int q = 0; q < Q; ++q) {
    for (int r = 0; r < R; ++r) {
      float t = s[q * R + r];
      for (int64_t i = n16; i < n; ++i) t += w[r * n + i] * x[q][i];
      out_j0[q * rows + r0 + r] = (bias ? bias[r0 + r] : 0.0f) + t;
    }
  }
}

// Inputs x[0..Q) against every row; rows past the last whole tile one dot at a time.
template <int R, int Q>
__attribute__((always_inline)) inline void rows_of(const float* W, const float* bias,
                                                   const float* const* x, int64_t rows, int64_t n,
                                                   float* out_j0) {
  int64_t r0 = 0;
  for (; r0 + R <= rows; r0 += R) tile<R, Q>(W, bias, x, r0, rows, n, out_j0);
  for (int q = 0; q < Q; ++q) {
    for (int64_t r = r0; r < rows; ++r) {
      out_j0[q * rows + r] = (bias ? bias[r] : 0.0f) + dot_impl(W + r * n, x[q], n);
    }
  }
}

}  // namespace

MOEBENCH_CLONES void gemv(const float* W, const float* bias, const float* x, int64_t rows,
                          int64_t n, float* out) {
  rows_of<16, 1>(W, bias, &x, rows, n, out);
}

MOEBENCH_CLONES void gemv_batch(const float* W, const float* bias, const float* const* xs,
                                int64_t nx, int64_t rows, int64_t n, float* out) {
  // Four inputs at a time (4 rows x 4 inputs per tile), then two, then one:
  // no tile computes an input that is not asked for.
  int64_t j0 = 0;
  for (; j0 + 4 <= nx; j0 += 4) rows_of<4, 4>(W, bias, xs + j0, rows, n, out + j0 * rows);
  for (; j0 + 2 <= nx; j0 += 2) rows_of<8, 2>(W, bias, xs + j0, rows, n, out + j0 * rows);
  for (; j0 < nx; ++j0) rows_of<16, 1>(W, bias, xs + j0, rows, n, out + j0 * rows);
}

}  // namespace moebench::lanes
