// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// expert kernel "avx2-gemm": bf16, int8 and int4 weights, packed at load
// exactly as for avx512-bf16-gemm and avx512-vnni-gemm (ExpertWeights::pack),
// for a CPU with AVX2 and FMA but no AVX-512 (AMD Zen 2 and 3, most Intel
// client CPUs): what `auto` picks there. Each 16-row block is computed as
// two halves of 8 rows (one 256-bit vector of fp32 or int32 lanes); per
// column pair (bf16) or quad (int8, int4) one load gives the half's 8 rows'
// weights and each token's activations are broadcast into them, so no sum
// is reduced across lanes (as in the AVX-512 kernels). Up to 4 tokens per
// register tile.
//
//   bf16  the weights widened to fp32 (a shift or a mask of each 32-bit
//         word of a column pair) and multiplied by the fp32 activations with
//         FMA: no rounding of the activations to bf16 (AVX2 has no bf16 dot
//         product), so the values differ from avx512-bf16-gemm's by that
//         rounding.
//   int4  the codes (0-15, unsigned) times the int8 activations with
//         vpmaddubsw (two products per 16-bit lane, at most 2 x 15 x 127,
//         no saturation), the two quads of a load added in 16 bits, then
//         vpmaddwd by ones into int32 sums started at -8 x (the group's
//         activation sum), as avx512-vnni-gemm's vpdpbusd does in one step.
//   int8  vpmaddubsw would saturate on codes up to 255 times activations up
//         to 127, so the signed weight w = code - 128 goes in as |w| and its
//         sign is moved onto the activation (vpsignb): |w| x (sign(w) x) at
//         most 2 x 127 x 127 per 16-bit lane; no offset to remove.
// The activations are quantised per token as for the VNNI kernels
// (QTokens, the same values); each group's int32 sums are converted and
// multiplied by the vector of the 8 rows' scales into fp32 accumulators.
// Gate and up are two passes over the row block's x (from L1), so a bf16
// tile keeps 8 accumulators in the 16 vector registers; an int8/int4 tile
// keeps 8 int32 sums and 8 fp32 sums, the latter updated once per group
// (the compiler keeps some of them on the stack). Each thread
// takes whole row blocks from the pool's queue: the result does not depend
// on the thread count.
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/quant_tokens.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vec_math.h"

