// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The non-expert kernels of the real backend's step (kernels/cpu/dense_ops.h).
#include "kernels/cpu/dense_ops.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "core/util/cpu_info.h"
#include "core/util/error.h"
#include "kernels/cpu/expert_ffn.h"
#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vec_math.h"

namespace moebench {

#define MB_DENSE512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define MB_DENSE256 __attribute__((target("avx2,fma")))

const char* to_string(DenseIsa isa) {
  switch (isa) {
    case DenseIsa::kReference:
      return "reference";
    case DenseIsa::kAvx2:
      return "avx2";
    case DenseIsa::kAvx512Bf16:
      return "avx512-bf16";
  }
  return "?";
}

DenseIsa best_dense_isa() {
  const CpuInfo& c = cpu_info();
  if (c.avx512f && c.avx512bw && c.avx512vl && c.avx512_bf16) return DenseIsa::kAvx512Bf16;
  if (c.avx2 && c.fma) return DenseIsa::kAvx2;
  return DenseIsa::kReference;
}

void to_bf16_row(const float* x, int64_t n, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = to_bf16(x[i]);
}

namespace {

// ---- linear: AVX-512 BF16 on the packed layout ---------------------------

constexpr int kTile = 12;  // tokens per register tile

template <int NT>
MB_DENSE512 void linear_tile512(const uint16_t* pw, int64_t kp, const uint32_t* x, int64_t t0,
                                int64_t rb, int64_t rows, float* y) {
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const uint16_t* w = pw + rb * kp * 32;
  const uint32_t* xt = x + t0 * kp;
  for (int64_t k = 0; k < kp; ++k) {
    const __m512bh a = (__m512bh)_mm512_loadu_si512(w + k * 32);
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm512_dpbf16_ps(acc[t], a, (__m512bh)_mm512_set1_epi32(int(xt[t * kp + k])));
    }
  }
  const int64_t r0 = rb * 16;
  const __mmask16 m = vec::block_mask(rows - r0);
  for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * rows + r0, m, acc[t]);
}

MB_DENSE512 void linear512(const uint16_t* pw, int64_t rows, int64_t cols, const float* x,
                           int64_t tokens, float* y, ThreadPool* pool) {
  const int64_t kp = packed_pairs(cols);
  thread_local std::vector<uint32_t> xp;
  xp.assign(size_t(tokens * kp), 0);
  vec::rows_to_bf16(x, tokens, cols, 2 * kp, reinterpret_cast<uint16_t*>(xp.data()));
  const uint32_t* xv = xp.data();
  vec::for_block_tiles<kTile>(pool, (rows + 15) / 16, tokens, [&]<int NT>(int64_t rb, int64_t t0) {
    linear_tile512<NT>(pw, kp, xv, t0, rb, rows, y);
  });
}

// ---- linear: AVX2 on row-major weights --------------------------------------

MB_DENSE256 inline __m256 widen8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

MB_DENSE256 inline float hsum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

template <int NT>
MB_DENSE256 void linear_row256(const uint16_t* w, int64_t cols, const float* x, int64_t t0,
                               float* y, int64_t rows, int64_t r) {
  __m256 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    const __m256 wv = widen8(w + c);
    for (int t = 0; t < NT; ++t)
      acc[t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + (t0 + t) * cols + c), acc[t]);
  }
  for (int t = 0; t < NT; ++t) {
    float s = hsum8(acc[t]);
    for (int64_t k = c; k < cols; ++k) s += from_bf16(w[k]) * x[(t0 + t) * cols + k];
    y[(t0 + t) * rows + r] = s;
  }
}

void linear256(const uint16_t* w, int64_t rows, int64_t cols, const float* x, int64_t tokens,
               float* y, ThreadPool* pool) {
  parallel_ranges(pool, (rows + 15) / 16, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t r = b0 * 16; r < std::min(rows, b1 * 16); ++r) {
      for (int64_t t0 = 0; t0 < tokens; t0 += 4) {
        vec::with_tile<4>(std::min<int64_t>(4, tokens - t0), [&]<int NT>() {
          linear_row256<NT>(w + r * cols, cols, x, t0, y, rows, r);
        });
      }
    }
  });
}

// ---- attention: one (token, head) ------------------------------------------

// 16 bf16 as fp32 (the zero-masked forms with every lane selected: the plain
// ones pass GCC 12 an undefined merge source that -Wuninitialized reports).
MB_DENSE512 inline __m512 widen16(__m256i h) {
  constexpr __mmask16 kAll = 0xffff;
  return _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, h), 16));
}

