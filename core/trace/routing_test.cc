// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// route_block (16 tokens at once, vector code) against a brute-force
// reference of the same router on its own scores, and against route()
// (one token at a time).

#include "core/trace/routing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/util/lanes16.h"

namespace moebench {
namespace {

RoutingConfig config(RoutingFunction f, int64_t E, int64_t k, int64_t G = 1, int64_t tg = 1,
                     bool norm = false, double scale = 1.0) {
  RoutingConfig c;
  c.function = f;
  c.experts = E;
  c.top_k = k;
  c.n_group = G;
  c.topk_group = tg;
  c.norm_topk_prob = norm;
  c.routed_scaling_factor = scale;
  return c;
}

// Higher score first, lower id on ties.
std::vector<int32_t> ranked(const std::vector<float>& x, const std::vector<int32_t>& among) {
  std::vector<int32_t> v = among;
  std::sort(v.begin(), v.end(),
            [&](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
  return v;
}

std::vector<int32_t> reference_ids(const RoutingConfig& c, const std::vector<float>& scores) {
  const int64_t E = c.experts;
  std::vector<int32_t> all(E);
  std::iota(all.begin(), all.end(), 0);
  if (c.function == RoutingFunction::kSoftmaxTopK) {
    auto r = ranked(scores, all);
    return {r.begin(), r.begin() + c.top_k};
  }
  const int64_t G = c.n_group, per = E / G;
  std::vector<float> gs(G);
  for (int64_t g = 0; g < G; ++g) {
    std::vector<int32_t> members(per);
    std::iota(members.begin(), members.end(), int32_t(g * per));
    auto r = ranked(scores, members);
    gs[g] = c.function == RoutingFunction::kSigmoidGroupedBias && per > 1
                ? scores[r[0]] + scores[r[1]]
                : scores[r[0]];
  }
  std::vector<int32_t> groups(G);
  std::iota(groups.begin(), groups.end(), 0);
  groups = ranked(gs, groups);
  std::vector<int32_t> cand;
  for (int64_t q = 0; q < c.topk_group; ++q) {
    for (int64_t e = 0; e < per; ++e) cand.push_back(int32_t(groups[q] * per + e));
  }
  auto r = ranked(scores, cand);
  return {r.begin(), r.begin() + c.top_k};
}

// Logits on a coarse grid so that many scores tie exactly.
std::vector<float> block_logits(int64_t E, uint32_t seed, float step) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.5f);
  std::vector<float> x(E * 16);
  for (auto& v : x) v = step > 0 ? std::round(n(rng) / step) * step : n(rng);
  return x;
}

void check_block(const RoutingConfig& c, int valid, uint32_t seed, float step) {
  const int64_t E = c.experts, k = c.top_k;
  const std::vector<float> logits = block_logits(E, seed, step);
  std::vector<std::vector<int32_t>> ids(16, std::vector<int32_t>(k, -7));
  std::vector<std::vector<float>> w(16, std::vector<float>(k)), probs(16, std::vector<float>(E));
  int32_t* idp[16];
  float *wp[16], *pp[16];
  for (int b = 0; b < 16; ++b) {
    idp[b] = ids[b].data();
    wp[b] = w[b].data();
    pp[b] = probs[b].data();
  }
  RoutingScratch s;
  route_block(c, logits.data(), valid, idp, wp, pp, s);
  const std::string what = ::testing::PrintToString(
      std::make_tuple(int(c.function), E, k, c.n_group, c.topk_group, valid, seed, step));
  for (int b = 0; b < valid; ++b) {
    EXPECT_EQ(ids[b], reference_ids(c, probs[b])) << what << " lane " << b;
    // Weights: the selected scores, normalised and scaled in rank order.
    float sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += probs[b][ids[b][j]];
    for (int64_t j = 0; j < k; ++j) {
      float x = probs[b][ids[b][j]];
      if (c.norm_topk_prob && sum > 0) x = x * (1.0f / sum);
      EXPECT_EQ(w[b][j], x * float(c.routed_scaling_factor)) << what << " lane " << b;
    }
    // route() on the same token: the same scores (up to summation order in
    // the softmax) and the same experts unless two scores are nearly tied.
    std::vector<float> one(E), p1(E), w1(k);
    std::vector<int32_t> i1(k);
    for (int64_t e = 0; e < E; ++e) one[e] = logits[e * 16 + b];
    RoutingScratch s1;
    route(c, one.data(), nullptr, i1.data(), w1.data(), p1.data(), s1);
    for (int64_t e = 0; e < E; ++e) EXPECT_NEAR(p1[e], probs[b][e], 1e-6f) << what << " lane " << b;
    if (step == 0) {
      EXPECT_EQ(i1, ids[b]) << what << " lane " << b;
    }
  }
  for (int b = valid; b < 16; ++b)
    EXPECT_EQ(ids[b][0], -7) << "lane past `valid` written: " << what;
}

TEST(RouteBlock, MatchesBruteForceReferenceWithManyTies) {
  using F = RoutingFunction;
  const std::vector<RoutingConfig> configs = {
      config(F::kSoftmaxTopK, 8, 2),                // Mixtral
      config(F::kSoftmaxTopK, 60, 4),               // E not a multiple of 16
      config(F::kSoftmaxTopK, 64, 6, 1, 1, true),   // DeepSeek-V2-Lite-like, normalised
      config(F::kSoftmaxTopK, 128, 8, 1, 1, true),  // Qwen3
      config(F::kSoftmaxGroupLimited, 160, 6, 8, 3, false, 16.0),  // DeepSeek-V2
      config(F::kSigmoidGroupedBias, 256, 8, 8, 4, true, 2.5),     // DeepSeek-V3
      config(F::kSigmoidGroupedBias, 64, 8, 8, 2, true),           // fewer group seeds (4) than k
      config(F::kSoftmaxGroupLimited, 64, 4, 4, 1),                // one group of 16 per token
      config(F::kSigmoidGroupedBias, 48, 3, 16, 2),                // 3 experts per group
  };
  for (const auto& c : configs) {
    for (int valid : {16, 5, 1}) {
      for (uint32_t seed : {1u, 2u, 3u}) {
        check_block(c, valid, seed, 0.0f);    // continuous: ties are rare
        check_block(c, valid, seed, 0.5f);    // grid: ties everywhere
        check_block(c, valid, seed, 100.0f);  // almost all logits 0: nearly all tied
      }
    }
  }
}

TEST(Lanes, UnpackTransposesTilesAndTail) {
  for (int64_t n : {1, 15, 16, 17, 40, 64}) {
    for (int valid : {16, 7}) {
      std::vector<float> src(n * 16);
      for (int64_t i = 0; i < n * 16; ++i) src[i] = float(i);
      std::vector<std::vector<float>> dst(16, std::vector<float>(n + 3, -1.0f));
      float* d[16];
      for (int b = 0; b < 16; ++b) d[b] = dst[b].data();
      lanes::unpack_at(src.data(), n, valid, d, 3);
      for (int b = 0; b < 16; ++b) {
        for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(dst[b][i], -1.0f);
        for (int64_t i = 0; i < n; ++i) {
          EXPECT_EQ(dst[b][3 + i], b < valid ? src[i * 16 + b] : -1.0f)
              << "n=" << n << " b=" << b << " i=" << i;
        }
      }
    }
  }
}

// The documented order of lanes::dot, written out in scalar code: 16 partial
// sums (lane i sums elements i, i + 16, ...), the tree lanes[j] += lanes[j + w]
// for w = 8, 4, 2, 1, then the remainder in order.
float reference_dot(const float* a, const float* b, int64_t n) {
  float lane[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int q = 0; q < 16; ++q) lane[q] += a[i + q] * b[i + q];
  }
  for (int w = 8; w >= 1; w >>= 1) {
    for (int j = 0; j < w; ++j) lane[j] += lane[j + w];
  }
  float s = lane[0];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

TEST(Lanes, GemvHasDotsOrderOnEveryRowBlockAndTail) {
  std::mt19937 rng(7);
  // Magnitudes spread over many binades, so a different summation order gives different bits.
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-12, 12);
  int sensitive =
      0;  // rows where a plain left-to-right sum differs: the test can tell orders apart
  for (int64_t rows : {1, 15, 16, 17, 33, 128}) {
    for (int64_t n : {1, 15, 16, 17, 256, 300}) {
      std::vector<float> W(rows * n), x(n), bias(rows), out(rows), out_nb(rows);
      for (auto& v : W) v = std::ldexp(mant(rng), expo(rng));
      for (auto& v : x) v = std::ldexp(mant(rng), expo(rng));
      for (auto& v : bias) v = mant(rng);
      lanes::gemv(W.data(), bias.data(), x.data(), rows, n, out.data());
      lanes::gemv(W.data(), nullptr, x.data(), rows, n, out_nb.data());
      for (int64_t r = 0; r < rows; ++r) {
        const float ref = reference_dot(&W[r * n], x.data(), n);
        EXPECT_EQ(out[r], bias[r] + ref) << "rows=" << rows << " n=" << n << " r=" << r;
        EXPECT_EQ(out_nb[r], 0.0f + ref) << "rows=" << rows << " n=" << n << " r=" << r;
        EXPECT_EQ(lanes::dot(&W[r * n], x.data(), n), ref);
        float plain = 0;
        for (int64_t i = 0; i < n; ++i) plain += W[r * n + i] * x[i];
        sensitive += plain != ref;
      }
    }
  }
  EXPECT_GT(sensitive, 100);
}

TEST(Lanes, GemvBatchIsGemvOnEachInput) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-12, 12);
  for (int64_t nx : {1, 2, 3, 4, 5, 7, 9, 16, 19}) {
    for (int64_t rows : {1, 5, 16, 17, 64}) {
      for (int64_t n : {1, 16, 17, 256}) {
        std::vector<float> W(rows * n), bias(rows), xbuf(nx * n), out(nx * rows), one(rows);
        for (auto& v : W) v = std::ldexp(mant(rng), expo(rng));
        for (auto& v : xbuf) v = std::ldexp(mant(rng), expo(rng));
        for (auto& v : bias) v = mant(rng);
        std::vector<const float*> xs(nx);
        for (int64_t j = 0; j < nx; ++j) xs[j] = &xbuf[j * n];
        lanes::gemv_batch(W.data(), bias.data(), xs.data(), nx, rows, n, out.data());
        for (int64_t j = 0; j < nx; ++j) {
          for (int64_t r = 0; r < rows; ++r) {
            EXPECT_EQ(out[j * rows + r], bias[r] + reference_dot(&W[r * n], xs[j], n))
                << "nx=" << nx << " rows=" << rows << " n=" << n << " j=" << j << " r=" << r;
          }
        }
      }
    }
  }
}

// top_k_indices against a full sort: higher value first, lower id on ties,
// with many exact ties and the seeded path (n >= 64, a remainder past the
// last whole stripe) as well as the short one.
TEST(TopK, MatchesAFullSortWithTiesAndRemainders) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t n : {8, 40, 64, 70, 128, 160, 256, 1000}) {
    for (int64_t k : {1, 2, 6, 8, 16, 33, 64}) {
      if (k > n) continue;
      for (float step : {0.0f, 0.25f, 4.0f}) {
        for (int rep = 0; rep < 20; ++rep) {
          std::vector<float> x(n);
          for (auto& v : x) v = step > 0 ? std::round(nd(rng) / step) * step : nd(rng);
          std::vector<int32_t> all(n);
          std::iota(all.begin(), all.end(), 0);
          const auto r = ranked(x, all);
          std::vector<int32_t> got(k, -1);
          top_k_indices(x.data(), n, k, nullptr, got.data());
          EXPECT_EQ(got, std::vector<int32_t>(r.begin(), r.begin() + k))
              << "n=" << n << " k=" << k << " step=" << step;
        }
      }
    }
  }
}

}  // namespace
}  // namespace moebench
