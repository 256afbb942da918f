// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Fate: the ARC expert cache, hand-computed list by list; the
// shallow-favoring split of the budget (Fate's code's rule); and in the
// engine, that ARC's victims stay in their own layer of a global pool, so
// the shallow layers placed whole never miss.
#include <cmath>

#include <gtest/gtest.h>

#include "baselines/common/components.h"
#include "baselines/fate/components.h"
#include "baselines/testing.h"

namespace moebench {
namespace {

constexpr int kT1 = 1, kT2 = 2, kB1 = 3, kB2 = 4;

ActiveExpert use(int32_t e) {
  return ActiveExpert{e, 1, 1.0f, 0};
}

TEST(ArcCache, FollowsTheArcListsAndTargetByHand) {
  ArcCache arc(ArcCache::Params{});
  arc.reset(CacheSetup{1, 4, 2, false});
  const Context ctx;
  arc.on_insert(0, 0, ctx);  // placement: T1 = [0, 1], c = 2
  arc.on_insert(0, 1, ctx);
  EXPECT_EQ(arc.list_of(0, 0), kT1);
  arc.on_access(0, use(0), ctx);  // a second use: 0 -> T2
  EXPECT_EQ(arc.list_of(0, 0), kT2);
  // A miss on 2: |T1| = 1 > p = 0, so T1's least recent (1) goes, to B1.
  arc.on_access(0, use(2), ctx);
  std::vector<SlotRef> c = {{0, 0}, {0, 1}};
  ASSERT_EQ(arc.victim(c, {0, 2}, ctx), 1u);
  arc.on_evict(0, 1, ctx);
  arc.on_insert(0, 2, ctx);
  EXPECT_EQ(arc.list_of(0, 1), kB1);
  EXPECT_EQ(arc.list_of(0, 2), kT1);
  // 1 is used again (a B1 hit): p += max(1, |B2| / |B1|) = 1; now |T1| = p,
  // so T2's least recent (0) goes, to B2; 1 enters T2.
  arc.on_access(0, use(1), ctx);
  EXPECT_DOUBLE_EQ(arc.target_t1(0), 1.0);
  c = {{0, 0}, {0, 2}};
  ASSERT_EQ(arc.victim(c, {0, 1}, ctx), 0u);
  arc.on_evict(0, 0, ctx);
  arc.on_insert(0, 1, ctx);
  EXPECT_EQ(arc.list_of(0, 0), kB2);
  EXPECT_EQ(arc.list_of(0, 1), kT2);
  // 0 is used again (a B2 hit): p -= max(1, |B1| / |B2|) = 1 -> 0; |T1| = 1 > 0: 2 goes.
  arc.on_access(0, use(0), ctx);
  EXPECT_DOUBLE_EQ(arc.target_t1(0), 0.0);
  c = {{0, 2}, {0, 1}};
  EXPECT_EQ(arc.victim(c, {0, 0}, ctx), 0u);
}

TEST(ArcCache, FateCodeStepsTargetByTheListSize) {
  ArcCache::Params p;
  p.adapt = "fate-code";
  ArcCache arc(p);
  arc.reset(CacheSetup{1, 6, 3, false});
  const Context ctx;
  for (int32_t e = 0; e < 3; ++e) arc.on_insert(0, e, ctx);  // T1 = [0, 1, 2], c = 3
  arc.on_evict(0, 0, ctx);                                   // B1 = [0]
  arc.on_insert(0, 3, ctx);                                  // T1 = [1, 2, 3]
  arc.on_access(0, use(0), ctx);  // B1 hit: p += min(|T1|, c) = 3 (classic: 1)
  EXPECT_DOUBLE_EQ(arc.target_t1(0), 3.0);
}

TEST(ArcCache, TakesTheVictimInTheIncomingExpertsLayer) {
  ArcCache arc(ArcCache::Params{});
  arc.reset(CacheSetup{2, 4, 2, true});
  const Context ctx;
  arc.on_insert(1, 0, ctx);  // older, but in layer 1
  arc.on_insert(0, 0, ctx);
  arc.on_insert(0, 1, ctx);
  const std::vector<SlotRef> c = {{1, 0}, {0, 0}, {0, 1}};
  EXPECT_EQ(arc.victim(c, {0, 2}, ctx), 1u);  // layer 0's least recent, not layer 1's
}

TEST(ShallowFirstPlacement, FollowsFatesBudgetSplit) {
  using V = std::vector<int64_t>;
  // 6 layers of 4 experts. 12 slots < 4 whole layers: whole layers from the first.
  EXPECT_EQ(ShallowFirstPlacement::shares(6, 4, 12, 4), (V{4, 4, 4, 0, 0, 0}));
  EXPECT_EQ(ShallowFirstPlacement::shares(6, 4, 13, 4), (V{4, 4, 4, 1, 0, 0}));
  // 18 slots: the first 4 layers whole, (18 - 16) / 2 = 1 for each deeper one.
  EXPECT_EQ(ShallowFirstPlacement::shares(6, 4, 18, 4), (V{4, 4, 4, 4, 1, 1}));
  EXPECT_EQ(ShallowFirstPlacement::shares(6, 4, 12, 2), (V{4, 4, 1, 1, 1, 1}));
  EXPECT_EQ(ShallowFirstPlacement::shares(6, 4, 23, 2), (V{4, 4, 3, 3, 3, 3}));  // one left over
  EXPECT_EQ(ShallowFirstPlacement::shares(6, 4, 99, 4), (V{4, 4, 4, 4, 4, 4}));
}

TEST(FateInTheEngine, ShallowLayersPlacedWholeNeverMissAndDeeperLayersKeepTheirShare) {
  // 3 MoE layers of 4 experts, top-1; 2 slots per layer in a global pool
  // (6 in all): layer 0 whole, layers 1 and 2 one expert each.
  const ModelSpec m = testing::tiny_model(3, 4, 1);
  const HardwareProfile hw = testing::round_hardware();
  StrategySpec s = testing::strategy("gpu-ondemand", "arc", "shallow-first", 2);
  s.placement.params.set("shallow_layers", cfg::Value::integer(1), Where{"<test>"});
  s.residency.pool = "global";
  s.residency.admit_on_demand = true;
  s.residency.pin_active_token = true;
  std::vector<std::vector<std::vector<int32_t>>> ids;
  for (int t = 0; t < 8; ++t) ids.push_back({{t % 4}, {(t + 1) % 4}, {(3 * t) % 4}});
  const SimulationResult r = testing::run(m, hw, s, testing::routing(3, 4, 1, ids));
  int deep = 0;
  for (const auto& t : testing::tasks(r, Lane::kH2D, TaskKind::kDemandLoad)) {
    EXPECT_NE(t.layer, 0);  // layer 0's experts are never evicted for a deeper layer's
    ++deep;
  }
  // Layers 1 and 2 hold one expert each (expert 0 placed): layer 1 routes
  // 1,2,3,0,1,2,3,0 (8 misses), layer 2 routes 0,3,2,1,0,3,2,1 (7).
  EXPECT_EQ(deep, 15);
}

// Per-layer cache shares (the placement's layer_shares) in a per-layer pool:
// the same split, layer 0 never missing, and no layer above its share.
TEST(FateInTheEngine, PerLayerSharesOfAPerLayerPool) {
  const ModelSpec m = testing::tiny_model(3, 4, 1);
  const HardwareProfile hw = testing::round_hardware();
  StrategySpec s = testing::strategy("gpu-ondemand", "arc", "shallow-first", 2);
  s.placement.params.set("shallow_layers", cfg::Value::integer(1), Where{"<test>"});
  s.residency.admit_on_demand = true;
  s.residency.pin_active_token = true;
  std::vector<std::vector<std::vector<int32_t>>> ids;
  for (int t = 0; t < 8; ++t) ids.push_back({{t % 4}, {(t + 1) % 4}, {(3 * t) % 4}});
  const SimulationResult r = testing::run(m, hw, s, testing::routing(3, 4, 1, ids));
  int deep = 0;
  for (const auto& t : testing::tasks(r, Lane::kH2D, TaskKind::kDemandLoad)) {
    EXPECT_NE(t.layer, 0);
    ++deep;
  }
  EXPECT_EQ(deep, 15);
  EXPECT_EQ(r.metrics.gpu_cache_slots, 3 * 2);  // the budget: 3 layers x 2 slots
}

// A prefetch buffer beside the cache: with "arc" (admits_prefetched) a
// prefetched expert its layer used enters the cache share when the layer is
// done, evicting ARC's victim; with LRU it leaves, and is prefetched again.
// 2 layers of 4 experts, top-1, one slot per layer (experts 0 placed);
// layer 1 routes 1, 1, 2; the oracle predicts layer 1 from layer 0.
int64_t prefetch_loads_with(const std::string& cache, int64_t* admitted) {
  const ModelSpec m = testing::tiny_model(2, 4, 1);
  const HardwareProfile hw = testing::round_hardware();
  StrategySpec s = testing::strategy("gpu-ondemand", cache, "uniform", 1);
  s.prefetcher = testing::component("next-layer");
  s.prefetcher.params.set("size", cfg::Value::integer(1), Where{"<test>"});
  s.predictor = testing::component("oracle");
  s.residency.prefetch_buffer = true;
  s.residency.admit_on_demand = true;
  s.residency.late_prefetch = "issue";
  const SimulationResult r =
      testing::run(m, hw, s, testing::routing(2, 4, 1, {{{0}, {1}}, {{0}, {1}}, {{0}, {2}}}));
  EXPECT_TRUE(testing::tasks(r, Lane::kH2D, TaskKind::kDemandLoad).empty()) << cache;
  *admitted = r.metrics.prefetch_admitted;
  return r.metrics.prefetch_loads;
}

TEST(FateInTheEngine, ArcTakesAUsedPrefetchIntoTheCache) {
  int64_t admitted = -1;
  EXPECT_EQ(prefetch_loads_with("arc", &admitted), 2);  // expert 1 stays for the second token
  EXPECT_EQ(admitted, 2);                               // 1 (evicting 0), then 2 (evicting 1)
  EXPECT_EQ(prefetch_loads_with("lru", &admitted), 3);  // 1 leaves the buffer: loaded again
  EXPECT_EQ(admitted, 0);
}

// Fate's INT2 copies of its least-voted prefetches (next-layer's
// reduced_share, residency.reduced_copy_ratio): 2 layers of 4 experts, top-2,
// two slots per layer (experts 0 and 1 placed); the token's layer 1 uses
// experts 2 and 3, which the oracle predicts at layer 0 with one vote each.
// At share 0.5 the least voted (the tie to the higher index: expert 3) is
// copied reduced: with a 1 us latency 1 + 0.6 x 4 = 3.4 us against the
// table's 5 us, and 0.6 of the bytes.
TEST(FateInTheEngine, LeastVotedPrefetchesAreCopiedReduced) {
  const ModelSpec m = testing::tiny_model(2, 4, 2);
  HardwareProfile hw = testing::round_hardware();
  hw.link.latency_us = 1;
  StrategySpec s = testing::strategy("gpu-ondemand", "arc", "uniform", 2);
  s.prefetcher = testing::component("next-layer");
  s.prefetcher.params.set("size", cfg::Value::integer(2), Where{"<test>"});
  s.prefetcher.params.set("reduced_share", cfg::Value::number(0.5), Where{"<test>"});
  s.predictor = testing::component("oracle");
  s.residency.prefetch_buffer = true;
  s.residency.admit_on_demand = true;
  s.residency.late_prefetch = "issue";
  s.residency.reduced_copy_ratio = 0.6;
  const SimulationResult r = testing::run(m, hw, s, testing::routing(2, 4, 2, {{{0, 1}, {2, 3}}}));
  const auto loads = testing::tasks(r, Lane::kH2D, TaskKind::kPrefetchLoad);
  ASSERT_EQ(loads.size(), 2u);
  for (const auto& t : loads)
    EXPECT_NEAR(t.end_ns - t.start_ns, t.expert == 3 ? 3400.0 : 5000.0, 1e-6) << t.expert;
  EXPECT_EQ(r.metrics.reduced_copies, 1);
  EXPECT_EQ(r.metrics.demand_loads, 0);
  const int64_t bytes = m.expert_bytes();
  EXPECT_EQ(r.metrics.h2d_bytes, bytes + std::llround(0.6 * double(bytes)));
}

// The core refuses per-layer cache shares beyond the budget (or of the wrong
// count, or a share over a layer's experts), naming the placement.
class OverBudgetShares : public Placement {
 public:
  using Params = EmptyParams<NoneTag>;
  explicit OverBudgetShares(const Params&) {}
  std::vector<int64_t> layer_shares(const PlacementContext&) override { return {4, 4, 4}; }
  void place(const PlacementContext&, std::vector<SlotRef>&) override {}
};

TEST(FateInTheEngine, SharesOverTheBudgetAreRefused) {
  Registry reg;
  register_baselines(reg);
  reg.add<Placement, OverBudgetShares>("placement", "over-budget", "test");
  StrategySpec s = testing::strategy("gpu-ondemand", "arc", "over-budget", 2);  // 3 x 2 = 6 < 12
  try {
    testing::run(testing::tiny_model(3, 4, 1), testing::round_hardware(), s,
                 testing::routing(3, 4, 1, {{{0}, {0}, {0}}}), true, &reg);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("placement 'over-budget'"), std::string::npos) << what;
    EXPECT_NE(what.find("6 in all at most, in a per-layer pool; found 3 shares, 12 in all"),
              std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace moebench
