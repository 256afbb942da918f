// expert kernel "amx-int8": int8 weights packed at load (QuantMatrix::pack,
// the layout avx512-vnni-gemm reads), multiplied on AMX tiles for many
// tokens per expert. A group of 64 columns of a 16-row block is 16 quads
// of 64 bytes (quad q: the 16 rows' codes q*4 .. q*4+3): exactly one AMX B
// tile for TDPBSUD, loaded in place. Activations are quantised to int8 per
// token as in avx512-vnni-gemm (signed, the A operand), the codes are the
// unsigned B operand, so one TDPBSUD gives 16 tokens x 16 rows of int32
// sums over one group; since every group has its own scales, the sums are
// stored after each group, the codes' offset removed (-128 x the group's
// activation sum, per token), converted and multiplied by the 16 rows'
// scales into fp32 accumulators. Tiles: two A (two blocks of 16 tokens),
// two B (gate and up of one row block; down: two row blocks), four C.
// The per-group vector work, not the tile products, bounds this kernel.
// Tokens are padded to a multiple of 16 (zero activations); each task
// loads the tile configuration and releases it; whole row blocks per task,
// so the result does not depend on the thread count. int4 weights are not
// supported (their nibbles would need unpacking before a tile load).
#include <immintrin.h>

#include <vector>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/quant_tokens.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vec_math.h"

namespace moebench {
namespace {

#define MOEBENCH_AMX8 __attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-int8")))

constexpr int64_t kGateUpGroup = 2;  // row blocks per task
constexpr int64_t kDownGroup = 4;    // pairs of row blocks per task
constexpr int kOffset = 128;         // int8 codes are value + 128

using amx::TileScope;

// One group: C tiles 0/1 (token block 0) and 2/3 (token block 1) = A
// (int8 rows of `stride` bytes) times the B tiles b0 and b1, stored to
// c[NB * 2][16][16].
template <int NB>
MOEBENCH_AMX8 void group_products(const int8_t* a, int64_t stride, const uint8_t* b0,
                                  const uint8_t* b1, int32_t* c) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_loadd(6, b0, 64);
  _tile_loadd(7, b1, 64);
  _tile_loadd(4, a, stride);
  _tile_dpbsud(0, 4, 6);
  _tile_dpbsud(1, 4, 7);
  _tile_stored(0, c, 64);
  _tile_stored(1, c + 256, 64);
  if constexpr (NB == 2) {
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(5, a + 16 * stride, stride);
    _tile_dpbsud(2, 5, 6);
    _tile_dpbsud(3, 5, 7);
    _tile_stored(2, c + 512, 64);
    _tile_stored(3, c + 768, 64);
  }
}

// acc[blk * 2 + j][i] += float(c + start of token t0 + 16 blk + i) * scale_j
// for the NB token blocks and the two B tiles of one group.
template <int NB>
MOEBENCH_AMX8 void scale_accumulate(const int32_t* c, const QTokens& x, int64_t t0, int64_t g,
                                    __m512 s0, __m512 s1, float* acc) {
  for (int blk = 0; blk < NB; ++blk) {
    for (int i = 0; i < 16; ++i) {
      const int64_t t = t0 + blk * 16 + i;
      const __m512i st = _mm512_set1_epi32(x.start[size_t(t * x.groups + g)]);
      for (int j = 0; j < 2; ++j) {
        const int64_t o = (blk * 2 + j) * 256 + i * 16;
        const __m512 v = _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_load_si512(c + o), st));
        _mm512_store_ps(acc + o, _mm512_fmadd_ps(v, j ? s1 : s0, _mm512_load_ps(acc + o)));
      }
    }
  }
}

class AmxInt8Kernel final : public ExpertKernel {
 public:
  std::string name() const override { return "amx-int8"; }
  bool supports(WeightDtype d) const override { return d == WeightDtype::kInt8; }
  bool needs_packed() const override { return true; }

