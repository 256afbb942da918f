// route_block (16 tokens at once, vector code) against a brute-force
// reference of the same router on its own scores, and against route()
// (one token at a time).

#include "core/trace/routing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/util/lanes16.h"

namespace moebench {
namespace {

RoutingConfig config(RoutingFunction f, int64_t E, int64_t k, int64_t G = 1, int64_t tg = 1, bool norm = false,
                     double scale = 1.0) {
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
  std::sort(v.begin(), v.end(), [&](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
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
    gs[g] = c.function == RoutingFunction::kSigmoidGroupedBias && per > 1 ? scores[r[0]] + scores[r[1]]
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
  const std::string what = ::testing::PrintToString(std::make_tuple(int(c.function), E, k, c.n_group,
                                                                    c.topk_group, valid, seed, step));
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
  for (int b = valid; b < 16; ++b) EXPECT_EQ(ids[b][0], -7) << "lane past `valid` written: " << what;
}

TEST(RouteBlock, MatchesBruteForceReferenceWithManyTies) {
  using F = RoutingFunction;
  const std::vector<RoutingConfig> configs = {
      config(F::kSoftmaxTopK, 8, 2),                      // Mixtral
      config(F::kSoftmaxTopK, 60, 4),                     // E not a multiple of 16
      config(F::kSoftmaxTopK, 64, 6, 1, 1, true),         // DeepSeek-V2-Lite-like, normalised
      config(F::kSoftmaxTopK, 128, 8, 1, 1, true),        // Qwen3
      config(F::kSoftmaxGroupLimited, 160, 6, 8, 3, false, 16.0),  // DeepSeek-V2
      config(F::kSigmoidGroupedBias, 256, 8, 8, 4, true, 2.5),     // DeepSeek-V3
      config(F::kSigmoidGroupedBias, 64, 8, 8, 2, true),  // fewer group seeds (4) than k
      config(F::kSoftmaxGroupLimited, 64, 4, 4, 1),       // one group of 16 per token
      config(F::kSigmoidGroupedBias, 48, 3, 16, 2),       // 3 experts per group
  };
  for (const auto& c : configs) {
    for (int valid : {16, 5, 1}) {
      for (uint32_t seed : {1u, 2u, 3u}) {
        check_block(c, valid, seed, 0.0f);   // continuous: ties are rare
        check_block(c, valid, seed, 0.5f);   // grid: ties everywhere
        check_block(c, valid, seed, 100.0f); // almost all logits 0: nearly all tied
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
          EXPECT_EQ(dst[b][3 + i], b < valid ? src[i * 16 + b] : -1.0f) << "n=" << n << " b=" << b << " i=" << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace moebench
