// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Quantised packed weights back to packed bf16 (dequant.h).
//
// A quad of the packed codes is 16 rows x 4 columns, [row][column]; its
// columns 0-1 are one column pair of the bf16 layout and 2-3 the next. So
// the 64 codes become 64 fp32 values in four vectors of 16 (rows 4j ..
// 4j + 3, each row's 4 columns), each code c times the row's scale s minus
// the offset's share: fma(c, s, -offset s) rounds once, as
// float(c - offset) * s does; two conversions to bf16 give rows 0-7 and
// 8-15 with each row's two pairs side by side, and two two-source permutes
// take the even 32-bit words (columns 0-1 of every row) and the odd ones
// (columns 2-3).
#include "kernels/cpu/dequant.h"

#include <immintrin.h>

namespace moebench {
namespace {

#define MOEBENCH_DQ __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

struct GroupScales {
  __m512 s[4], n[4];  // vector j: rows 4j .. 4j + 3, each 4 times; n = -offset s
};

MOEBENCH_DQ inline GroupScales group_scales(const float* scale16, int offset) {
  GroupScales g;
  const __m512 sc = _mm512_loadu_ps(scale16);
  const __m512 off = _mm512_set1_ps(-float(offset));
  for (int j = 0; j < 4; ++j) {
    // lane l: row 4j + l / 4
    const __m512i idx = _mm512_add_epi32(
        _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                          2),
        _mm512_set1_epi32(4 * j));
    g.s[j] = _mm512_permutexvar_ps(idx, sc);
    g.n[j] = _mm512_mul_ps(g.s[j], off);
  }
  return g;
}

// Codes (16 bytes, rows 4j .. 4j + 3) to their 16 values.
MOEBENCH_DQ inline __m512 values16(__m128i codes, const GroupScales& g, int j) {
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(codes)), g.s[j], g.n[j]);
}

// One quad's 64 codes (a register) to its two column pairs at dst.
MOEBENCH_DQ inline void quad_to_pairs(__m512i codes, const GroupScales& g, uint16_t* dst) {
  const __m512 f0 = values16(_mm512_castsi512_si128(codes), g, 0);
  const __m512 f1 = values16(_mm512_extracti32x4_epi32(codes, 1), g, 1);
  const __m512 f2 = values16(_mm512_extracti32x4_epi32(codes, 2), g, 2);
  const __m512 f3 = values16(_mm512_extracti32x4_epi32(codes, 3), g, 3);
  const __m512i lo = (__m512i)_mm512_cvtne2ps_pbh(f1, f0);  // rows 0-7
  const __m512i hi = (__m512i)_mm512_cvtne2ps_pbh(f3, f2);  // rows 8-15
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  _mm512_storeu_si512(dst, _mm512_permutex2var_epi32(lo, even, hi));
  _mm512_storeu_si512(dst + 32, _mm512_permutex2var_epi32(lo, odd, hi));
}

}  // namespace

MOEBENCH_DQ void dequantise_row_blocks(const QuantMatrix& m, int64_t rb0, int64_t rb1,
                                       uint16_t* out) {
  const bool int4 = m.dtype == WeightDtype::kInt4;
  const int64_t pairs = dequant_pairs(m);
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  for (int64_t rb = rb0; rb < rb1; ++rb) {
    uint16_t* block = out + (rb - rb0) * pairs * 32;
    for (int64_t g = 0; g < m.groups; ++g) {
      const int64_t unit = rb * m.groups + g;  // [row block][group]
      const GroupScales sc = group_scales(m.pscale.data() + unit * 16, int4 ? 8 : 128);
      uint16_t* dst = block + g * (kQuantGroup / 2) * 32;  // the group's first pair
      if (!int4) {
        const uint8_t* src = m.pcodes.data() + unit * 1024;
        for (int q = 0; q < 16; ++q) {
          quad_to_pairs(_mm512_loadu_si512(src + q * 64), sc, dst + q * 64);
        }
      } else {
        // Quads 2p and 2p + 1 share 64 bytes: low and high nibbles.
        const uint8_t* src = m.pcodes.data() + unit * 512;
        for (int p = 0; p < 8; ++p) {
          const __m512i v = _mm512_loadu_si512(src + p * 64);
          quad_to_pairs(_mm512_and_si512(v, nibble), sc, dst + 2 * p * 64);
          quad_to_pairs(_mm512_and_si512(_mm512_srli_epi16(v, 4), nibble), sc,
                        dst + (2 * p + 1) * 64);
        }
      }
    }
  }
}

}  // namespace moebench