 protected:
  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool* pool) override {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    xq_.set(x, tokens, H, kOffset, 16);
    h_.assign(size_t(tokens * I), 0.0f);
    // Lambdas do not inherit target attributes: each task calls a member.
    parallel_ranges(pool, (I + 15) / 16, kGateUpGroup,
                    [&](int64_t b0, int64_t b1) { gate_up(e, tokens, b0, b1); });
    hq_.set(h_.data(), tokens, I, kOffset, 16);
    parallel_ranges(pool, ((H + 15) / 16 + 1) / 2, kDownGroup,
                    [&](int64_t p0, int64_t p1) { down(e, tokens, w, out, p0, p1); });
  }

 private:
  // h = silu(gate x) * (up x), fp32, for the row blocks [b0, b1).
  MOEBENCH_AMX8 void gate_up(const ExpertWeights& e, int64_t tokens, int64_t b0, int64_t b1) {
    const QuantMatrix &G = e.qgate, &U = e.qup;
    const int64_t I = e.shape.inter, ng = G.groups, stride = ng * kQuantGroup;
    TileScope tiles;
    alignas(64) int32_t c[4 * 256];
    alignas(64) float acc[4 * 256];
    for (int64_t t0 = 0; t0 < tokens; t0 += 32) {
      const int nb = tokens - t0 > 16 ? 2 : 1;
      for (int64_t rb = b0; rb < b1; ++rb) {
        for (float& v : acc) v = 0.0f;
        for (int64_t g = 0; g < ng; ++g) {
          const int8_t* a = xq_.q.data() + t0 * stride + g * kQuantGroup;
          const uint8_t* bg = G.pcodes.data() + (rb * ng + g) * 1024;
          const uint8_t* bu = U.pcodes.data() + (rb * ng + g) * 1024;
          const __m512 sg = _mm512_loadu_ps(G.pscale.data() + (rb * ng + g) * 16);
          const __m512 su = _mm512_loadu_ps(U.pscale.data() + (rb * ng + g) * 16);
          if (nb == 2) {
            group_products<2>(a, stride, bg, bu, c);
            scale_accumulate<2>(c, xq_, t0, g, sg, su, acc);
          } else {
            group_products<1>(a, stride, bg, bu, c);
            scale_accumulate<1>(c, xq_, t0, g, sg, su, acc);
          }
        }
        const int64_t r0 = rb * 16;
        const __mmask16 m = vec::block_mask(I - r0);
        for (int blk = 0; blk < nb; ++blk) {
          for (int64_t i = 0; i < 16 && t0 + blk * 16 + i < tokens; ++i) {
            const int64_t t = t0 + blk * 16 + i;
            const __m512 s = _mm512_set1_ps(xq_.scale[size_t(t)]);
            const __m512 gv = _mm512_mul_ps(_mm512_load_ps(acc + (blk * 2) * 256 + i * 16), s);
            const __m512 uv = _mm512_mul_ps(_mm512_load_ps(acc + (blk * 2 + 1) * 256 + i * 16), s);
            _mm512_mask_storeu_ps(h_.data() + t * I + r0, m, vec::silu_mul16(gv, uv));
          }
        }
      }
    }
  }

  // out += w * (down h) for the row blocks 2 p0 .. 2 p1.
  MOEBENCH_AMX8 void down(const ExpertWeights& e, int64_t tokens, const float* w, float* out,
                          int64_t p0, int64_t p1) {
    const QuantMatrix& D = e.qdown;
    const int64_t H = e.shape.hidden, blocks = (H + 15) / 16, ng = D.groups;
    const int64_t stride = ng * kQuantGroup;
    TileScope tiles;
    alignas(64) int32_t c[4 * 256];
    alignas(64) float acc[4 * 256];
    for (int64_t t0 = 0; t0 < tokens; t0 += 32) {
      const int nb = tokens - t0 > 16 ? 2 : 1;
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t rb = 2 * p;
        const bool two = rb + 1 < blocks;  // else the second product repeats the first
        for (float& v : acc) v = 0.0f;
        for (int64_t g = 0; g < ng; ++g) {
          const int8_t* a = hq_.q.data() + t0 * stride + g * kQuantGroup;
          const uint8_t* d0 = D.pcodes.data() + (rb * ng + g) * 1024;
          const uint8_t* d1 = two ? D.pcodes.data() + ((rb + 1) * ng + g) * 1024 : d0;
          const __m512 s0 = _mm512_loadu_ps(D.pscale.data() + (rb * ng + g) * 16);
          const __m512 s1 = two ? _mm512_loadu_ps(D.pscale.data() + ((rb + 1) * ng + g) * 16) : s0;
          if (nb == 2) {
            group_products<2>(a, stride, d0, d1, c);
            scale_accumulate<2>(c, hq_, t0, g, s0, s1, acc);
          } else {
            group_products<1>(a, stride, d0, d1, c);
            scale_accumulate<1>(c, hq_, t0, g, s0, s1, acc);
          }
        }
        for (int blk = 0; blk < nb; ++blk) {
          for (int j = 0; j < (two ? 2 : 1); ++j) {
            const int64_t c0 = (rb + j) * 16;
            const __mmask16 m = vec::block_mask(H - c0);
            for (int64_t i = 0; i < 16 && t0 + blk * 16 + i < tokens; ++i) {
              const int64_t t = t0 + blk * 16 + i;
              vec::add_scaled16(out + t * H + c0, m, w[t] * hq_.scale[size_t(t)],
                                _mm512_load_ps(acc + (blk * 2 + j) * 256 + i * 16));
            }
          }
        }
      }
    }
  }

  QTokens xq_, hq_;
  std::vector<float> h_;
};

}  // namespace

std::unique_ptr<ExpertKernel> make_amx_int8_kernel() {
  return std::make_unique<AmxInt8Kernel>();
}

}  // namespace moebench
