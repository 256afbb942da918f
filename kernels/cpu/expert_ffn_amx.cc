// expert kernel "amx-bf16": bf16 weights packed at load (the layout
// avx512-bf16-gemm reads: blocks of 16 rows, columns in pairs, padded to
// whole 32-column blocks), multiplied on AMX tiles for many tokens per
// expert. One TDPBF16PS multiplies a tile of 16 tokens x 32 activations
// (A) by a tile of 32 columns x 16 weight rows (B: 16 column pairs of the
// 16 rows, 64 bytes each; one packed chunk of a row block, read as it is)
// into 16 x 16 fp32 sums (C). Eight tile registers hold two A, two B and
// four C tiles: gate and up of one row block (down: two row blocks) for two
// blocks of 16 tokens, so every tile load feeds two products.
//
// Loop order, for the caches: each task takes a group of row blocks and,
// for every block of 32 tokens, runs the group's row blocks over the whole
// input width, so the group's weights stay in the core's L2 across token
// blocks. (Walking the width in chunks of 256 columns, every row block of
// the group per chunk with the sums parked in memory, so that a chunk of
// activations is read from L1, was measured 1.5x slower at 512 tokens on a
// 16-core Xeon with AMX: docs/KERNELS.md.) Tokens are padded to a multiple of 16 with
// zero activations (their sums are computed and dropped): the kernel is for
// many tokens; avx512-amx-bf16 gives few-token steps to avx512-bf16-gemm.
// Each task loads the tile configuration and releases the tiles at its
// end, so pool threads that run other kernels in between lose nothing. The
// result does not depend on the thread count (whole row blocks per task).
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vec_math.h"

namespace moebench {
namespace {

#define MOEBENCH_AMX \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))

// Row blocks per task: gate/up (one row block of each per unit) and down
// (two row blocks per unit); sized so a group's weights fit a 2 MiB L2 next
// to a token block's activations at DeepSeek-V3's shape (docs/KERNELS.md).
constexpr int64_t kGateUpGroup = 2;
constexpr int64_t kDownGroup = 4;

using amx::TileScope;  // palette 1, every tile 16 rows of 64 bytes

// fp32 rows [tokens x n] to bf16 rows of `row_len` (>= n; columns n..row_len
// of each row are left as they are: the caller zeroes them).
MOEBENCH_AMX void rows_to_bf16(const float* x, int64_t tokens, int64_t n, int64_t row_len,
                               uint16_t* out) {
  for (int64_t t = 0; t < tokens; ++t) {
    const float* src = x + t * n;
    uint16_t* dst = out + t * row_len;
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k),
                          (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + k)));
    }
    if (k < n) {
      const __mmask16 m = vec::block_mask(n - k);
      _mm256_mask_storeu_epi16(dst + k, m,
                               (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + k)));
    }
  }
}