namespace moebench {
namespace {

#define MOEBENCH_AVX2 __attribute__((target("avx2,fma")))

constexpr int kTile = 4;  // tokens per register tile

// e^x for 8 lanes by vec::exp16's polynomial (vec::kExpPoly), times 2^n
// built in the exponent bits (AVX2 has no vscalefps; inputs clamped to +-87,
// so n stays within the normal exponents).
MOEBENCH_AVX2 inline __m256 exp8(__m256 x) {
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(87.0f)), _mm256_set1_ps(-87.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(vec::kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = _mm256_fnmadd_ps(n, _mm256_set1_ps(vec::kLn2), x);
  __m256 p = _mm256_set1_ps(vec::kExpPoly[0]);
  for (int i = 1; i < 7; ++i) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(vec::kExpPoly[i]));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// silu(g) * u for 8 lanes.
MOEBENCH_AVX2 inline __m256 silu_mul8(__m256 g, __m256 u) {
  const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

// All lanes below `left` (8 from 8 on), as a vmaskmov mask.
MOEBENCH_AVX2 inline __m256i lanes8(int64_t left) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(left < 8 ? left : 8)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// o[lane] += s * v[lane] for the 8 lanes from o, those below `left` only.
MOEBENCH_AVX2 inline void add_scaled8(float* o, int64_t left, float s, __m256 v) {
  if (left >= 8) {
    _mm256_storeu_ps(o, _mm256_fmadd_ps(_mm256_set1_ps(s), v, _mm256_loadu_ps(o)));
  } else if (left > 0) {
    const __m256i m = lanes8(left);
    _mm256_maskstore_ps(o, m, _mm256_fmadd_ps(_mm256_set1_ps(s), v, _mm256_maskload_ps(o, m)));
  }
}

// bf16: y[t][h] = the 8 rows of half h (rows 8h to 8h + 7) of a packed row
// block (`w`, kp column pairs of [16 rows][2]) times token t's fp32
// activations (x + t * xs, zero-padded to 2 kp columns), both halves in one
// pass over the block's weights. With few tokens the even and odd columns
// (and, for one token, consecutive pairs) go into separate sums so that at
// least 8 fused multiply-adds are in flight.
template <int NT>
MOEBENCH_AVX2 void dot_bf16(const uint16_t* w, int64_t kp, const float* x, int64_t xs,
                            __m256 y[NT][2]) {
  constexpr int U = NT == 1 ? 2 : 1;  // pairs per step (kp is a multiple of 16)
  constexpr int S = NT <= 2 ? 2 : 1;  // separate sums for the even and odd columns
  __m256 a[U][S][NT][2];
  for (int u = 0; u < U; ++u) {
    for (int p = 0; p < S; ++p) {
      for (int t = 0; t < NT; ++t) a[u][p][t][0] = a[u][p][t][1] = _mm256_setzero_ps();
    }
  }
  const __m256i odd = _mm256_set1_epi32(int(0xffff0000u));
  for (int64_t k = 0; k < kp; k += U) {
    for (int u = 0; u < U; ++u) {
      __m256 we[2], wo[2];
      for (int h = 0; h < 2; ++h) {
        // A pair's 32-bit word: column 2k in its low half, 2k + 1 in its high.
        const __m256i v =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + (k + u) * 32 + h * 16));
        we[h] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
        wo[h] = _mm256_castsi256_ps(_mm256_and_si256(v, odd));
      }
      for (int t = 0; t < NT; ++t) {
        const float* xt = x + t * xs + 2 * (k + u);
        const __m256 x0 = _mm256_broadcast_ss(xt), x1 = _mm256_broadcast_ss(xt + 1);
        for (int h = 0; h < 2; ++h) {
          a[u][0][t][h] = _mm256_fmadd_ps(we[h], x0, a[u][0][t][h]);
          a[u][S - 1][t][h] = _mm256_fmadd_ps(wo[h], x1, a[u][S - 1][t][h]);
        }
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < 2; ++h) {
      __m256 s = a[0][0][t][h];
      for (int u = 0; u < U; ++u) {
        for (int p = 0; p < S; ++p) {
          if (u + p > 0) s = _mm256_add_ps(s, a[u][p][t][h]);
        }
      }
      y[t][h] = s;
    }
  }
}

MOEBENCH_AVX2 inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// int8 / int4: y[t][h] = the 8 rows of half h of row block rb of M (packed)
// times token t0 + t's quantised activations, in units of the token's
// scale; both halves in one pass.
template <bool kInt4, int NT>
MOEBENCH_AVX2 void dot_quant(const QuantMatrix& M, int64_t rb, const QTokens& x, int64_t t0,
                             __m256 y[NT][2]) {
  constexpr int64_t qb = kInt4 ? 32 : 64;  // bytes per quad (int4: two quads share 64)
  const int64_t ng = M.groups, w = ng * kQuantGroup;
  const __m256i ones = _mm256_set1_epi16(1), low = _mm256_set1_epi8(0x0f),
                bias = _mm256_set1_epi8(char(0x80));
  for (int t = 0; t < NT; ++t) y[t][0] = y[t][1] = _mm256_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    __m256i s[NT][2];
    for (int t = 0; t < NT; ++t)
      s[t][0] = s[t][1] = _mm256_set1_epi32(x.start[size_t((t0 + t) * ng + g)]);
    const uint8_t* c = M.pcodes.data() + (rb * ng + g) * 16 * qb;
    const int8_t* xg = x.q.data() + t0 * w + g * kQuantGroup;
    for (int q = 0; q < 16; q += 2) {
      for (int h = 0; h < 2; ++h) {
        if constexpr (kInt4) {
          const __m256i b =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + q * qb + h * 32));
          const __m256i a0 = _mm256_and_si256(b, low);
          const __m256i a1 = _mm256_and_si256(_mm256_srli_epi16(b, 4), low);
          for (int t = 0; t < NT; ++t) {
            const int8_t* xt = xg + t * w + 4 * q;
            const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(a0, bcast4(xt)),
                                               _mm256_maddubs_epi16(a1, bcast4(xt + 4)));
            s[t][h] = _mm256_add_epi32(s[t][h], _mm256_madd_epi16(p, ones));
          }
        } else {
          const __m256i w0 = _mm256_xor_si256(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + q * qb + h * 32)), bias);
          const __m256i w1 = _mm256_xor_si256(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + (q + 1) * qb + h * 32)),
              bias);
          const __m256i u0 = _mm256_abs_epi8(w0), u1 = _mm256_abs_epi8(w1);
          for (int t = 0; t < NT; ++t) {
            const int8_t* xt = xg + t * w + 4 * q;
            const __m256i p0 = _mm256_maddubs_epi16(u0, _mm256_sign_epi8(bcast4(xt), w0));
            const __m256i p1 = _mm256_maddubs_epi16(u1, _mm256_sign_epi8(bcast4(xt + 4), w1));
            s[t][h] = _mm256_add_epi32(s[t][h], _mm256_add_epi32(_mm256_madd_epi16(p0, ones),
                                                                 _mm256_madd_epi16(p1, ones)));
          }
        }
      }
    }
    const float* sc = M.pscale.data() + (rb * ng + g) * 16;
    for (int h = 0; h < 2; ++h) {
      const __m256 scv = _mm256_loadu_ps(sc + h * 8);
      for (int t = 0; t < NT; ++t)
        y[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t][h]), scv, y[t][h]);
    }
  }
}

