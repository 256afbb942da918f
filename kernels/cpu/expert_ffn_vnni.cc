// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// expert kernel "avx512-vnni": int8 and int4 weights (group-wise scales,
// kernels/cpu/expert_ffn.h) with u8 x s8 dot products (vpdpbusd: 64
// products into 16 int32 lanes per instruction), compiled for AVX-512 with
// target attributes and constructed only when cpu_info() reports
// avx512_vnni.
//
// Each token's activations are quantised to int8 with one scale per token
// (max |x| / 127). The weights are stored as unsigned codes u = q + offset
// (offset 128 for int8, 8 for int4), so one group's sum is
//
//     sum_j q_j x_j = sum_j u_j x_j - offset * sum_j x_j,
//
// vpdpbusd's u8 x s8 form; the second term is computed once per token and
// group (lane by lane, so no horizontal sums inside the loop) and is the
// accumulator's start value. Each group's int32 lanes are converted to fp32
// and multiplied by the group's scale into fp32 accumulators; the token's
// scale is applied once per output. Gate and up run in one pass (two rows
// of each per block), down four rows per block, up to four tokens per
// weight load (kernels/cpu/row_blocks.h).
// GCC 12's intrinsics (_mm512_cvtepi32_ps, _mm512_inserti64x4) pass
// _mm512_undefined_*() as the unused merge source, which -Wmaybe-uninitialized
// reports once inlined into the int4 path: a false positive in the header.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/row_blocks.h"
#include "kernels/cpu/thread_pool.h"

namespace moebench {
namespace {

#define MOEBENCH_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

// Tokens quantised for one matrix's input width.
struct QuantTokens {
  int64_t groups = 0;
  std::vector<int8_t> q;       // [tokens x groups * 64], zero-padded
  std::vector<int32_t> start;  // [tokens x groups x 16]: -offset * (sum of a lane's 4 values)
  std::vector<float> scale;    // [tokens]

  void set(const float* x, int64_t tokens, int64_t n, int64_t stride, int offset) {
    groups = (n + kQuantGroup - 1) / kQuantGroup;
    const int64_t w = groups * kQuantGroup;
    q.assign(size_t(tokens * w), 0);
    start.assign(size_t(tokens * groups * 16), 0);
    scale.assign(size_t(tokens), 1.0f);
    for (int64_t t = 0; t < tokens; ++t) {
      int8_t* qt = &q[size_t(t * w)];
      scale[size_t(t)] = quantise_activations_avx512(x + t * stride, n, qt);
      for (int64_t l = 0; l < groups * 16; ++l) {
        const int sum = qt[4 * l] + qt[4 * l + 1] + qt[4 * l + 2] + qt[4 * l + 3];
        start[size_t(t * groups * 16 + l)] = -offset * sum;
      }
    }
  }
};

// 64 weight codes of row `row`, group g, as unsigned bytes.
template <bool kInt4>
MOEBENCH_AVX512_VNNI inline __m512i load_codes(const uint8_t* row, int64_t g) {
  if constexpr (!kInt4) {
    return _mm512_loadu_si512(row + g * 64);
  } else {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + g * 32));
    const __m256i lo_mask = _mm256_set1_epi8(0x0f);
    const __m256i lo = _mm256_and_si256(b, lo_mask);                        // weights 0..31
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), lo_mask);  // weights 32..63
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
}

template <bool kInt4>
struct VnniDot {
  const QuantMatrix* const* sets;
  const QuantTokens* x;
  template <int NR, int NT>
  MOEBENCH_AVX512_VNNI void block(const int* set, const int64_t* row, int64_t t0, float* sums) {
    const uint8_t* codes[NR];
    const float* scales[NR];
    for (int i = 0; i < NR; ++i) {
      const QuantMatrix& m = *sets[set[i]];
      codes[i] = m.codes.data() + row[i] * m.row_bytes;
      scales[i] = m.scale.data() + row[i] * m.groups;
    }
    const int64_t G = x->groups, w = G * kQuantGroup;
    __m512 acc[NR][NT];
    for (int i = 0; i < NR; ++i) {
      for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_setzero_ps();
    }
    for (int64_t g = 0; g < G; ++g) {
      __m512i xv[NT], st[NT];
      for (int j = 0; j < NT; ++j) {
        xv[j] = _mm512_loadu_si512(x->q.data() + (t0 + j) * w + g * 64);
        st[j] = _mm512_loadu_si512(x->start.data() + ((t0 + j) * G + g) * 16);
      }
      for (int i = 0; i < NR; ++i) {
        const __m512i c = load_codes<kInt4>(codes[i], g);
        const __m512 s = _mm512_set1_ps(scales[i][g]);
        for (int j = 0; j < NT; ++j) {
          const __m512i d = _mm512_dpbusd_epi32(st[j], c, xv[j]);
          acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s, acc[i][j]);
        }
      }
    }
    alignas(64) float lanes[16];
    for (int i = 0; i < NR; ++i) {
      for (int j = 0; j < NT; ++j) {
        _mm512_store_ps(lanes, acc[i][j]);
        sums[i * NT + j] = row_blocks::sum16(lanes) * x->scale[size_t(t0 + j)];
      }
    }
  }
};

class Avx512VnniKernel final : public ExpertKernel {
 public:
  std::string name() const override { return "avx512-vnni"; }
  bool supports(WeightDtype d) const override {
    return d == WeightDtype::kInt8 || d == WeightDtype::kInt4;
  }

  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool* pool) override {
    if (e.dtype == WeightDtype::kInt4) {
      run_as<true>(e, x, tokens, w, out, pool);
    } else {
      run_as<false>(e, x, tokens, w, out, pool);
    }
  }

 private:
  template <bool kInt4>
  void run_as(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
              ThreadPool* pool) {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    const int offset = kInt4 ? 8 : 128;
    xq_.set(x, tokens, H, H, offset);
    h_.assign(size_t(tokens * I), 0.0f);
    g_.assign(size_t(tokens * I), 0.0f);
    const QuantMatrix* gu[2] = {&e.qgate, &e.qup};
    VnniDot<kInt4> gate_up{gu, &xq_};
    parallel_ranges(pool, I, row_blocks::kGateUpGrain, [&](int64_t r0, int64_t r1) {
      row_blocks::gate_up_silu(gate_up, r0, r1, I, tokens, g_.data(),
                               [&](int64_t r, int64_t t, float h) { h_[size_t(t * I + r)] = h; });
    });
    hq_.set(h_.data(), tokens, I, I, offset);
    const QuantMatrix* d[1] = {&e.qdown};
    VnniDot<kInt4> down{d, &hq_};
    parallel_ranges(pool, H, row_blocks::kDownGrain, [&](int64_t c0, int64_t c1) {
      row_blocks::for_rows<1, 4>(down, c0, c1, tokens, [&](int64_t c, int64_t t, int, float v) {
        out[t * H + c] += w[t] * v;
      });
    });
  }

  QuantTokens xq_, hq_;
  std::vector<float> g_, h_;
};

}  // namespace

std::unique_ptr<ExpertKernel> make_avx512_vnni_kernel() {
  return std::make_unique<Avx512VnniKernel>();
}

}  // namespace moebench