// C tiles 0/1 (token block 0) and 2/3 (token block 1) = A (tokens, bf16
// rows of a_len, from `a`) times the packed row blocks b0 and b1 over kp
// column pairs; stored to c[NB * 2][16 tokens][16 rows].
template <int NB>
MOEBENCH_AMX void tile_products(const uint16_t* a, int64_t a_len, const uint16_t* b0,
                                const uint16_t* b1, int64_t kp, float* c) {
  _tile_zero(0);
  _tile_zero(1);
  if constexpr (NB == 2) {
    _tile_zero(2);
    _tile_zero(3);
  }
  const int64_t stride = a_len * 2;  // bytes per token row
  for (int64_t k = 0; k < kp; k += 16) {
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

class AmxBf16Kernel final : public ExpertKernel {
 public:
  std::string name() const override { return "amx-bf16"; }
  bool supports(WeightDtype d) const override { return d == WeightDtype::kBf16; }
  bool needs_packed() const override { return true; }

 protected:
  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool* pool) override {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    const int64_t kp_x = packed_pairs(H), kp_h = packed_pairs(I);
    const int64_t padded = (tokens + 15) / 16 * 16;
    xb_.assign(size_t(padded * kp_x * 2), 0);
    hb_.assign(size_t(padded * kp_h * 2), 0);
    parallel_ranges(pool, tokens, 64, [&](int64_t t0, int64_t t1) {
      rows_to_bf16(x + t0 * H, t1 - t0, H, kp_x * 2, xb_.data() + t0 * kp_x * 2);
    });
    // Lambdas do not inherit target attributes: each task calls a member
    // compiled for AMX.
    parallel_ranges(pool, (I + 15) / 16, kGateUpGroup,
                    [&](int64_t b0, int64_t b1) { gate_up(e, tokens, kp_x, kp_h, b0, b1); });
    parallel_ranges(pool, ((H + 15) / 16 + 1) / 2, kDownGroup,
                    [&](int64_t p0, int64_t p1) { down(e, tokens, kp_h, w, out, p0, p1); });
  }

 private:
  // h = silu(gate x) * (up x) for the row blocks [b0, b1) and every token.
  MOEBENCH_AMX void gate_up(const ExpertWeights& e, int64_t tokens, int64_t kp_x, int64_t kp_h,
                            int64_t b0, int64_t b1) {
    const int64_t I = e.shape.inter, h_len = kp_h * 2;
    TileScope tiles;
    alignas(64) float c[4 * 256];
    for (int64_t t0 = 0; t0 < tokens; t0 += 32) {
      const int nb = tokens - t0 > 16 ? 2 : 1;
      const uint16_t* a = xb_.data() + t0 * kp_x * 2;
      for (int64_t rb = b0; rb < b1; ++rb) {
        const uint16_t* g = e.pgate.data() + rb * kp_x * 32;
        const uint16_t* u = e.pup.data() + rb * kp_x * 32;
        if (nb == 2) {
          tile_products<2>(a, kp_x * 2, g, u, kp_x, c);
        } else {
          tile_products<1>(a, kp_x * 2, g, u, kp_x, c);
        }
        const int64_t r0 = rb * 16;
        const __mmask16 m = vec::block_mask(I - r0);
        for (int blk = 0; blk < nb; ++blk) {
          const float* cg = c + blk * 512;
          const float* cu = cg + 256;
          for (int64_t i = 0; i < 16 && t0 + blk * 16 + i < tokens; ++i) {
            const __m512 h =
                vec::silu_mul16(_mm512_load_ps(cg + i * 16), _mm512_load_ps(cu + i * 16));
            _mm256_mask_storeu_epi16(hb_.data() + (t0 + blk * 16 + i) * h_len + r0, m,
                                     (__m256i)_mm512_cvtneps_pbh(h));
          }
        }
      }
    }
  }

  // out += w * (down h) for the row blocks 2 p0 .. 2 p1 (pairs [p0, p1)).
  MOEBENCH_AMX void down(const ExpertWeights& e, int64_t tokens, int64_t kp_h, const float* w,
                         float* out, int64_t p0, int64_t p1) {
    const int64_t H = e.shape.hidden, blocks = (H + 15) / 16;
    TileScope tiles;
    alignas(64) float c[4 * 256];
    for (int64_t t0 = 0; t0 < tokens; t0 += 32) {
      const int nb = tokens - t0 > 16 ? 2 : 1;
      const uint16_t* a = hb_.data() + t0 * kp_h * 2;
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t rb = 2 * p;
        const bool two = rb + 1 < blocks;  // else the second product repeats the first
        const uint16_t* d0 = e.pdown.data() + rb * kp_h * 32;
        const uint16_t* d1 = two ? d0 + kp_h * 32 : d0;
        if (nb == 2) {
          tile_products<2>(a, kp_h * 2, d0, d1, kp_h, c);
        } else {
          tile_products<1>(a, kp_h * 2, d0, d1, kp_h, c);
        }
        for (int blk = 0; blk < nb; ++blk) {
          for (int j = 0; j < (two ? 2 : 1); ++j) {
            const int64_t c0 = (rb + j) * 16;
            const __mmask16 m = vec::block_mask(H - c0);
            const float* cc = c + (blk * 2 + j) * 256;
            for (int64_t i = 0; i < 16 && t0 + blk * 16 + i < tokens; ++i) {
              const int64_t t = t0 + blk * 16 + i;
              vec::add_scaled16(out + t * H + c0, m, w[t], _mm512_load_ps(cc + i * 16));
            }
          }
        }
      }
    }
  }

  std::vector<uint16_t> xb_, hb_;  // bf16 activations, tokens padded to 16
};

}  // namespace

std::unique_ptr<ExpertKernel> make_amx_bf16_kernel() {
  return std::make_unique<AmxBf16Kernel>();
}

}  // namespace moebench