// bf16 gate and up for row block rb, tokens [t0, t0 + NT): h = silu(gate)
// * up into hs (fp32 rows of 2 kp_h, stored whole: the block's padding rows
// have zero weights and come out 0, and 2 kp_h >= inter rounded up to 16).
template <int NT>
MOEBENCH_AVX2 void gate_up_bf16(const ExpertWeights& e, int64_t kp, const float* xs, int64_t rb,
                                int64_t t0, int64_t kp_h, float* hs) {
  __m256 g[NT][2], u[NT][2];
  dot_bf16<NT>(e.pgate.data() + rb * kp * 32, kp, xs + t0 * 2 * kp, 2 * kp, g);
  dot_bf16<NT>(e.pup.data() + rb * kp * 32, kp, xs + t0 * 2 * kp, 2 * kp, u);
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < 2; ++h)
      _mm256_storeu_ps(hs + (t0 + t) * 2 * kp_h + rb * 16 + h * 8, silu_mul8(g[t][h], u[t][h]));
  }
}

// bf16 down for row block rb (16 columns of out), tokens [t0, t0 + NT).
template <int NT>
MOEBENCH_AVX2 void down_bf16(const ExpertWeights& e, int64_t kp_h, const float* hs, int64_t rb,
                             int64_t t0, const float* w, float* out) {
  const int64_t H = e.shape.hidden;
  __m256 y[NT][2];
  dot_bf16<NT>(e.pdown.data() + rb * kp_h * 32, kp_h, hs + t0 * 2 * kp_h, 2 * kp_h, y);
  for (int h = 0; h < 2; ++h) {
    const int64_t c0 = rb * 16 + h * 8;
    for (int t = 0; t < NT; ++t) add_scaled8(out + (t0 + t) * H + c0, H - c0, w[t0 + t], y[t][h]);
  }
}

// int8 / int4 gate and up: h (fp32, [tokens x inter]) = silu(gate) * up.
template <bool kInt4, int NT>
MOEBENCH_AVX2 void gate_up_quant(const ExpertWeights& e, const QTokens& xq, int64_t rb, int64_t t0,
                                 float* h_out) {
  const int64_t I = e.shape.inter;
  __m256 g[NT][2], u[NT][2];
  dot_quant<kInt4, NT>(e.qgate, rb, xq, t0, g);
  dot_quant<kInt4, NT>(e.qup, rb, xq, t0, u);
  for (int h = 0; h < 2; ++h) {
    const int64_t r0 = rb * 16 + h * 8;
    if (r0 >= I) break;
    const __m256i m = lanes8(I - r0);
    for (int t = 0; t < NT; ++t) {
      const __m256 s = _mm256_set1_ps(xq.scale[size_t(t0 + t)]);
      _mm256_maskstore_ps(h_out + (t0 + t) * I + r0, m,
                          silu_mul8(_mm256_mul_ps(g[t][h], s), _mm256_mul_ps(u[t][h], s)));
    }
  }
}