// The sum of 16 lanes, stored first (GCC 12's _mm512_reduce_add_ps trips
// -Wuninitialized inside its own header).
MB_DENSE512 inline float sum16(__m512 v) {
  alignas(64) float l[16];
  _mm512_store_ps(l, v);
  float s = 0;
  for (float x : l) s += x;
  return s;
}

MB_DENSE512 float dot512(const float* q, const uint16_t* k, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    const __m512 kv = widen16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + c)));
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + c), kv, acc);
  }
  if (c < n) {
    const __mmask16 m = vec::block_mask(n - c);
    const __m512 kv = widen16(_mm256_maskz_loadu_epi16(m, k + c));
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + c), kv, acc);
  }
  return sum16(acc);
}

MB_DENSE512 void axpy512(float a, const uint16_t* v, int64_t n, float* o) {
  const __m512 av = _mm512_set1_ps(a);
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    const __m512 vv = widen16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + c)));
    _mm512_storeu_ps(o + c, _mm512_fmadd_ps(av, vv, _mm512_loadu_ps(o + c)));
  }
  if (c < n) {
    const __mmask16 m = vec::block_mask(n - c);
    const __m512 vv = widen16(_mm256_maskz_loadu_epi16(m, v + c));
    _mm512_mask_storeu_ps(o + c, m, _mm512_fmadd_ps(av, vv, _mm512_maskz_loadu_ps(m, o + c)));
  }
}

// s[j] = exp(s[j] - max) for j < n; returns their sum.
MB_DENSE512 float exp_sum512(float* s, int64_t n, float mx) {
  __m512 sum = _mm512_setzero_ps();
  const __m512 m = _mm512_set1_ps(mx);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 e = vec::exp16(_mm512_sub_ps(_mm512_loadu_ps(s + j), m));
    _mm512_storeu_ps(s + j, e);
    sum = _mm512_add_ps(sum, e);
  }
  float tail = 0;
  for (; j < n; ++j) {
    s[j] = std::exp(s[j] - mx);
    tail += s[j];
  }
  return sum16(sum) + tail;
}

MB_DENSE256 float dot256(const float* q, const uint16_t* k, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + c), widen8(k + c), acc);
  float s = hsum8(acc);
  for (; c < n; ++c) s += q[c] * from_bf16(k[c]);
  return s;
}

MB_DENSE256 void axpy256(float a, const uint16_t* v, int64_t n, float* o) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t c = 0;
  for (; c + 8 <= n; c += 8)
    _mm256_storeu_ps(o + c, _mm256_fmadd_ps(av, widen8(v + c), _mm256_loadu_ps(o + c)));
  for (; c < n; ++c) o[c] += a * from_bf16(v[c]);
}

float dot_ref(const float* q, const uint16_t* k, int64_t n) {
  double s = 0;
  for (int64_t c = 0; c < n; ++c) s += double(q[c]) * double(from_bf16(k[c]));
  return float(s);
}

void axpy_ref(float a, const uint16_t* v, int64_t n, float* o) {
  for (int64_t c = 0; c < n; ++c) o[c] += a * from_bf16(v[c]);
}

void attend_one(const AttentionShape& s, const float* q, int64_t ctx, int64_t row0, int64_t g,
                const uint16_t* k, const uint16_t* v, float* out, DenseIsa isa) {
  thread_local std::vector<float> sc;
  sc.resize(size_t(ctx));
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < ctx; ++j) {
    const uint16_t* kj = k + (row0 + j) * s.k_stride + g * s.key_dim;
    const float d = isa == DenseIsa::kAvx512Bf16 ? dot512(q, kj, s.key_dim)
                    : isa == DenseIsa::kAvx2     ? dot256(q, kj, s.key_dim)
                                                 : dot_ref(q, kj, s.key_dim);
    sc[size_t(j)] = s.scale * d;
    mx = std::max(mx, sc[size_t(j)]);
  }
  float sum = 0;
  if (isa == DenseIsa::kAvx512Bf16) {
    sum = exp_sum512(sc.data(), ctx, mx);
  } else {
    for (int64_t j = 0; j < ctx; ++j) {
      sc[size_t(j)] = std::exp(sc[size_t(j)] - mx);
      sum += sc[size_t(j)];
    }
  }
  std::fill(out, out + s.value_dim, 0.0f);
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < ctx; ++j) {
    const uint16_t* vj = v + (row0 + j) * s.v_stride + g * s.value_dim;
    const float p = sc[size_t(j)] * inv;
    if (isa == DenseIsa::kAvx512Bf16) {
      axpy512(p, vj, s.value_dim, out);
    } else if (isa == DenseIsa::kAvx2) {
      axpy256(p, vj, s.value_dim, out);
    } else {
      axpy_ref(p, vj, s.value_dim, out);
    }
  }
}

}  // namespace

