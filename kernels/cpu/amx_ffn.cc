// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// An expert's FFN on AMX bf16 tiles (amx_ffn.h).
#include "kernels/cpu/amx_ffn.h"

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vec_math.h"

namespace moebench::amx {
namespace {

#define MOEBENCH_AMX \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))

// bf16 values per activation row for kp column pairs (see amx_ffn.h).
int64_t row_len(int64_t kp) {
  return kp * 2 + 32;
}

// Column pairs per chunk of the width (512 columns: a block of 32 tokens'
// activations over it is 32 KiB, read from L1 by every unit of the task
// while the chunk lasts; the C tiles are parked in memory between chunks).
// Against one pass over the whole width, on a 16-core Xeon with AMX: faster
// in 24 of 32 paired comparisons (4 rounds, 8 shapes), bf16 at 1024 tokens
// 1.13-1.50x in every round, the other shapes' medians 0.95-1.15x, within
// that machine's run-to-run spread (docs/measurements/amx-chunk-ab).
constexpr int64_t kChunkPairs = 256;

// C tiles 0/1 (token block 0) and 2/3 (token block 1) = A (tokens, bf16
// rows of a_len, from `a`) times the packed row blocks b0 and b1 over the
// column pairs [k0, k1), added to c[NB * 2][16 tokens][16 rows] when
// `resume` (else from zero), stored back to c.
template <int NB>
MOEBENCH_AMX void tile_products(const uint16_t* a, int64_t a_len, const uint16_t* b0,
                                const uint16_t* b1, int64_t k0, int64_t k1, bool resume, float* c) {
  if (resume) {
    _tile_loadd(0, c, 64);
    _tile_loadd(1, c + 256, 64);
    if constexpr (NB == 2) {
      _tile_loadd(2, c + 512, 64);
      _tile_loadd(3, c + 768, 64);
    }
  } else {
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (NB == 2) {
      _tile_zero(2);
      _tile_zero(3);
    }
  }
  const int64_t stride = a_len * 2;  // bytes per token row
  for (int64_t k = k0; k < k1; k += 16) {
    _tile_loadd(6, b0 + k * 32, 64);
    _tile_loadd(7, b1 + k * 32, 64);
    _tile_loadd(4, a + k * 2, stride);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if constexpr (NB == 2) {
      _tile_loadd(5, a + 16 * a_len + k * 2, stride);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, c, 64);
  _tile_stored(1, c + 256, 64);
  if constexpr (NB == 2) {
    _tile_stored(2, c + 512, 64);
    _tile_stored(3, c + 768, 64);
  }
}

// For the token block from t0 (one or two blocks of 16 tokens), each unit
// u < units of a task (gate/up: a row block's gate and up; down: two row
// blocks) over the whole width, chunk by chunk, its sums left in
// c + u * 1024; then done(u, nb) for each unit. b(u) gives the unit's two
// packed row blocks.
template <class B, class Done>
MOEBENCH_AMX void token_block(int64_t tokens, int64_t t0, const uint16_t* a, int64_t kp,
                              int64_t units, B&& b, float* c, Done&& done) {
  const int nb = tokens - t0 > 16 ? 2 : 1;
  for (int64_t k0 = 0; k0 < kp; k0 += kChunkPairs) {
    const int64_t k1 = std::min(kp, k0 + kChunkPairs);
    for (int64_t u = 0; u < units; ++u) {
      const auto [b0, b1] = b(u);
      if (nb == 2) {
        tile_products<2>(a, row_len(kp), b0, b1, k0, k1, k0 > 0, c + u * 1024);
      } else {
        tile_products<1>(a, row_len(kp), b0, b1, k0, k1, k0 > 0, c + u * 1024);
      }
    }
  }
  for (int64_t u = 0; u < units; ++u) done(u, nb);
}

// h = bf16(silu(gate x) * (up x)) for the rows of the row blocks [rb0, rb1).
MOEBENCH_AMX void gate_up_task(const FfnShape& s, const uint16_t* xb, int64_t tokens,
                               const uint16_t* gate, const uint16_t* up, int64_t rb0, int64_t rb1,
                               uint16_t* hb) {
  const int64_t h_len = row_len(s.kp_h);
  TileScope tiles;
  alignas(64) float c[kGateUpGroup * 1024];
  for (int64_t t0 = 0; t0 < tokens; t0 += 32) {
    token_block(
        tokens, t0, xb + t0 * row_len(s.kp_x), s.kp_x, rb1 - rb0,
        [&](int64_t u) {
          return std::pair{gate + u * s.kp_x * 32, up + u * s.kp_x * 32};
        },
        c,
        [&](int64_t u, int nb) MOEBENCH_AMX {
          const int64_t r0 = (rb0 + u) * 16;
          const __mmask16 m = vec::block_mask(s.inter - r0);
          for (int blk = 0; blk < nb; ++blk) {
            const float* cg = c + u * 1024 + blk * 512;
            const float* cu = cg + 256;
            for (int64_t i = 0; i < 16 && t0 + blk * 16 + i < tokens; ++i) {
              const __m512 h =
                  vec::silu_mul16(_mm512_load_ps(cg + i * 16), _mm512_load_ps(cu + i * 16));
              _mm256_mask_storeu_epi16(hb + (t0 + blk * 16 + i) * h_len + r0, m,
                                       (__m256i)_mm512_cvtneps_pbh(h));
            }
          }
        });
  }
}

// out += w * (down h) for the rows of the row blocks [rb0, rb1), two at a time.
MOEBENCH_AMX void down_task(const FfnShape& s, const uint16_t* hb, int64_t tokens,
                            const uint16_t* down, int64_t rb0, int64_t rb1, const float* w,
                            float* out) {
  TileScope tiles;
  alignas(64) float c[kDownGroup * 1024];
  const int64_t units = (rb1 - rb0 + 1) / 2;
  for (int64_t t0 = 0; t0 < tokens; t0 += 32) {
    token_block(
        tokens, t0, hb + t0 * row_len(s.kp_h), s.kp_h, units,
        [&](int64_t u) {
          const uint16_t* d0 = down + 2 * u * s.kp_h * 32;
          // A lone last row block: the second product repeats the first.
          return std::pair{d0, rb0 + 2 * u + 1 < rb1 ? d0 + s.kp_h * 32 : d0};
        },
        c,
        [&](int64_t u, int nb) MOEBENCH_AMX {
          const int64_t rb = rb0 + 2 * u;
          for (int blk = 0; blk < nb; ++blk) {
            for (int j = 0; j < (rb + 1 < rb1 ? 2 : 1); ++j) {
              const int64_t c0 = (rb + j) * 16;
              const __mmask16 m = vec::block_mask(s.hidden - c0);
              const float* cc = c + u * 1024 + (blk * 2 + j) * 256;
              for (int64_t i = 0; i < 16 && t0 + blk * 16 + i < tokens; ++i) {
                const int64_t t = t0 + blk * 16 + i;
                vec::add_scaled16(out + t * s.hidden + c0, m, w[t], _mm512_load_ps(cc + i * 16));
              }
            }
          }
        });
  }
}

}  // namespace

void ffn_tiles(const FfnShape& s, const FfnWeights& weights, const float* x, int64_t tokens,
               const float* w, float* out, ThreadPool* pool, std::vector<uint16_t>& scratch) {
  const int64_t padded = (tokens + 15) / 16 * 16;
  const int64_t x_len = row_len(s.kp_x), h_len = row_len(s.kp_h);
  scratch.assign(size_t(padded * (x_len + h_len)), 0);
  uint16_t* xb = scratch.data();
  uint16_t* hb = xb + padded * x_len;
  parallel_ranges(pool, tokens, 64, [&](int64_t t0, int64_t t1) {
    vec::rows_to_bf16(x + t0 * s.hidden, t1 - t0, s.hidden, x_len, xb + t0 * x_len);
  });
  // Lambdas do not inherit target attributes: each task calls a function
  // compiled for AMX.
  parallel_ranges(pool, (s.inter + 15) / 16, kGateUpGroup, [&](int64_t b0, int64_t b1) {
    const auto [g, u] = weights.gate_up(b0, b1);
    gate_up_task(s, xb, tokens, g, u, b0, b1, hb);
  });
  const int64_t blocks = (s.hidden + 15) / 16;
  parallel_ranges(pool, (blocks + 1) / 2, kDownGroup, [&](int64_t p0, int64_t p1) {
    const int64_t r0 = 2 * p0, r1 = std::min(2 * p1, blocks);
    down_task(s, hb, tokens, weights.down(r0, r1), r0, r1, w, out);
  });
}

}  // namespace moebench::amx
