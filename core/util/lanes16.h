// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Sixteen-lane float vectors (GCC vector extensions), shared by the hot
// loops of trace generation and routing. Blocks of 16 tokens are processed
// together with the token in the lane: an array [N][16] holds N values of
// each of 16 tokens. The extensions are lowered to AVX-512, AVX2 or SSE per
// MOEBENCH_CLONES clone; every operation is elementwise, so the clones give
// the same bits.

#include <cstdint>
#include <cstring>

// Passing a 64-byte vector by value has a different ABI with and without
// AVX-512; these helpers are always inlined (no call, so no ABI), and GCC's
// -Wpsabi note about it is silenced here, where they are defined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace moebench::lanes {

typedef float v16 __attribute__((vector_size(64), aligned(4)));
typedef int32_t i16v __attribute__((vector_size(64), aligned(4)));
typedef uint32_t u16v __attribute__((vector_size(64), aligned(4)));

__attribute__((always_inline)) inline v16 load16(const float* p) {
  v16 v;
  std::memcpy(&v, p, 64);
  return v;
}
__attribute__((always_inline)) inline void store16(float* p, v16 v) {
  std::memcpy(p, &v, 64);
}

// Writes the lanes of src ([n][16]) out per token: dst[b][i] = src[i * 16 + b]
// for i < n and b < valid. Transposes 16 x 16 tiles in registers.
void unpack(const float* src, int64_t n, int valid, float* const* dst);

// As unpack, with dst[b] offset by `offset` floats.
void unpack_at(const float* src, int64_t n, int valid, float* const* dst, int64_t offset);

// Dense helpers with a fixed summation order (16 partial sums, lane i
// summing elements i, i+16, ...; the lanes in a fixed tree; the remainder
// n % 16 last, in order), so every machine and clone computes the same bits.
float dot(const float* a, const float* b, int64_t n);
// out[r] = bias[r] + W[r] . x for r < rows (W row-major rows x n; bias may be nullptr).
void gemv(const float* W, const float* bias, const float* x, int64_t rows, int64_t n, float* out);
// gemv for nx inputs at once: out[j * rows + r] = bias[r] + W[r] . xs[j], the
// same bits as gemv on each (the same partial sums, tree and remainder): a
// row of W is read once per 4 inputs, and 16 products are reduced together.
void gemv_batch(const float* W, const float* bias, const float* const* xs, int64_t nx, int64_t rows,
                int64_t n, float* out);

}  // namespace moebench::lanes

#pragma GCC diagnostic pop