Linear Linear::random(int64_t rows, int64_t cols, uint64_t seed, DenseIsa isa) {
  if (rows <= 0 || cols <= 0) {
    throw InternalError(
        fmt::format("Linear::random: expected a positive shape, found {} x {}", rows, cols));
  }
  Linear l;
  l.rows_ = rows;
  l.cols_ = cols;
  l.isa_ = isa;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  const float scale = 1.0f / std::sqrt(float(cols));
  std::vector<uint16_t> w(size_t(rows * cols));
  for (auto& x : w) x = to_bf16(d(rng) * scale);
  l.w_ = isa == DenseIsa::kAvx512Bf16 ? pack_rows16(w, rows, cols) : std::move(w);
  return l;
}

float Linear::at(int64_t r, int64_t c) const {
  if (isa_ != DenseIsa::kAvx512Bf16) return from_bf16(w_[size_t(r * cols_ + c)]);
  const int64_t kp = packed_pairs(cols_);
  return from_bf16(w_[size_t(((r / 16 * kp + c / 2) * 16 + r % 16) * 2 + c % 2)]);
}

void Linear::apply(const float* x, int64_t tokens, float* y, ThreadPool* pool) const {
  if (tokens <= 0) return;
  switch (isa_) {
    case DenseIsa::kAvx512Bf16:
      linear512(w_.data(), rows_, cols_, x, tokens, y, pool);
      return;
    case DenseIsa::kAvx2:
      linear256(w_.data(), rows_, cols_, x, tokens, y, pool);
      return;
    case DenseIsa::kReference:
      parallel_ranges(pool, rows_, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t t = 0; t < tokens; ++t) {
          for (int64_t r = r0; r < r1; ++r) {
            double s = 0;
            for (int64_t c = 0; c < cols_; ++c)
              s += double(from_bf16(w_[size_t(r * cols_ + c)])) * x[t * cols_ + c];
            y[t * rows_ + r] = float(s);
          }
        }
      });
      return;
  }
}

void rms_norm(float* x, int64_t tokens, int64_t n) {
  for (int64_t t = 0; t < tokens; ++t) {
    float* r = x + t * n;
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += double(r[i]) * r[i];
    const float inv = float(1.0 / std::sqrt(ss / double(n) + 1e-6));
    for (int64_t i = 0; i < n; ++i) r[i] *= inv;
  }
}

void softmax_top_k(const float* logits, int64_t tokens, int64_t experts, int64_t k, int32_t* top) {
  std::vector<float> p(static_cast<size_t>(experts));
  std::vector<int32_t> idx(static_cast<size_t>(experts));
  for (int64_t t = 0; t < tokens; ++t) {
    const float* l = logits + t * experts;
    const float mx = *std::max_element(l, l + experts);
    float sum = 0;
    for (int64_t e = 0; e < experts; ++e) sum += p[size_t(e)] = std::exp(l[e] - mx);
    for (auto& v : p) v /= sum;
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int32_t a, int32_t b) {
      return p[size_t(a)] != p[size_t(b)] ? p[size_t(a)] > p[size_t(b)] : a < b;
    });
    std::copy(idx.begin(), idx.begin() + k, top + t * k);
  }
}

void attention(const AttentionShape& s, const float* q, int64_t tokens, const int64_t* pos,
               const int64_t* cache_row0, const uint16_t* k, const uint16_t* v, float* out,
               ThreadPool* pool, DenseIsa isa) {
  if (s.heads <= 0 || s.kv_heads <= 0 || s.heads % s.kv_heads != 0) {
    throw InternalError(
        fmt::format("attention: expected heads a positive multiple of kv_heads, found {} and {}",
                    s.heads, s.kv_heads));
  }
  const int64_t group = s.heads / s.kv_heads;
  parallel_ranges(pool, tokens * s.heads, 1, [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) {
      const int64_t t = i / s.heads, h = i % s.heads;
      attend_one(s, q + (t * s.heads + h) * s.key_dim, pos[t] + 1, cache_row0[t], h / group, k, v,
                 out + (t * s.heads + h) * s.value_dim, isa);
    }
  });
}

}  // namespace moebench
