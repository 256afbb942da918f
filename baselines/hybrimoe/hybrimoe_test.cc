// HybriMoE: the scheduling simulation on the paper's Fig. 5 setting, the
// code's two-ended greedy pass, and the MRS update formula.

#include <gtest/gtest.h>

#include "baselines/hybrimoe/components.h"
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
  const std::vector<SchedExpert> xs = {ex(A, 4, true), ex(B, 2, true), ex(C, 5, false), ex(D, 1, false),
                                       ex(E, 1, true)};
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

TEST(HybriMoeSchedule, TransferredExpertWaitsForItsCopyAndIsNeverStolen) {
  // Only uncached experts: the link copies the heaviest, the GPU waits for it.
  const std::vector<SchedExpert> xs = {ex(A, 1, false), ex(B, 9, false)};
  const SchedPlan p = simulate_schedule(xs, Fig5Costs{}, SchedTimes{}, true, SchedRule::kFree);
  // CPU takes A [0,1]; link copies B [0,3]; the CPU may not steal B while it is copied; GPU runs B [3,4].
  EXPECT_EQ(p.cpu, (std::vector<int32_t>{A}));
  EXPECT_EQ(p.gpu, (std::vector<int32_t>{B}));
  EXPECT_EQ(p.load, (std::vector<int32_t>{B}));
  EXPECT_DOUBLE_EQ(p.gpu_end, 4.0);
}

TEST(HybriMoeGreedy, TwoEndedPassComparesFrontOnGpuWithBackOnCpu) {
  // Q = cached by load desc (A 4, E 1) ++ uncached by load desc (C 5, D 1).
  const std::vector<SchedExpert> xs = {ex(A, 4, true), ex(C, 5, false), ex(D, 1, false), ex(E, 1, true)};
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
      for (int32_t e = 0; e < E; ++e) best = probs_per_token[s][e] > probs_per_token[s][best] ? e : best;
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
