// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The next-layer prefetcher loads the uncached ones among the predictor's
// top `size` experts, never lower-ranked experts in their place.
#include <gtest/gtest.h>

#include "baselines/common/components.h"
#include "baselines/testing.h"
#include "core/engine/cost_model.h"
#include "core/engine/residency.h"

namespace moebench {
namespace {

class FixedScores : public Predictor {
 public:
  std::vector<float> s;
  void predict(const Context&, int32_t, int64_t, std::span<float> out) override {
    for (size_t i = 0; i < out.size(); ++i) out[i] += s[i];
  }
};

// Layer 0's gate in a model of two MoE layers of six experts.
Context layer0_of_two(const Residency& res, const CostModel& cost) {
  Context ctx;
  ctx.layer = 0;
  ctx.moe_layers = 2;
  ctx.experts = 6;
  ctx.residency = &res;
  ctx.cost = &cost;
  return ctx;
}

TEST(NextLayerPrefetcher, LoadsOnlyTheUncachedAmongTheTopSize) {
  const ModelSpec m = testing::tiny_model(2, 6, 2);
  const HardwareProfile hw =
      testing::round_hardware();  // CostModel keeps a reference: a named profile
  const CostModel cost(m, hw);
  Residency res(2, 6, 3, false);
  res.place(1, 4);  // layer 1: the best-scored expert is cached
  NextLayerPrefetcher::Params p;
  p.size = 2;
  NextLayerPrefetcher pf(p);
  FixedScores pred;
  pred.s = {0.f, 1.f, 2.f, 0.5f, 9.f, 3.f};  // ranking: e4, e5, e2, e1, e3
  pf.set_predictor(&pred);
  Context ctx = layer0_of_two(res, cost);
  std::vector<PrefetchRequest> out;
  pf.after_gate(ctx, out);
  ASSERT_EQ(out.size(), 1u);  // e4 is cached: only e5, not e2 in its place
  EXPECT_EQ(out[0].layer, 1);
  EXPECT_EQ(out[0].expert, 5);
  res.place(1, 5);
  out.clear();
  pf.after_gate(ctx, out);
  EXPECT_TRUE(out.empty());  // both of the top 2 are cached
  ctx.layer = 1;             // no layer after the last
  pf.after_gate(ctx, out);
  EXPECT_TRUE(out.empty());
}

// Fate's popularity-aware precision (reduced_share): predicted workloads 9,
// 3, 2, 1, 0.5 (e4, e5, e2, e1, e3; e0 none) add up to 15.5; from the least
// predicted up, e3, e1 and e2 add up to 3.5, within 30% (4.65), and e5 would
// make 6.5: those three are asked reduced, e4 and e5 full.
TEST(NextLayerPrefetcher, AsksTheLeastPredictedShareReduced) {
  const ModelSpec m = testing::tiny_model(2, 6, 2);
  const HardwareProfile hw = testing::round_hardware();
  const CostModel cost(m, hw);
  Residency res(2, 6, 6, false);
  NextLayerPrefetcher::Params p;
  p.size = 6;
  p.reduced_share = 0.3;
  NextLayerPrefetcher pf(p);
  EXPECT_TRUE(pf.requests_reduced());
  FixedScores pred;
  pred.s = {0.f, 1.f, 2.f, 0.5f, 9.f, 3.f};
  pf.set_predictor(&pred);
  Context ctx = layer0_of_two(res, cost);
  std::vector<PrefetchRequest> out;
  pf.after_gate(ctx, out);
  ASSERT_EQ(out.size(), 5u);
  const std::vector<std::pair<int32_t, bool>> want = {
      {4, false}, {5, false}, {2, true}, {1, true}, {3, true}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(out[i].expert, want[i].first) << i;
    EXPECT_EQ(out[i].reduced, want[i].second) << "expert " << out[i].expert;
  }
  // A cached expert's votes still count in the layer's total: with e2 cached
  // the same three are the low share and e2 is not asked for.
  res.place(1, 2);
  out.clear();
  pf.after_gate(ctx, out);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_FALSE(out[1].reduced);  // e5
  EXPECT_TRUE(out[2].reduced);   // e1
  // Share 0: nothing reduced.
  NextLayerPrefetcher::Params full = p;
  full.reduced_share = 0.0;
  NextLayerPrefetcher pf0(full);
  EXPECT_FALSE(pf0.requests_reduced());
  pf0.set_predictor(&pred);
  out.clear();
  pf0.after_gate(ctx, out);
  for (const auto& r : out) EXPECT_FALSE(r.reduced) << "expert " << r.expert;
}

}  // namespace
}  // namespace moebench
