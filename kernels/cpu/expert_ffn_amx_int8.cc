// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// expert kernel "amx-int8": int8 and int4 weights packed at load (the
// layout avx512-vnni-gemm reads), multiplied natively on AMX int8 tiles
//. A group of 64 columns of a 16-row block is 16 quads of 64
// bytes (quad q: the 16 rows' codes 4q .. 4q + 3), exactly one B tile of
// TDPBSUD (unsigned codes), loaded in place for int8; int4 row blocks are
// first unpacked to one code per byte in a buffer of the task's thread
// (one load, a shift and two masks give two quads). Activations are
// quantised to int8 per token as for avx512-vnni-gemm (the signed A
// operand, rows padded by 64 bytes so that a tile's 16 rows do not share
// L1 sets), so one TDPBSUD gives 16 tokens x 16 rows of int32 sums over
// one group, exact.
//
// Every group has its own scales, so an int32 sum cannot be carried into
// the next group (the format's scale is per row and per 64 columns, and
// one tile product covers exactly 64 columns): each group's C tiles start
// from zero, are stored, and the vector unit adds the codes' offset back
// (-offset x the group's activation sum, per token), converts and
// multiplies by the 16 rows' scales into fp32 accumulators, while the
// tiles already compute the next group (two C buffers). These are the
// operations of avx512-vnni-gemm in the same order (int32 sum started at
// the offset term, fma(float(sum), scale, acc) over the groups in order,
// the same SiLU and down-projection epilogues), so the output equals that
// kernel's bit for bit (tested); only the order of the int32 additions
// differs, and they are exact.
//
// Tiles: two A (two blocks of 16 tokens), two B (gate and up of one row
// block; down: two row blocks), four C. A task takes a group of row
// blocks (gate/up 2, down 2 x 4) and runs it over every block of 32
// tokens, so its weights stay in L2. Each task loads the tile
// configuration and releases it. Whole row blocks per task: the result
// does not depend on the thread count.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/quant_tokens.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vec_math.h"

