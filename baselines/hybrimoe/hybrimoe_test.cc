// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// HybriMoE: the scheduling simulation on the paper's Fig. 5 setting, the
// code's two-ended greedy pass, and the MRS update formula.

#include <algorithm>

#include <gtest/gtest.h>

#include "baselines/hybrimoe/components.h"
#include "baselines/testing.h"
#include "core/engine/residency.h"
#include "core/trace/memory_source.h"
#include "core/util/error.h"

namespace moebench {
namespace {

// Fig. 5's cost assumptions: GPU time constant (1), CPU time proportional
// to the load, transfers of 3 units.
struct Fig5Costs : SchedCosts {
  double gpu(int32_t) const override { return 1.0; }
  double cpu(int32_t load, bool) const override { return double(load); }
  double h2d() const override { return 3.0; }
};

SchedExpert ex(int32_t id, int32_t load, bool cached) {
  SchedExpert e;
  e.expert = id;
  e.load = load;
  e.cached = cached;
  return e;
}

enum { A, B, C, D, E };

TEST(HybriMoeSchedule, Fig5CpuTakesCachedEWhileGpuTakesUncachedC) {
  // Cached on the GPU: A (load 4), B (2), E (1); not cached: C (5), D (1).
  const std::vector<SchedExpert> xs = {ex(A, 4, true), ex(B, 2, true), ex(C, 5, false),
                                       ex(D, 1, false), ex(E, 1, true)};
  const SchedPlan p = simulate_schedule(xs, Fig5Costs{}, SchedTimes{}, true, SchedRule::kFree);
  // t=0: the GPU takes its head A [0,1]; the CPU its head D [0,1]; the link
  // the CPU queue's tail C [0,3], which joins the GPU queue first (load 5).
  // t=1: the GPU takes C once copied [3,4]; the CPU, its queue empty, takes
  // the GPU queue's tail E [1,2], then B [2,4].
  EXPECT_EQ(p.gpu, (std::vector<int32_t>{A, C}));
  EXPECT_EQ(p.cpu, (std::vector<int32_t>{D, E, B}));
  EXPECT_EQ(p.load, (std::vector<int32_t>{C}));
  EXPECT_DOUBLE_EQ(p.gpu_end, 4.0);
  EXPECT_DOUBLE_EQ(p.cpu_end, 4.0);
  // Better than either device's own queue: GPU {A, B, E} and CPU {C, D} end at 6.
  EXPECT_LT(p.makespan(), 6.0);
}

TEST(HybriMoeSchedule, Fig5UnderTheCompletionRule) {
  // The paper's rule: the timeline whose next task would finish first acts
  // (ties: the one free earliest, then GPU, CPU, link).
  const std::vector<SchedExpert> xs = {ex(A, 4, true), ex(B, 2, true), ex(C, 5, false),
                                       ex(D, 1, false), ex(E, 1, true)};
  const SchedPlan p =
      simulate_schedule(xs, Fig5Costs{}, SchedTimes{}, true, SchedRule::kCompletion);
  // GPU A ends 1, CPU D ends 1, link C ends 3: GPU A [0,1] (tie with the CPU, both free at 0).
  // CPU D [0,1] (1 < GPU B's 2 < link 3). GPU B [1,2] (2 < link 3 < CPU C's 6).
  // GPU E would end 3, link C ends 3: the link, free since 0, copies C [0,3]; C heads the GPU
  // queue. CPU, its queue empty, takes E [1,2] (2 < GPU C's 4); GPU C [3,4]. As the paper's Fig. 5
  // says: the CPU computes the cached E while the GPU computes the uncached C.
  EXPECT_EQ(p.gpu, (std::vector<int32_t>{A, B, C}));
  EXPECT_EQ(p.cpu, (std::vector<int32_t>{D, E}));
  EXPECT_EQ(p.load, (std::vector<int32_t>{C}));
  EXPECT_DOUBLE_EQ(p.gpu_end, 4.0);
  EXPECT_DOUBLE_EQ(p.cpu_end, 2.0);
  EXPECT_DOUBLE_EQ(p.makespan(), 4.0);  // the same makespan as the free-earliest rule
  EXPECT_DOUBLE_EQ(schedule_makespan(xs, Fig5Costs{}, SchedTimes{}, true, SchedRule::kCompletion),
                   4.0);
}

TEST(HybriMoeSchedule, AnIdleLinkCopiesOnlyWhenTheCopyFinishesFirst) {
  // Two uncached experts of load 1 (CPU 1 unit each), copies of 3 units. The
  // CPU queue is by load ascending, equal loads by id descending (the mirror
  // of the GPU queue's order): [B, A]; the CPU takes its head, the link its tail.
  const std::vector<SchedExpert> xs = {ex(A, 1, false), ex(B, 1, false)};
  // Free-earliest: the CPU takes B [0,1], the idle link copies A [0,3], the GPU runs A [3,4].
  const SchedPlan f = simulate_schedule(xs, Fig5Costs{}, SchedTimes{}, true, SchedRule::kFree);
  EXPECT_EQ(f.load, (std::vector<int32_t>{A}));
  EXPECT_EQ(f.gpu, (std::vector<int32_t>{A}));
  EXPECT_DOUBLE_EQ(f.makespan(), 4.0);
  // Completion: the CPU's B (ends 1) and then A (ends 2) finish before the copy (ends 3).
  const SchedPlan c =
      simulate_schedule(xs, Fig5Costs{}, SchedTimes{}, true, SchedRule::kCompletion);
  EXPECT_TRUE(c.load.empty());
  EXPECT_TRUE(c.gpu.empty());
  EXPECT_EQ(c.cpu, (std::vector<int32_t>{B, A}));
  EXPECT_DOUBLE_EQ(c.makespan(), 2.0);
  EXPECT_EQ(sched_rule("completion"), SchedRule::kCompletion);
  EXPECT_THROW(sched_rule("earliest"), Error);
}

TEST(HybriMoeGreedy, EqualLoadsKeepTheRouterOrder) {
  // Decode: every expert has load 1; GPU and CPU cost 1 each. Router order:
  // token 0 chose (5, 2), token 1 chose (2, 7).
  std::vector<SchedExpert> xs = {ex(2, 1, true), ex(5, 1, true), ex(7, 1, true)};
  const int32_t t0[] = {5, 2}, t1[] = {2, 7};
  order_by_router(xs, 2, 2, [&](int64_t t) { return t == 0 ? t0 : t1; });
  ASSERT_EQ(xs.size(), 3u);
  EXPECT_EQ(xs[0].expert, 5);
  EXPECT_EQ(xs[1].expert, 2);
  EXPECT_EQ(xs[2].expert, 7);
  // Q = [5, 2, 7]: GPU 5 (ends 1, tie with the CPU's 7: GPU), CPU 7 (1 < GPU 2's 2),
  // then GPU 2 (ends 2) against CPU 2 (ends 2): the GPU. By expert id, 2 would go first.
  const SchedPlan p = greedy_two_ended(xs, Fig5Costs{}, SchedTimes{}, true);
  EXPECT_EQ(p.gpu, (std::vector<int32_t>{5, 2}));
  EXPECT_EQ(p.cpu, (std::vector<int32_t>{7}));
}

TEST(HybriMoeSchedule, NoGpuPutsEverythingOnTheCpu) {
  const std::vector<SchedExpert> xs = {ex(A, 4, true), ex(C, 5, false)};
  const SchedPlan p = simulate_schedule(xs, Fig5Costs{}, SchedTimes{}, false, SchedRule::kFree);
  EXPECT_TRUE(p.gpu.empty());
  EXPECT_TRUE(p.load.empty());
  EXPECT_EQ(p.cpu.size(), 2u);
}

// misses = "cpu" (SMoE's reproduction): the link is left out, every uncached
// expert runs on the CPU; with loads allowed the same input copies B.
TEST(HybriMoeSchedule, MissesOnTheCpuLoadNothing) {
  const std::vector<SchedExpert> xs = {ex(A, 1, false), ex(B, 9, false), ex(C, 5, true)};
  const SchedPlan loads = simulate_schedule(xs, Fig5Costs{}, SchedTimes{}, true, SchedRule::kFree);
  EXPECT_EQ(loads.load, (std::vector<int32_t>{B}));
  const SchedPlan p =
      simulate_schedule(xs, Fig5Costs{}, SchedTimes{}, true, SchedRule::kFree, false);
  EXPECT_TRUE(p.load.empty());
  EXPECT_EQ(p.gpu, (std::vector<int32_t>{C}));
  std::vector<int32_t> cpu = p.cpu;
  std::sort(cpu.begin(), cpu.end());
  EXPECT_EQ(cpu, (std::vector<int32_t>{A, B}));
  EXPECT_DOUBLE_EQ(schedule_makespan(xs, Fig5Costs{}, SchedTimes{}, true, SchedRule::kFree, false),
                   std::max(p.gpu_end, p.cpu_end));
  EXPECT_TRUE(sched_loads_misses("schedule"));
  EXPECT_FALSE(sched_loads_misses("cpu"));
  EXPECT_THROW(sched_loads_misses("gpu"), Error);
}

TEST(HybriMoeSchedule, TransferredExpertWaitsForItsCopyAndIsNeverStolen) {
  // Only uncached experts: the link copies the heaviest, the GPU waits for it.
  const std::vector<SchedExpert> xs = {ex(A, 1, false), ex(B, 9, false)};
  const SchedPlan p = simulate_schedule(xs, Fig5Costs{}, SchedTimes{}, true, SchedRule::kFree);
  // CPU takes A [0,1]; link copies B [0,3]; the CPU may not steal B while it is copied; GPU runs B
  // [3,4].
  EXPECT_EQ(p.cpu, (std::vector<int32_t>{A}));
  EXPECT_EQ(p.gpu, (std::vector<int32_t>{B}));
  EXPECT_EQ(p.load, (std::vector<int32_t>{B}));
  EXPECT_DOUBLE_EQ(p.gpu_end, 4.0);
}

TEST(HybriMoeGreedy, TwoEndedPassComparesFrontOnGpuWithBackOnCpu) {
  // Q = cached by load desc (A 4, E 1) ++ uncached by load desc (C 5, D 1).
  const std::vector<SchedExpert> xs = {ex(A, 4, true), ex(C, 5, false), ex(D, 1, false),
                                       ex(E, 1, true)};
  const SchedPlan p = greedy_two_ended(xs, Fig5Costs{}, SchedTimes{}, true);
  // front A on GPU finishes 1, back D on CPU 1: tie -> GPU takes A (tg 1).
  // front E: GPU 2; back D: CPU 1 -> CPU takes D (tc 1).
  // front E: GPU 2; back C: CPU 6 -> GPU takes E (tg 2).
  // front C (uncached): copy [0,3], GPU 4; back C: CPU 1 + 5 = 6 -> GPU takes C.
  EXPECT_EQ(p.gpu, (std::vector<int32_t>{A, E, C}));
  EXPECT_EQ(p.cpu, (std::vector<int32_t>{D}));
  EXPECT_EQ(p.load, (std::vector<int32_t>{C}));
  EXPECT_DOUBLE_EQ(p.gpu_end, 4.0);
  EXPECT_DOUBLE_EQ(p.cpu_end, 1.0);
}

// A hook context for one layer whose step's tokens carry given top-p scores.
struct MrsFixture {
  TraceInfo info;
  std::unique_ptr<MemoryTraceSource> src;
  std::unique_ptr<RunRouting> run;
  std::unique_ptr<StepRouting> step;
  Context ctx;
  MrsFixture(const std::vector<std::vector<float>>& probs_per_token, int64_t top_p) {
    const int32_t E = int32_t(probs_per_token[0].size());
    info.model_name = "tiny";
    info.moe_layers = 1;
    info.routing.experts = E;
    info.routing.top_k = 1;
    info.probs = ProbsStorage::kFull;
    info.sequences.assign(probs_per_token.size(), SequenceInfo{0, 1});
    src = std::make_unique<MemoryTraceSource>(info);
    for (size_t s = 0; s < probs_per_token.size(); ++s) {
      TokenRecord r;
      int32_t best = 0;
      for (int32_t e = 0; e < E; ++e)
        best = probs_per_token[s][e] > probs_per_token[s][best] ? e : best;
      r.ids = {best};
      r.weights = {1.0f};
      r.probs = probs_per_token[s];
      src->add(int64_t(s), r);
    }
    run = std::make_unique<RunRouting>(*src, top_p);
    step = std::make_unique<StepRouting>(*run, Phase::kDecode);
    for (size_t s = 0; s < probs_per_token.size(); ++s) step->add(int64_t(s), 0);
    step->reveal(0);
    ctx.layer = 0;
    ctx.moe_layers = 1;
    ctx.experts = E;
    ctx.top_k = 1;
    ctx.routing = step.get();
  }
};

// A decode step of `tokens` tokens (positions 0.. of one sequence; every
// token routes ids[l] in layer l) on the round hardware, with the context
// at layer 0's gate.
struct DecodeHook {
  ModelSpec m;
  HardwareProfile hw = testing::round_hardware();
  CostModel cost;
  Residency res;
  MemoryTraceSource src;
  RunRouting run;
  StepRouting step;
  Context ctx;
  DecodeHook(int32_t layers, int32_t k, int64_t slots, const std::vector<std::vector<int32_t>>& ids,
             int64_t tokens)
      : m(testing::tiny_model(layers, 4, k)),
        cost(m, hw),
        res(layers, 4, slots, false),
        src(testing::routing(layers, 4, k,
                             std::vector<std::vector<std::vector<int32_t>>>(size_t(tokens), ids))),
        run(src, 0),
        step(run, Phase::kDecode) {
    for (int64_t t = 0; t < tokens; ++t) step.add(0, t);
    step.reveal(0);
    ctx.phase = Phase::kDecode;
    ctx.layer = 0;
    ctx.moe_layers = layers;
    ctx.experts = 4;
    ctx.top_k = k;
    ctx.routing = &step;
    ctx.residency = &res;
    ctx.cost = &cost;
  }
};

// Scores for the target layer only (workload = the integer part).
class LayerPredictor : public Predictor {
 public:
  LayerPredictor(int32_t layer, std::vector<float> s) : layer_(layer), s_(std::move(s)) {}
  void predict(const Context&, int32_t layer, int64_t, std::span<float> scores) override {
    if (layer != layer_) return;
    for (size_t i = 0; i < s_.size(); ++i) scores[i] += s_[i];
  }