// int8 / int4 down for row block rb, tokens [t0, t0 + NT).
template <bool kInt4, int NT>
MOEBENCH_AVX2 void down_quant(const ExpertWeights& e, const QTokens& hq, int64_t rb, int64_t t0,
                              const float* w, float* out) {
  const int64_t H = e.shape.hidden;
  __m256 y[NT][2];
  dot_quant<kInt4, NT>(e.qdown, rb, hq, t0, y);
  for (int h = 0; h < 2; ++h) {
    const int64_t c0 = rb * 16 + h * 8;
    for (int t = 0; t < NT; ++t)
      add_scaled8(out + (t0 + t) * H + c0, H - c0, w[t0 + t] * hq.scale[size_t(t0 + t)], y[t][h]);
  }
}

class Avx2GemmKernel final : public ExpertKernel {
 public:
  std::string name() const override { return "avx2-gemm"; }
  bool supports(WeightDtype d) const override {
    return d == WeightDtype::kBf16 || d == WeightDtype::kInt8 || d == WeightDtype::kInt4;
  }
  bool needs_packed() const override { return true; }

 protected:
  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool* pool) override {
    if (e.dtype == WeightDtype::kBf16) {
      run_bf16(e, x, tokens, w, out, pool);
    } else if (e.dtype == WeightDtype::kInt4) {
      run_quant<true>(e, x, tokens, w, out, pool);
    } else {
      run_quant<false>(e, x, tokens, w, out, pool);
    }
  }

 private:
  void run_bf16(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
                ThreadPool* pool) {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    const int64_t kp = packed_pairs(H), kp_h = packed_pairs(I);
    // Activations and h as fp32 rows zero-padded to the packed widths.
    xs_.assign(size_t(tokens * 2 * kp), 0.0f);
    for (int64_t t = 0; t < tokens; ++t)
      std::memcpy(&xs_[size_t(t * 2 * kp)], x + t * H, size_t(H) * sizeof(float));
    hs_.assign(size_t(tokens * 2 * kp_h), 0.0f);
    vec::for_block_tiles<kTile>(pool, (I + 15) / 16, tokens, [&]<int NT>(int64_t rb, int64_t t0) {
      gate_up_bf16<NT>(e, kp, xs_.data(), rb, t0, kp_h, hs_.data());
    });
    vec::for_block_tiles<kTile>(pool, (H + 15) / 16, tokens, [&]<int NT>(int64_t rb, int64_t t0) {
      down_bf16<NT>(e, kp_h, hs_.data(), rb, t0, w, out);
    });
  }

  template <bool kInt4>
  void run_quant(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
                 ThreadPool* pool) {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    // int4 codes carry the offset 8 (removed by the sums' start values);
    // int8 weights go in signed, with no offset.
    const int offset = kInt4 ? 8 : 0;
    xq_.set(x, tokens, H, offset);
    h_.assign(size_t(tokens * I), 0.0f);
    vec::for_block_tiles<kTile>(pool, (I + 15) / 16, tokens, [&]<int NT>(int64_t rb, int64_t t0) {
      gate_up_quant<kInt4, NT>(e, xq_, rb, t0, h_.data());
    });
    hq_.set(h_.data(), tokens, I, offset);
    vec::for_block_tiles<kTile>(pool, (H + 15) / 16, tokens, [&]<int NT>(int64_t rb, int64_t t0) {
      down_quant<kInt4, NT>(e, hq_, rb, t0, w, out);
    });
  }

  std::vector<float> xs_, hs_, h_;
  QTokens xq_, hq_;
};

}  // namespace

std::unique_ptr<ExpertKernel> make_avx2_gemm_kernel() {
  return std::make_unique<Avx2GemmKernel>();
}

}  // namespace moebench
