// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// SMoE: fixed-N versus adaptive replacement counts, the cache filled from
// prefill frequencies, the prefill CPU-vs-GPU rule, and the GPU waiting for
// its layer's pending cache update.

#include <gtest/gtest.h>

#include "baselines/smoe/components.h"
#include "baselines/testing.h"

namespace moebench {
namespace {

// A predictor returning fixed scores.
class FixedPredictor : public Predictor {
 public:
  explicit FixedPredictor(std::vector<float> s) : s_(std::move(s)) {}
  void predict(const Context&, int32_t, int64_t, std::span<float> scores) override {
    for (size_t i = 0; i < s_.size(); ++i) scores[i] += s_[i];
  }

 private:
  std::vector<float> s_;
};

struct Hook {
  ModelSpec model = testing::tiny_model(1, 8, 4);
  HardwareProfile hw = testing::round_hardware();
  CostModel cost{model, hw};
  Residency res{1, 8, 4, false};
  TraceInfo info;
  std::unique_ptr<MemoryTraceSource> src;
  std::unique_ptr<RunRouting> run;
  std::unique_ptr<StepRouting> step;
  Context ctx;
  Hook() {
    src = std::make_unique<MemoryTraceSource>(testing::routing(1, 8, 4, {{{0, 1, 2, 3}}}));
    run = std::make_unique<RunRouting>(*src, 0);
    step = std::make_unique<StepRouting>(*run, Phase::kDecode);
    step->add(0, 0);
    step->reveal(0);
    ctx.phase = Phase::kDecode;
    ctx.layer = 0;
    ctx.moe_layers = 1;
    ctx.experts = 8;
    ctx.top_k = 4;
    ctx.routing = step.get();
    ctx.residency = &res;
    ctx.cost = &cost;
  }
};

std::vector<std::pair<int32_t, int64_t>> requests(const std::vector<PrefetchRequest>& r) {
  std::vector<std::pair<int32_t, int64_t>> v;
  for (const auto& x : r) v.push_back({x.expert, x.target_step_offset});
  return v;
}

TEST(SmoeTokenWise, FixedNVersusAdaptiveReplacementCounts) {
  // Predicted top-4 by score: e2 (cached), e5, e6, e7; e0, e1 cached, not predicted.
  Hook h;
  h.res.place(0, 2);
  h.res.place(0, 0);
  h.res.place(0, 1);
  FixedPredictor pred({0.1f, 0.2f, 0.9f, 0.0f, 0.0f, 0.8f, 0.7f, 0.6f});
  for (const std::string mode : {"fixed-N", "adaptive"}) {
    TokenWisePrefetcher::Params p;
    p.n = 2;
    p.mode = mode;
    TokenWisePrefetcher tw(p);
    tw.set_predictor(&pred);
    std::vector<PrefetchRequest> out;
    tw.after_gpu_experts(h.ctx, out);
    if (mode == "fixed-N") {
      // The cached prediction e2 is held; the two best uncached predictions move: e5, e6.
      EXPECT_EQ(requests(out), (std::vector<std::pair<int32_t, int64_t>>{{2, 1}, {5, 1}, {6, 1}}));
    } else {
      // Only the top-2 predictions (e2, e5) are considered: one expert moves.
      EXPECT_EQ(requests(out), (std::vector<std::pair<int32_t, int64_t>>{{2, 1}, {5, 1}}));
    }
  }
}

TEST(SmoeTokenWise, FixedNMovesExactlyNWhenTheTopKIsCached) {
  // Ranking: e2 .9, e0 .85, e1 .8, e5 .7, e6 .6, e7 .5, e3 .1, e4 0. All 4
  // slots hold the top-4 (e2, e0, e1, e5): the earlier rule, drawing only
  // from the top-k, moved nothing. Fixed-N with N = 2 moves the two
  // best-ranked uncached experts, e6 and e7, and holds the best-ranked
  // cached predictions only while two victims remain: e2 and e0 are held,
  // e1 and e5 are left to the cache's LFU choice.
  Hook h;
  for (int32_t e : {0, 1, 2, 5}) h.res.place(0, e);
  FixedPredictor pred({0.85f, 0.8f, 0.9f, 0.1f, 0.0f, 0.7f, 0.6f, 0.5f});
  TokenWisePrefetcher::Params p;
  p.n = 2;
  TokenWisePrefetcher tw(p);
  tw.set_predictor(&pred);
  std::vector<PrefetchRequest> out;
  tw.after_gpu_experts(h.ctx, out);
  EXPECT_EQ(requests(out),
            (std::vector<std::pair<int32_t, int64_t>>{{2, 1}, {0, 1}, {6, 1}, {7, 1}}));
  // A pinned expert (the token's, still in use) cannot be a victim and is
  // held for free: with e5 pinned, three are evictable, two must go, so only
  // the best-ranked of them (e2) is held.
  h.res.pin(0, 5);
  out.clear();
  tw.after_gpu_experts(h.ctx, out);
  EXPECT_EQ(requests(out),
            (std::vector<std::pair<int32_t, int64_t>>{{2, 1}, {5, 1}, {6, 1}, {7, 1}}));
  // e0 pinned too: e2 and e1 are the two victims, nothing evictable is held.
  h.res.pin(0, 0);
  out.clear();
  tw.after_gpu_experts(h.ctx, out);
  EXPECT_EQ(requests(out),
            (std::vector<std::pair<int32_t, int64_t>>{{0, 1}, {5, 1}, {6, 1}, {7, 1}}));
  // Adaptive with N = 2 considers the top-2 only (e2, e0), both cached:
  // nothing moves, and every cached prediction is held.
  p.mode = "adaptive";
  TokenWisePrefetcher ad(p);
  ad.set_predictor(&pred);
  out.clear();
  ad.after_gpu_experts(h.ctx, out);
  EXPECT_EQ(requests(out),
            (std::vector<std::pair<int32_t, int64_t>>{{2, 1}, {0, 1}, {1, 1}, {5, 1}}));
}

TEST(SmoeTokenWise, NothingInPrefill) {
  Hook h;
  h.ctx.phase = Phase::kPrefill;
  FixedPredictor pred(std::vector<float>(8, 1.0f));
  TokenWisePrefetcher tw(TokenWisePrefetcher::Params{});
  tw.set_predictor(&pred);
  std::vector<PrefetchRequest> out;
  tw.after_gpu_experts(h.ctx, out);
  EXPECT_TRUE(out.empty());
}

TEST(SmoeCache, FilledFromPrefillFrequenciesAfterPrefill) {
  Hook h;
  h.res.place(0, 6);  // one resident expert that the prefill never used
  SmoeLfuCache::Params p;
  SmoeLfuCache c(p);
  c.reset(CacheSetup{1, 8, 4, false});
  h.ctx.phase = Phase::kPrefill;
  std::vector<ActiveExpert> act = {
      {0, 5, 1.0f, 0}, {1, 1, 1.0f, 0}, {3, 9, 1.0f, 0}, {4, 2, 1.0f, 0}, {7, 4, 1.0f, 0}};
  h.ctx.active = act;
  c.on_gate(h.ctx);
  std::vector<CachePolicy::Swap> sw;
  c.after_step(h.ctx, sw);
  // 4 slots, 1 used by e6: three free slots take e3 (9), e0 (5), e7 (4); e4 (2) replaces e6.
  ASSERT_EQ(sw.size(), 4u);
  EXPECT_EQ(sw[0].incoming.expert, 3);
  EXPECT_EQ(sw[0].outgoing.layer, -1);
  EXPECT_EQ(sw[1].incoming.expert, 0);
  EXPECT_EQ(sw[2].incoming.expert, 7);
  EXPECT_EQ(sw[3].incoming.expert, 4);
  EXPECT_EQ(sw[3].outgoing.expert, 6);
  // Decode steps never refill.
  h.ctx.phase = Phase::kDecode;
  sw.clear();
  c.after_step(h.ctx, sw);
  EXPECT_TRUE(sw.empty());
}

TEST(SmoeAssigner, PrefillRuleAndDecodeByResidency) {
  // Round hardware: CPU 10 us per token (table 1, 2, 4 tokens), GPU 2 us, copy 5 us.
  Hook h;
  h.res.place(0, 1);
  SmoeAssigner::Params p;
  SmoeAssigner a(p);
  std::vector<ActiveExpert> act = {{0, 1, 1.0f, 0}, {1, 1, 1.0f, 0}, {2, 4, 1.0f, 0}};
  h.ctx.active = act;
  h.ctx.phase = Phase::kPrefill;
  LayerPlan plan;
  a.plan(h.ctx, plan);
  // e0: CPU 10 > GPU 2 + copy 5 -> GPU, loaded; e1 cached: 10 > 2 -> GPU; e2: 40 > 7 -> GPU,
  // loaded. Cached first, then loaded by load (e2 before e0).
  EXPECT_EQ(plan.gpu, (std::vector<int32_t>{1, 2, 0}));
  EXPECT_EQ(plan.load, (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(plan.staging_buffers, 2);
  plan.clear();
  h.ctx.phase = Phase::kDecode;
  a.plan(h.ctx, plan);
  EXPECT_EQ(plan.gpu, (std::vector<int32_t>{1}));
  EXPECT_EQ(plan.cpu, (std::vector<int32_t>{0, 2}));
  EXPECT_TRUE(plan.load.empty());
  EXPECT_TRUE(plan.wait_layer_transfers);
}

TEST(SmoeAssigner, GpuMaxCapsTheCachedExpertsOnTheGpu) {
  // Decode, e1, e2, e3 cached and active with 1, 3, 2 tokens; gpu_max 2 (the
  // script's gpu_compute_max_num): the two with most tokens (e2, e3) on the
  // GPU, e1 joins the uncached e0 on the CPU.
  Hook h;
  h.res.place(0, 1);
  h.res.place(0, 2);
  h.res.place(0, 3);
  SmoeAssigner::Params p;
  p.gpu_max = 2;
  SmoeAssigner a(p);
  std::vector<ActiveExpert> act = {
      {0, 1, 1.0f, 0}, {1, 1, 1.0f, 0}, {2, 3, 1.0f, 0}, {3, 2, 1.0f, 0}};
  h.ctx.active = act;
  LayerPlan plan;
  a.plan(h.ctx, plan);
  EXPECT_EQ(plan.gpu, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(plan.cpu, (std::vector<int32_t>{0, 1}));
}

TEST(SmoeTokenWise, StartLayerSkipsTheLayersBelowIt) {
  Hook h;
  FixedPredictor pred({0.1f, 0.2f, 0.9f, 0.0f, 0.0f, 0.8f, 0.7f, 0.6f});
  TokenWisePrefetcher::Params p;
  p.start_layer = 1;  // the hook's only MoE layer is 0
  TokenWisePrefetcher skip(p);
  skip.set_predictor(&pred);
  std::vector<PrefetchRequest> out;
  skip.after_gpu_experts(h.ctx, out);
  EXPECT_TRUE(out.empty());
  p.start_layer = 0;
  TokenWisePrefetcher all(p);
  all.set_predictor(&pred);
  all.after_gpu_experts(h.ctx, out);
  EXPECT_EQ(out.size(), 2u);  // N = 2 loads, nothing cached to hold
}

// The GPU waits for a copy into its layer that it does not even use.
class OneShotPrefetch : public Prefetcher {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.prefetcher";
  };
  using Params = EmptyParams<Tag>;
  explicit OneShotPrefetch(const Params&) {}
  void after_step(const Context& ctx, std::vector<PrefetchRequest>& out) override {
    if (ctx.step == 0) out.push_back({1, 3, 1});  // expert 3 of layer 1, for the next step
  }
};

TEST(SmoeEngine, GpuWaitsForTheLayersPendingCacheUpdate) {
  Registry reg;
  register_baselines(reg);
  reg.add<Prefetcher, OneShotPrefetch>("prefetcher", "one-shot", "test");
  const ModelSpec m = testing::tiny_model(2, 4, 1);
  // Step 0 and 1: layer 0 uses e0, layer 1 uses e1 (cached from the start).
  const auto src = testing::routing(2, 4, 1, {{{0}, {1}}, {{0}, {1}}});
  StrategySpec s = testing::strategy("smoe", "lru", "uniform", 2);
  s.prefetcher = testing::component("one-shot");
  s.residency.admit_on_demand = false;
  const auto r = testing::run(m, testing::round_hardware(), s, src, true, &reg);
  // Step 0: layer 0 [0,1] att, e0 GPU [1,3]; layer 1 att [3,4], e1 [4,6]; end 6.
  // After step 0 the copy of (1, 3) starts at 6 and ends at 11 (the lm head costs nothing).
  // Step 1: layer 0 att [6,7], e0 [7,9]; layer 1 att [9,10]; e1 waits for the copy: [11,13].
  const auto gpu = testing::tasks(r, Lane::kGpu, TaskKind::kGpuExpert);
  ASSERT_EQ(gpu.size(), 4u);
  EXPECT_DOUBLE_EQ(gpu[3].start_ns, 11000.0);
  EXPECT_DOUBLE_EQ(gpu[3].end_ns, 13000.0);
  EXPECT_NEAR(r.metrics.bd_wait_cache_ns, 1000.0, 1e-9);
}

}  // namespace
}  // namespace moebench