 private:
  int32_t layer_;
  std::vector<float> s_;
};

TEST(ImpactPrefetch, NeverEvictsWhatItsOwnPredictionUses) {
  // Round hardware (CPU 10 us per token, GPU 2 us, copy 5 us); 2 MoE layers
  // of 4 experts, 2 slots per layer; layer 1 holds e0 and e1. At layer 0's
  // gate (time 0, link idle, 100 us of non-MoE work per layer) the
  // prediction for layer 1 is e0 (1 token, cached) and e2 (2 tokens,
  // uncached). Without e2: e0 on the GPU, e2 on the CPU for 20 us (or
  // copied, 5 + 2 us); with e2 cached the layer is shorter, so e2 is
  // requested, its copy landing at 5 us, long before layer 1 starts. The
  // predicted e0 is listed too (a hold: the core never evicts it for e2, so
  // the copy replaces e1); with protect_predicted = false only e2 is listed.
  DecodeHook h(2, 2, 2, {{0, 1}, {0, 2}}, 1);
  h.res.place(1, 0);
  h.res.place(1, 1);
  LayerPredictor pred(1, {1.0f, 0.0f, 2.0f, 0.0f});
  Context& ctx = h.ctx;
  ctx.layer_nonmoe_ns = 100000.0;
  for (const bool protect : {true, false}) {
    ImpactPrefetcher::Params p;
    p.protect_predicted = protect;
    ImpactPrefetcher pf(p);
    pf.set_predictor(&pred);
    std::vector<PrefetchRequest> out;
    pf.after_gate(ctx, out);
    std::vector<std::pair<int32_t, int32_t>> got;
    for (const auto& r : out) got.push_back({r.layer, r.expert});
    if (protect) {
      EXPECT_EQ(got, (std::vector<std::pair<int32_t, int32_t>>{{1, 2}, {1, 0}}));
    } else {
      EXPECT_EQ(got, (std::vector<std::pair<int32_t, int32_t>>{{1, 2}}));
    }
  }
}

TEST(HybriMoeGreedy, CodePrefillBufferHoldsTheLinkAheadOfDemandLoads) {
  // Round hardware (attention 1 us, GPU expert 2 us, copy 5 us); 3 MoE
  // layers of 4 experts, 1 slot per layer holding e0. A one-token prompt
  // routes e0, e1, e0. The code's prefill path: layer 0 runs e0 [1, 3];
  // when it is done, all 4 experts of layer 2 are copied into the unread
  // buffer, [3, 23]; layer 1's demand load of e1 (issued at its gate, 4)
  // shares their stream and waits: [23, 28], e1 on the GPU [28, 30].
  // Without the buffer: load [4, 9], GPU [9, 11].
  const auto src = testing::routing(3, 4, 1, {{{0}, {1}, {0}}, {{0}, {0}, {0}}}, 1);
  for (const bool buffer : {true, false}) {
    StrategySpec s = testing::strategy("hybrimoe-greedy", "lru", "uniform", 1);
    s.assigner.params.set("prefill_buffer", cfg::Value::boolean(buffer), Where{"<test>"});
    const auto r = testing::run(testing::tiny_model(3, 4, 1), testing::round_hardware(), s, src);
    const auto copies = testing::tasks(r, Lane::kH2D, TaskKind::kBufferCopy);
    const auto demand = testing::tasks(r, Lane::kH2D, TaskKind::kDemandLoad);
    ASSERT_GE(demand.size(), 1u);  // (the decode token may load e0 of layer 1 back)
    EXPECT_EQ(demand[0].expert, 1);
    if (buffer) {
      ASSERT_EQ(copies.size(), 4u);  // layer 0 only: layer 1 + 2 is past the last layer
      EXPECT_EQ(copies[0].layer, 2);
      EXPECT_DOUBLE_EQ(copies[0].start_ns, 3000.0);
      EXPECT_DOUBLE_EQ(copies[3].end_ns, 23000.0);
      EXPECT_DOUBLE_EQ(demand[0].start_ns, 23000.0);
      EXPECT_EQ(r.metrics.buffer_copies, 4);
    } else {
      EXPECT_TRUE(copies.empty());
      EXPECT_DOUBLE_EQ(demand[0].start_ns, 4000.0);
      EXPECT_EQ(r.metrics.buffer_copies, 0);
    }
  }
}

TEST(HybriMoeGreedy, OnlySingleTokenStepsAreScheduled) {
  // A decode step of two tokens: e1 (cached, 2 tokens) and e2 (uncached, 1
  // token); the link is busy until 100 us. The code's prefill path puts
  // both on the GPU (cached first) and loads e2. With
  // single_token_schedule = false the greedy pass runs: the GPU takes e1
  // (2 us), then e2 would wait for the link (done at 105 us) while the CPU
  // finishes it at 10 us: the CPU takes it, nothing is loaded.
  DecodeHook h(1, 1, 2, {{1}}, 2);
  h.res.place(0, 1);
  std::vector<ActiveExpert> act = {{1, 2, 1.0f, 0}, {2, 1, 1.0f, 0}};
  Context& ctx = h.ctx;
  ctx.active = act;
  ctx.lanes.h2d_free_ns = 100000.0;
  HybriMoeGreedyAssigner::Params p;
  HybriMoeGreedyAssigner code(p);
  LayerPlan plan;
  code.plan(ctx, plan);
  EXPECT_EQ(plan.gpu, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(plan.load, (std::vector<int32_t>{2}));
  EXPECT_TRUE(plan.cpu.empty());
  p.single_token_schedule = false;
  HybriMoeGreedyAssigner greedy(p);
  plan.clear();
  greedy.plan(ctx, plan);
  EXPECT_TRUE(plan.load.empty());
  EXPECT_EQ(plan.cpu, (std::vector<int32_t>{2}));
}

TEST(Mrs, UpdateFollowsTheFormulaWithTopP) {
  // One token, 4 experts, p = 2: TopP keeps 0.5 (e1) and 0.3 (e3).
  MrsFixture f({{0.1f, 0.5f, 0.1f, 0.3f}}, 2);
  MrsParams p;
  p.alpha = 0.5;
  p.p = 2;
  MrsScores s;
  s.set_params(p);
  s.reset(1, 4);
  s.update(f.ctx);
  EXPECT_FLOAT_EQ(s.score(0, 0), 0.0f);
  EXPECT_FLOAT_EQ(s.score(0, 1), 0.25f);
  EXPECT_FLOAT_EQ(s.score(0, 2), 0.0f);
  EXPECT_FLOAT_EQ(s.score(0, 3), 0.15f);
  s.update(f.ctx);  // S = 0.5 * TopP + 0.5 * S
  EXPECT_FLOAT_EQ(s.score(0, 1), 0.375f);
  EXPECT_FLOAT_EQ(s.score(0, 3), 0.225f);
}

TEST(Mrs, BatchUpdateMeanVersusFirstToken) {
  MrsFixture f({{0.6f, 0.4f, 0.0f}, {0.0f, 0.2f, 0.8f}}, 1);
  MrsParams p;
  p.alpha = 1.0;
  p.p = 1;
  MrsScores mean, first;
  mean.set_params(p);
  p.update = "first-token";
  first.set_params(p);
  mean.reset(1, 3);
  first.reset(1, 3);
  mean.update(f.ctx);
  first.update(f.ctx);
  EXPECT_FLOAT_EQ(mean.score(0, 0), 0.3f);  // (0.6 + 0) / 2
  EXPECT_FLOAT_EQ(mean.score(0, 2), 0.4f);  // (0 + 0.8) / 2
  EXPECT_FLOAT_EQ(first.score(0, 0), 0.6f);
  EXPECT_FLOAT_EQ(first.score(0, 2), 0.0f);
}

TEST(Mrs, CodeIdOrderBugGivesTheLargestValueToTheSmallestId) {
  MrsFixture f({{0.05f, 0.15f, 0.2f, 0.6f}}, 2);  // top-2: e3 (0.6), e2 (0.2)
  MrsParams p;
  p.alpha = 1.0;
  p.p = 2;
  p.id_order_bug = true;
  MrsScores s;
  s.set_params(p);
  s.reset(1, 4);
  s.update(f.ctx);
  EXPECT_FLOAT_EQ(s.score(0, 2), 0.6f);
  EXPECT_FLOAT_EQ(s.score(0, 3), 0.2f);
}

TEST(Mrs, VictimIsTheSmallestScore) {
  MrsFixture f({{0.1f, 0.5f, 0.1f, 0.3f}}, 2);
  MrsCache::Params p;
  p.p = 2;
  MrsCache c(p);
  c.reset(CacheSetup{1, 4, 2, false});
  c.on_gate(f.ctx);
  const std::vector<SlotRef> cand = {{0, 1}, {0, 3}, {0, 2}};
  EXPECT_EQ(c.victim(cand, SlotRef{0, 0}, f.ctx), 2u);  // e2: S = 0
  const std::vector<SlotRef> cand2 = {{0, 1}, {0, 3}};
  EXPECT_EQ(c.victim(cand2, SlotRef{0, 0}, f.ctx), 1u);  // e3: 0.15 < 0.25
}

}  // namespace
}  // namespace moebench
