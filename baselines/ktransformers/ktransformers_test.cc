// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// KTransformers' Expert Deferral: which experts each rule defers, the
// n_deferred heuristic, and the deferral equations end to end (which layer
// receives which expert's output).

#include <gtest/gtest.h>

#include "baselines/common/components.h"
#include "baselines/ktransformers/components.h"
#include "baselines/testing.h"

namespace moebench {
namespace {

constexpr double us = 1000.0;

// Two tokens (batch of 2 sequences), 8 experts, top-4, one layer of three.
struct BatchHook {
  ModelSpec model = testing::tiny_model(3, 8, 4);
  HardwareProfile hw = testing::round_hardware();
  CostModel cost{model, hw};
  Residency res{3, 8, 1, false};
  MemoryTraceSource src;
  std::unique_ptr<RunRouting> run;
  std::unique_ptr<StepRouting> step;
  std::vector<ActiveExpert> active;
  Context ctx;
  static MemoryTraceSource make() {
    TraceInfo info;
    info.model_name = "tiny";
    info.moe_layers = 3;
    info.routing.experts = 8;
    info.routing.top_k = 4;
    info.sequences = {{0, 1}, {0, 1}};
    MemoryTraceSource s(info);
    // Token A ranks 0,1,2,3; token B ranks 2,4,5,0.
    const std::vector<std::vector<int32_t>> tokens = {{0, 1, 2, 3}, {2, 4, 5, 0}};
    for (size_t q = 0; q < tokens.size(); ++q) {
      TokenRecord r;
      for (int l = 0; l < 3; ++l) {
        r.ids.insert(r.ids.end(), tokens[q].begin(), tokens[q].end());
        r.weights.insert(r.weights.end(), {0.4f, 0.3f, 0.2f, 0.1f});
      }
      s.add(int64_t(q), r);
    }
    return s;
  }
  BatchHook() : src(make()) {
    run = std::make_unique<RunRouting>(src, 0);
    step = std::make_unique<StepRouting>(*run, Phase::kDecode);
    step->add(0, 0);
    step->add(1, 0);
    step->reveal(0);
    // best ranks: e0 0, e1 1, e2 0, e3 3, e4 1, e5 2
    active = {{0, 2, 0.5f, 0}, {1, 1, 0.3f, 1}, {2, 2, 0.6f, 0},
              {3, 1, 0.1f, 3}, {4, 1, 0.3f, 1}, {5, 1, 0.2f, 2}};
    ctx.phase = Phase::kDecode;
    ctx.layer = 0;
    ctx.moe_layers = 3;
    ctx.experts = 8;
    ctx.top_k = 4;
    ctx.routing = step.get();
    ctx.active = active;
    ctx.residency = &res;
    ctx.cost = &cost;
    ctx.layer_nonmoe_ns = 1 * us;
  }
};

std::vector<int32_t> choose(const std::string& rule, int64_t n, BatchHook& h) {
  ExpertDeferral::Params p;
  p.rule = rule;
  p.n_deferred = n;
  ExpertDeferral d(p);
  std::vector<int32_t> out;
  d.choose(h.ctx, out);
  return out;
}

TEST(ExpertDeferral, RankAndUnionProtectDifferOnABatch) {
  BatchHook h;
  // n_deferred = 2: protected band is each token's top-2 ranks.
  // union-protect: protected {0,1} u {2,4}; deferred: every other activated expert: 3, 5.
  EXPECT_EQ(choose("union-protect", 2, h), (std::vector<int32_t>{3, 5}));
  // rank: the 2 experts with the worst best-rank outside the band: e3 (3), e5 (2).
  EXPECT_EQ(choose("rank", 2, h), (std::vector<int32_t>{3, 5}));
  // n_deferred = 3 is capped at k - min_immediate = 2; with n = 1 the band is the top-3:
  // union-protect defers what no token ranks in its top-3: e3 only; rank defers 1 expert: e3.
  EXPECT_EQ(choose("union-protect", 1, h), (std::vector<int32_t>{3}));
  EXPECT_EQ(choose("rank", 1, h), (std::vector<int32_t>{3}));
  EXPECT_EQ(choose("rank", 3, h), choose("rank", 2, h));
}

TEST(ExpertDeferral, RankDefersAtMostNWhenUnionDefersMore) {
  BatchHook h;
  // A third token's worth of spread: mark e1 and e4 (best rank 1) as rank-2 experts.
  h.active[1].best_rank = 2;
  h.active[4].best_rank = 3;
  // rank with n = 2: candidates outside the top-2 band: e3 (3), e4 (3), e5 (2), e1 (2); the 2
  // worst: e4, e3 (ties on rank broken by the smaller combine weight: e3 0.1 before e4 0.3).
  EXPECT_EQ(choose("rank", 2, h), (std::vector<int32_t>{3, 4}));
}

TEST(ExpertDeferral, ResidentExpertsAreNeverDeferred) {
  BatchHook h;
  h.res.place(0, 3);
  EXPECT_EQ(choose("union-protect", 2, h), (std::vector<int32_t>{5}));
}

TEST(ExpertDeferral, HeuristicPicksTheSmallestCountThatFillsTheWindow) {
  BatchHook h;
  ExpertDeferral::Params p;
  ExpertDeferral d(p);
  // Window: next layer's non-MoE 1 us; one CPU expert costs 10 us -> 1 deferred.
  EXPECT_EQ(d.count_for(h.ctx), 1);
  h.ctx.layer_nonmoe_ns = 15 * us;  // two experts (20 us) needed
  EXPECT_EQ(d.count_for(h.ctx), 2);
  h.ctx.layer_nonmoe_ns = 100 * us;  // never filled: capped at k - 2
  EXPECT_EQ(d.count_for(h.ctx), 2);
}

// O_k = I_k + S_k + R_{k-1}^def + R_k^imm: layer l's deferred expert runs on
// the CPU during layer l+1's attention and is combined at layer l+1's
// output; the last layer defers nothing.
TEST(ExpertDeferral, DeferredOutputJoinsTheNextLayer) {
  auto s = testing::strategy("all-cpu");
  s.deferral = testing::component("expert-deferral");
  s.deferral.params = cfg::parse_toml("n_deferred = 1\nmin_immediate = 1\n", "<test>");
  const auto src = testing::routing(3, 4, 2, {{{0, 1}, {2, 3}, {0, 1}}});
  const auto r = testing::run(testing::tiny_model(3), testing::round_hardware(), s, src);
  const auto def = testing::tasks(r, Lane::kCpu, TaskKind::kDeferredExpert);
  const auto att = testing::tasks(r, Lane::kGpu, TaskKind::kAttention);
  ASSERT_EQ(def.size(), 2u);
  // Layer 0 defers its rank-1 expert 1 [11, 21] while layer 1's attention runs [11, 12];
  // layer 1 defers expert 3; layer 2 (last) defers nothing.
  EXPECT_EQ(def[0].layer, 0);
  EXPECT_EQ(def[0].expert, 1);
  EXPECT_DOUBLE_EQ(def[0].start_ns, 11 * us);
  EXPECT_DOUBLE_EQ(att[1].start_ns, 11 * us);
  EXPECT_EQ(def[1].layer, 1);
  EXPECT_EQ(def[1].expert, 3);
  // Layer 2's attention waits for layer 1's immediate output (31) and layer 0's deferred one (21).
  EXPECT_DOUBLE_EQ(att[2].start_ns, 31 * us);
  EXPECT_DOUBLE_EQ(r.metrics.tbt_ms[0], 0.061);
}

// KTransformers' full-GPU fallback (the resident assigner's
// gpu_prefill_threshold): a step of at least the threshold's tokens runs
// every activated expert on the GPU, those not resident copied first and
// not kept. Round testbed: a copy 5 us, a GPU expert 2 us.
SimulationResult run_fallback(int64_t threshold) {
  const ModelSpec m = testing::tiny_model(2, 4, 2);
  const HardwareProfile hw = testing::round_hardware();
  StrategySpec s =
      testing::strategy("resident", "none", "uniform", 1);  // expert 0 resident per layer
  s.residency.admit_on_demand = false;
  s.assigner.params.set("gpu_prefill_threshold", cfg::Value::integer(threshold), Where{"<test>"});
  std::vector<std::vector<std::vector<int32_t>>> ids(5,
                                                     {{0, 1}, {0, 1}});  // 4-token prompt, 1 decode
  return testing::run(m, hw, s, testing::routing(2, 4, 2, ids, /*prompt_len=*/4));
}

TEST(KtFullGpuFallback, ALongStepRunsTheLayerOnTheGpuWithoutKeepingTheCopies) {
  const SimulationResult r = run_fallback(4);
  const auto loads = testing::tasks(r, Lane::kH2D, TaskKind::kDemandLoad);
  ASSERT_EQ(loads.size(), 2u);  // expert 1 of each layer, in the prefill step
  for (const auto& t : loads) {
    EXPECT_EQ(t.step, 0);
    EXPECT_EQ(t.expert, 1);
    EXPECT_DOUBLE_EQ(t.end_ns - t.start_ns, 5 * us);
  }
  for (const auto& t : testing::tasks(r, Lane::kGpu, TaskKind::kGpuExpert)) {
    if (t.step == 0 && t.expert == 1) {
      const auto& load = loads[size_t(t.layer)];
      EXPECT_GE(t.start_ns, load.end_ns);  // computed after its copy landed
    }
  }
  int cpu_prefill = 0, cpu_decode = 0;
  for (const auto& t : testing::tasks(r, Lane::kCpu, TaskKind::kCpuExpert)) {
    cpu_prefill += t.step == 0;
    cpu_decode += t.step == 1 && t.expert == 1;
  }
  EXPECT_EQ(cpu_prefill, 0);  // nothing on the CPU in the long step
  EXPECT_EQ(cpu_decode, 2);   // expert 1 back on the CPU in decode: the copies were not kept
}

TEST(KtFullGpuFallback, ShorterStepsAndThresholdZeroKeepTheSplit) {
  for (int64_t threshold : {int64_t(0), int64_t(5)}) {
    const SimulationResult r = run_fallback(threshold);
    EXPECT_TRUE(testing::tasks(r, Lane::kH2D, TaskKind::kDemandLoad).empty()) << threshold;
    int cpu_prefill = 0;
    for (const auto& t : testing::tasks(r, Lane::kCpu, TaskKind::kCpuExpert))
      cpu_prefill += t.step == 0;
    EXPECT_EQ(cpu_prefill, 2) << threshold;  // expert 1 of each layer on the CPU
  }
}

// KTransformers' dynamic expert update (cache "kt-dynamic"):
// after a layer ran whole on the GPU, its GPU experts become the step's top
// experts by tokens, copied inside GPU memory. One MoE layer of 4 experts,
// top-1, one GPU slot (expert 0); a 4-token prompt routes 2, 2, 2, 1; the
// decode token routes 2.
SimulationResult run_dynamic(const std::string& cache) {
  const ModelSpec m = testing::tiny_model(1, 4, 1);
  const HardwareProfile hw = testing::round_hardware();
  StrategySpec s = testing::strategy("resident", cache, "uniform", 1);
  s.residency.admit_on_demand = false;
  s.assigner.params.set("gpu_prefill_threshold", cfg::Value::integer(4), Where{"<test>"});
  return testing::run(m, hw, s, testing::routing(1, 4, 1, {{{2}}, {{2}}, {{2}}, {{1}}, {{2}}}, 4));
}

TEST(KtDynamicUpdate, ALongPromptsTopExpertsBecomeTheGpuExpertsWithoutALinkCopy) {
  const SimulationResult r = run_dynamic("kt-dynamic");
  EXPECT_EQ(r.metrics.device_swaps, 1);  // expert 2 (3 tokens) in place of expert 0
  const auto loads = testing::tasks(r, Lane::kH2D, TaskKind::kDemandLoad);
  EXPECT_EQ(loads.size(), 2u);  // the prompt's copies of experts 1 and 2, nothing more
  EXPECT_TRUE(testing::tasks(r, Lane::kH2D, TaskKind::kSwapLoad).empty());
  int cpu_decode = 0, gpu_decode = 0;
  for (const auto& t : testing::tasks(r, Lane::kCpu, TaskKind::kCpuExpert))
    cpu_decode += t.step == 1;
  for (const auto& t : testing::tasks(r, Lane::kGpu, TaskKind::kGpuExpert))
    gpu_decode += t.step == 1;
  EXPECT_EQ(cpu_decode, 0);  // the decode token's expert 2 is on the GPU now
  EXPECT_EQ(gpu_decode, 1);
  EXPECT_EQ(r.metrics.expert_hits[1], 1);
  // Without the update the decode token's expert 2 runs on the CPU.
  const SimulationResult fixed = run_dynamic("none");
  EXPECT_EQ(fixed.metrics.device_swaps, 0);
  int cpu_fixed = 0;
  for (const auto& t : testing::tasks(fixed, Lane::kCpu, TaskKind::kCpuExpert))
    cpu_fixed += t.step == 1;
  EXPECT_EQ(cpu_fixed, 1);
}

// Below the fallback's threshold the layer runs split (expert 2 on the CPU)
// and the GPU experts do not change.
TEST(KtDynamicUpdate, NoUpdateWithoutTheFullGpuLayer) {
  const ModelSpec m = testing::tiny_model(1, 4, 1);
  StrategySpec s = testing::strategy("resident", "kt-dynamic", "uniform", 1);
  s.residency.admit_on_demand = false;
  s.assigner.params.set("gpu_prefill_threshold", cfg::Value::integer(5), Where{"<test>"});
  const SimulationResult r =
      testing::run(m, testing::round_hardware(), s,
                   testing::routing(1, 4, 1, {{{2}}, {{2}}, {{2}}, {{1}}, {{2}}}, 4));
  EXPECT_EQ(r.metrics.device_swaps, 0);
  EXPECT_TRUE(testing::tasks(r, Lane::kH2D, TaskKind::kDemandLoad).empty());
}

// An on_device swap must bring an expert that ran on the GPU in the layer:
// a cache that asks for one that did not is refused, naming it.
class BadDeviceSwap : public CachePolicy {
 public:
  using Params = EmptyParams<NoneTag>;
  explicit BadDeviceSwap(const Params&) {}
  void after_layer(const Context& ctx, std::vector<Swap>& out) override {
    out.push_back({SlotRef{ctx.layer, 0}, SlotRef{ctx.layer, 3}, true});  // expert 3 never ran
  }
  size_t victim(std::span<const SlotRef>, SlotRef, const Context&) override { return 0; }
};

TEST(KtDynamicUpdate, AnOnDeviceSwapOfAnExpertThatDidNotRunIsRefused) {
  Registry reg;
  register_baselines(reg);
  reg.add<CachePolicy, BadDeviceSwap>("cache", "bad-device-swap", "test");
  const ModelSpec m = testing::tiny_model(1, 4, 1);
  StrategySpec s = testing::strategy("resident", "bad-device-swap", "uniform", 1);
  s.residency.admit_on_demand = false;
  try {
    testing::run(m, testing::round_hardware(), s, testing::routing(1, 4, 1, {{{2}}, {{2}}}), true,
                 &reg);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("expert 3 of layer 0 from GPU memory (on_device), but it "
                                         "did not run on the GPU in this layer"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace moebench