namespace moebench {
namespace {

#define MOEBENCH_AMX8 __attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-int8")))

constexpr int64_t kGateUpGroup = 2;   // row blocks per task
constexpr int64_t kDownGroup = 4;     // pairs of row blocks per task
constexpr int64_t kTileBytes = 1024;  // one group of one row block: 16 quads x [16 rows][4]

// Tokens quantised as QTokens, their rows copied to a stride 64 bytes
// longer than the padded width and the tokens padded to a multiple of 16
// with zero rows (a tile loads 16 rows; the padding's sums are dropped).
struct TileTokens {
  QTokens q;
  std::vector<int8_t> a;
  int64_t stride = 0;
  void set(const float* x, int64_t tokens, int64_t n, int offset) {
    q.set(x, tokens, n, offset);
    const int64_t w = q.groups * kQuantGroup;
    stride = w + 64;
    a.assign(size_t((tokens + 15) / 16 * 16 * stride), 0);
    for (int64_t t = 0; t < tokens; ++t)
      std::memcpy(&a[size_t(t * stride)], &q.q[size_t(t * w)], size_t(w));
  }
};

// The sums of one unit (two B tiles: gate and up of a row block, or two
// down row blocks) for NB blocks of 16 tokens from t0, over every group:
// acc[(blk * 2 + j) * 256 + i * 16 + r] = sum over groups of
// float(sum of the group + start) * scale_j[r], for token t0 + 16 blk + i
// (rows past `valid` tokens left at zero). b0/b1: the unit's B tiles of
// group 0, kTileBytes apart per group; s0/s1: the 16 rows' scales of
// group 0, 16 apart per group.
template <int NB>
MOEBENCH_AMX8 void unit_sums(const TileTokens& x, int64_t t0, int64_t valid, const uint8_t* b0,
                             const uint8_t* b1, const float* s0, const float* s1, float* acc,
                             int32_t* cbuf) {
  const int64_t ng = x.q.groups;
  const int8_t* a = x.a.data() + t0 * x.stride;
  std::fill(acc, acc + NB * 512, 0.0f);
  const int rows[2] = {int(std::min<int64_t>(16, valid)),
                       int(std::clamp<int64_t>(valid - 16, 0, 16))};
  // The group g's stored sums into the accumulators.
  auto scale = [&](int64_t g) MOEBENCH_AMX8 {
    const int32_t* c = cbuf + (g & 1) * 1024;
    const __m512 v0 = _mm512_loadu_ps(s0 + g * 16), v1 = _mm512_loadu_ps(s1 + g * 16);
    for (int blk = 0; blk < NB; ++blk) {
      const int32_t* st = x.q.start.data() + (t0 + blk * 16) * ng + g;
      for (int i = 0; i < rows[blk]; ++i) {
        const __m512i start = _mm512_set1_epi32(st[i * ng]);
        for (int j = 0; j < 2; ++j) {
          const int64_t o = (blk * 2 + j) * 256 + i * 16;
          const __m512 f = vec::to_ps16(_mm512_add_epi32(start, _mm512_load_si512(c + o)));
          _mm512_store_ps(acc + o, _mm512_fmadd_ps(f, j ? v1 : v0, _mm512_load_ps(acc + o)));
        }
      }
    }
  };
  for (int64_t g = 0; g < ng; ++g) {
    int32_t* c = cbuf + (g & 1) * 1024;
    _tile_zero(0);
    _tile_zero(1);
    _tile_loadd(6, b0 + g * kTileBytes, 64);
    _tile_loadd(7, b1 + g * kTileBytes, 64);
    _tile_loadd(4, a + g * kQuantGroup, x.stride);
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 7);
    _tile_stored(0, c, 64);
    _tile_stored(1, c + 256, 64);
    if constexpr (NB == 2) {
      _tile_zero(2);
      _tile_zero(3);
      _tile_loadd(5, a + 16 * x.stride + g * kQuantGroup, x.stride);
      _tile_dpbsud(2, 5, 6);
      _tile_dpbsud(3, 5, 7);
      _tile_stored(2, c + 512, 64);
      _tile_stored(3, c + 768, 64);
    }
    // The previous group's sums while the tiles compute this one.
    if (g > 0) scale(g - 1);
  }
  scale(ng - 1);
}

MOEBENCH_AMX8 void run_unit(const TileTokens& x, int64_t t0, int64_t tokens, const uint8_t* b0,
                            const uint8_t* b1, const float* s0, const float* s1, float* acc,
                            int32_t* cbuf) {
  if (tokens - t0 > 16) {
    unit_sums<2>(x, t0, tokens - t0, b0, b1, s0, s1, acc, cbuf);
  } else {
    unit_sums<1>(x, t0, tokens - t0, b0, b1, s0, s1, acc, cbuf);
  }
}

// Row blocks [r0, r1) of a packed int4 matrix as one code per byte, in the
// int8 packing's layout ([row block][group][quad][16 rows][4]).
MOEBENCH_AMX8 void unpack_int4(const QuantMatrix& m, int64_t r0, int64_t r1, uint8_t* out) {
  const __m512i lo = _mm512_set1_epi8(0x0f);
  const int64_t n = (r1 - r0) * m.groups * 8;  // 64-byte pairs of quads
  const uint8_t* p = m.pcodes.data() + r0 * m.groups * 512;
  for (int64_t i = 0; i < n; ++i) {
    const __m512i b = _mm512_loadu_si512(p + i * 64);
    _mm512_storeu_si512(out + i * 128, _mm512_and_si512(b, lo));
    _mm512_storeu_si512(out + i * 128 + 64, _mm512_and_si512(_mm512_srli_epi16(b, 4), lo));
  }
}

// The calling thread's buffer of unpacked int4 codes, at least n bytes.
uint8_t* unpack_buffer(size_t n) {
  thread_local std::vector<uint8_t> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

class AmxInt8Kernel final : public ExpertKernel {
 public:
  std::string name() const override { return "amx-int8"; }
  bool supports(WeightDtype d) const override {
    return d == WeightDtype::kInt8 || d == WeightDtype::kInt4;
  }
  bool needs_packed() const override { return true; }

 protected:
  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool* pool) override {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    const bool int4 = e.dtype == WeightDtype::kInt4;
    const int offset = int4 ? 8 : 128;
    xq_.set(x, tokens, H, offset);
    h_.assign(size_t(tokens * I), 0.0f);
    // Lambdas do not inherit target attributes: each task calls a member
    // compiled for AMX.
    parallel_ranges(pool, (I + 15) / 16, kGateUpGroup,
                    [&](int64_t b0, int64_t b1) { gate_up(e, int4, tokens, b0, b1); });
    hq_.set(h_.data(), tokens, I, offset);
    parallel_ranges(pool, ((H + 15) / 16 + 1) / 2, kDownGroup,
                    [&](int64_t p0, int64_t p1) { down(e, int4, tokens, w, out, p0, p1); });
  }

 private:
  // h = silu(gate x) * (up x), fp32, for the row blocks [b0, b1).
  MOEBENCH_AMX8 void gate_up(const ExpertWeights& e, bool int4, int64_t tokens, int64_t b0,
                             int64_t b1) {
    const QuantMatrix &G = e.qgate, &U = e.qup;
    const int64_t I = e.shape.inter, ng = G.groups, span = ng * kTileBytes;
    const uint8_t *gc = G.pcodes.data() + b0 * span, *uc = U.pcodes.data() + b0 * span;
    if (int4) {
      uint8_t* buf = unpack_buffer(size_t(2 * (b1 - b0) * span));
      unpack_int4(G, b0, b1, buf);
      unpack_int4(U, b0, b1, buf + (b1 - b0) * span);
      gc = buf;
      uc = buf + (b1 - b0) * span;
    }
    amx::TileScope tiles;
    alignas(64) int32_t cbuf[2 * 1024];
    alignas(64) float acc[1024];
    for (int64_t t0 = 0; t0 < tokens; t0 += 32) {
      for (int64_t rb = b0; rb < b1; ++rb) {
        run_unit(xq_, t0, tokens, gc + (rb - b0) * span, uc + (rb - b0) * span,
                 G.pscale.data() + rb * ng * 16, U.pscale.data() + rb * ng * 16, acc, cbuf);
        const int64_t r0 = rb * 16;
        const __mmask16 m = vec::block_mask(I - r0);
        for (int64_t t = t0; t < std::min(tokens, t0 + 32); ++t) {
          const int64_t blk = (t - t0) / 16, i = (t - t0) % 16;
          const __m512 s = _mm512_set1_ps(xq_.q.scale[size_t(t)]);
          const __m512 gv = _mm512_mul_ps(_mm512_load_ps(acc + (blk * 2) * 256 + i * 16), s);
          const __m512 uv = _mm512_mul_ps(_mm512_load_ps(acc + (blk * 2 + 1) * 256 + i * 16), s);
          _mm512_mask_storeu_ps(h_.data() + t * I + r0, m, vec::silu_mul16(gv, uv));
        }
      }
    }
  }

  // out += w * (down h) for the row blocks 2 p0 .. 2 p1.
  MOEBENCH_AMX8 void down(const ExpertWeights& e, bool int4, int64_t tokens, const float* w,
                          float* out, int64_t p0, int64_t p1) {
    const QuantMatrix& D = e.qdown;
    const int64_t H = e.shape.hidden, blocks = (H + 15) / 16, ng = D.groups, span = ng * kTileBytes;
    const int64_t r0 = 2 * p0, r1 = std::min(2 * p1, blocks);
    const uint8_t* dc = D.pcodes.data() + r0 * span;
    if (int4) {
      uint8_t* buf = unpack_buffer(size_t((r1 - r0) * span));
      unpack_int4(D, r0, r1, buf);
      dc = buf;
    }
    amx::TileScope tiles;
    alignas(64) int32_t cbuf[2 * 1024];
    alignas(64) float acc[1024];
    for (int64_t t0 = 0; t0 < tokens; t0 += 32) {
      for (int64_t rb = r0; rb < r1; rb += 2) {
        const bool two = rb + 1 < r1;  // else the second product repeats the first
        const uint8_t* d0 = dc + (rb - r0) * span;
        const float* s0 = D.pscale.data() + rb * ng * 16;
        run_unit(hq_, t0, tokens, d0, two ? d0 + span : d0, s0, two ? s0 + ng * 16 : s0, acc, cbuf);
        for (int j = 0; j < (two ? 2 : 1); ++j) {
          const int64_t c0 = (rb + j) * 16;
          const __mmask16 m = vec::block_mask(H - c0);
          for (int64_t t = t0; t < std::min(tokens, t0 + 32); ++t) {
            const int64_t blk = (t - t0) / 16, i = (t - t0) % 16;
            vec::add_scaled16(out + t * H + c0, m, w[t] * hq_.q.scale[size_t(t)],
                              _mm512_load_ps(acc + (blk * 2 + j) * 256 + i * 16));
          }
        }
      }
    }
  }

  TileTokens xq_, hq_;
  std::vector<float> h_;
};

}  // namespace

std::unique_ptr<ExpertKernel> make_amx_int8_kernel() {
  return std::make_unique<AmxInt8Kernel>();
}

}  // namespace moebench
