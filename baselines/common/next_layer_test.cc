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
  Context ctx;
  ctx.layer = 0;
  ctx.moe_layers = 2;
  ctx.experts = 6;
  ctx.residency = &res;
  ctx.cost = &cost;
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

}  // namespace
}  // namespace moebench
