// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// DALI: Algorithm 1 (greedy) on a hand-made layer, the exact assignment
// against brute force, and Algorithm 2 (window cache) step by step.

#include <random>

#include <gtest/gtest.h>

#include "baselines/dali/components.h"
#include "core/engine/residency.h"

namespace moebench {
namespace {

AssignItem item(int32_t e, double gpu, double cpu, bool cached = false) {
  AssignItem it;
  it.expert = e;
  it.gpu = gpu;
  it.cpu = cpu;
  it.cached = cached;
  return it;
}

TEST(DaliGreedy, Algorithm1OnAHandMadeLayer) {
  AssignProblem p;
  // (t_gpu, t_cpu): e0 (1, 10), e1 (5, 6), e2 (8, 2), e3 (3, 3).
  p.items = {item(0, 1, 10), item(1, 5, 6), item(2, 8, 2), item(3, 3, 3)};
  // By |t_gpu - t_cpu|: e0 (9), e2 (6), e1 (1), e3 (0).
  // e0: 0+1 <= 0+10 -> GPU (1); e2: 1+8 <= 0+2? no -> CPU (2);
  // e1: 1+5 <= 2+6 -> GPU (6); e3: 6+3 <= 2+3? no -> CPU (5).
  const auto a = greedy_assign(p);
  EXPECT_EQ(a, (std::vector<uint8_t>{1, 1, 0, 0}));
  EXPECT_DOUBLE_EQ(assign_cost(p, a), 6.0);
}

TEST(DaliGreedy, PlanOrdersResidentFirstThenLoads) {
  AssignProblem p;
  p.items = {item(4, 2, 9, false), item(7, 1, 9, true), item(9, 3, 1, false)};
  LayerPlan out;
  to_layer_plan(p, {1, 1, 0}, 2, out);
  EXPECT_EQ(out.gpu, (std::vector<int32_t>{7, 4}));
  EXPECT_EQ(out.load, (std::vector<int32_t>{4}));
  EXPECT_EQ(out.cpu, (std::vector<int32_t>{9}));
  EXPECT_EQ(out.staging_buffers, 2);
}

double brute_force(const AssignProblem& p) {
  const size_t n = p.items.size();
  double best = std::numeric_limits<double>::infinity();
  for (uint64_t mask = 0; mask < (uint64_t(1) << n); ++mask) {
    std::vector<uint8_t> a(n);
    int64_t loads = 0;
    for (size_t i = 0; i < n; ++i) {
      a[i] = (mask >> i) & 1;
      loads += a[i] && !p.items[i].cached;
    }
    if (p.max_gpu_loads >= 0 && loads > p.max_gpu_loads) continue;
    best = std::min(best, assign_cost(p, a));
  }
  return best;
}

TEST(DaliOpt, EqualsBruteForceAndGreedyIsNeverBetter) {
  std::mt19937_64 rng(7);
  int cases = 0;
  for (int trial = 0; trial < 400; ++trial) {
    AssignProblem p;
    const int n = 1 + int(rng() % 12);
    for (int i = 0; i < n; ++i) {
      const double g = double(1 + rng() % 50), c = double(1 + rng() % 50);
      p.items.push_back(item(i, g, c, rng() % 3 == 0));
    }
    p.cpu_warmup = double(rng() % 3 == 0 ? rng() % 20 : 0);
    p.max_gpu_loads = rng() % 4 == 0 ? int64_t(rng() % 3) : -1;
    bool proven = false;
    const auto opt = optimal_assign(p, 100000000, &proven);
    ASSERT_TRUE(proven);
    const double bf = brute_force(p);
    EXPECT_DOUBLE_EQ(assign_cost(p, opt), bf) << "trial " << trial;
    const auto gr = greedy_assign(p);
    EXPECT_GE(assign_cost(p, gr), bf) << "trial " << trial;
    int64_t loads = 0;
    for (int i = 0; i < n; ++i) loads += opt[i] && !p.items[i].cached;
    if (p.max_gpu_loads >= 0) {
      EXPECT_LE(loads, p.max_gpu_loads);
    }
    ++cases;
  }
  EXPECT_EQ(cases, 400);
}

TEST(DaliOpt, NodeLimitReturnsTheBestFoundUnproven) {
  AssignProblem p;
  for (int i = 0; i < 24; ++i) p.items.push_back(item(i, 10.0 + (i % 5), 11.0 + (i % 7)));
  bool proven = true;
  const auto a = optimal_assign(p, 5, &proven);
  EXPECT_FALSE(proven);
  EXPECT_LE(assign_cost(p, a),
            assign_cost(p, greedy_assign(p)));  // never worse than the greedy start
}

// One layer of 6 experts, 2 slots holding e0 and e1, driven step by step:
// step() runs a gate and the layer's end and returns the proposed swaps.
struct WindowBench {
  Residency res{1, 6, 2, false};
  DaliWindowCache c;
  Context ctx;
  explicit WindowBench(const DaliWindowCache::Params& p) : c(p) {
    res.place(0, 0);
    res.place(0, 1);
    c.reset(CacheSetup{1, 6, 2, false});
    ctx.layer = 0;
    ctx.experts = 6;
    ctx.moe_layers = 1;
    ctx.residency = &res;
  }
  // decode_step -1: a prefill step.
  std::vector<CachePolicy::Swap> step(int64_t decode_step, const std::vector<ActiveExpert>& act) {
    ctx.phase = decode_step < 0 ? Phase::kPrefill : Phase::kDecode;
    ctx.decode_step = decode_step;
    ctx.active = act;
    c.on_gate(ctx);
    std::vector<CachePolicy::Swap> sw;
    c.after_layer(ctx, sw);
    return sw;
  }
  void apply(const std::vector<CachePolicy::Swap>& sw) {
    for (const auto& x : sw) {
      res.evict(0, x.outgoing.expert);
      res.place(0, x.incoming.expert);
    }
  }
};

// Algorithm 2 driven by hand: a prefill (i = 0) and decode steps 0..4
// (i = 1..5), w_size 2, u_size 2.
TEST(DaliWindow, Algorithm2SwapsUnconditionallyAtStepsZeroWTwoW) {
  DaliWindowCache::Params pp;
  pp.w_size = 2;
  pp.u_size = 2;
  WindowBench b(pp);
  // i = 0, the prefill: e0 4, e2 3, e1 1. The outsiders by score: e2 (3),
  // then the unused e3 (0, lower id first); the members: e1 (1), e0 (4).
  // Both swaps happen although e3 scored less than e0: e2 for e1, e3 for e0.
  auto sw = b.step(-1, {{0, 4, 1.0f, 0}, {2, 3, 1.0f, 0}, {1, 1, 1.0f, 0}});
  ASSERT_EQ(sw.size(), 2u);
  EXPECT_EQ(sw[0].incoming.expert, 2);
  EXPECT_EQ(sw[0].outgoing.expert, 1);
  EXPECT_EQ(sw[1].incoming.expert, 3);
  EXPECT_EQ(sw[1].outgoing.expert, 0);
  b.apply(sw);
  // i = 1: no window end. i = 2: scores since the reset: e2 2 + 1, e3 2, e5 4.
  EXPECT_TRUE(b.step(0, {{2, 2, 1.0f, 0}, {5, 1, 1.0f, 0}}).empty());
  sw = b.step(1, {{2, 1, 1.0f, 0}, {3, 2, 1.0f, 0}, {5, 3, 1.0f, 0}});
  ASSERT_EQ(sw.size(), 2u);  // e5 (4) for e3 (2); e0 (0, lowest id) for e2 (3)
  EXPECT_EQ(sw[0].incoming.expert, 5);
  EXPECT_EQ(sw[0].outgoing.expert, 3);
  EXPECT_EQ(sw[1].incoming.expert, 0);
  EXPECT_EQ(sw[1].outgoing.expert, 2);
  b.apply(sw);
  // i = 3: nothing; i = 4: e0 and e5 used, e1 5: e1 for e0 (1) and e2 (0) for e5 (1).
  EXPECT_TRUE(b.step(2, {{0, 1, 1.0f, 0}}).empty());
  sw = b.step(3, {{5, 1, 1.0f, 0}, {1, 5, 1.0f, 0}});
  ASSERT_EQ(sw.size(), 2u);
  EXPECT_EQ(sw[0].incoming.expert, 1);
  EXPECT_EQ(sw[1].incoming.expert, 2);
  EXPECT_EQ(sw[0].outgoing.expert + sw[1].outgoing.expert,
            5);  // e0 and e5, tie at 1: lower id first
  EXPECT_EQ(sw[0].outgoing.expert, 0);
}

// The conditional rule driven by hand (every step a decode step).
TEST(DaliWindow, ConditionalRuleSwapsAtWindowEndsOnlyForABetterOutsider) {
  DaliWindowCache::Params pp;
  pp.w_size = 2;
  pp.u_size = 1;
  pp.swap = DaliWindowCache::SwapRule::kConditional;
  WindowBench b(pp);
  // Window 1: e3 gets 3 + 2 tokens, e0 1, e1 none.
  EXPECT_TRUE(b.step(0, {{0, 1, 1.0f, 0}, {3, 3, 1.0f, 0}}).empty());
  auto sw = b.step(0, {{3, 2, 1.0f, 0}, {4, 1, 1.0f, 0}});
  ASSERT_EQ(sw.size(), 1u);  // u_size = 1: best outsider e3 (5) replaces the worst resident e1 (0)
  EXPECT_EQ(sw[0].incoming.expert, 3);
  EXPECT_EQ(sw[0].outgoing.expert, 1);
  b.apply(sw);
  // Window 2 (scores reset): e0 4, e3 3, e5 2: no outsider beats the worst resident (e3, 3).
  EXPECT_TRUE(b.step(0, {{0, 4, 1.0f, 0}, {3, 1, 1.0f, 0}}).empty());
  EXPECT_TRUE(b.step(0, {{3, 2, 1.0f, 0}, {5, 2, 1.0f, 0}}).empty());
  // Window 3: e5 5 beats e0 (1).
  EXPECT_TRUE(b.step(0, {{0, 1, 1.0f, 0}, {5, 3, 1.0f, 0}, {3, 2, 1.0f, 0}}).empty());
  sw = b.step(0, {{5, 2, 1.0f, 0}, {3, 1, 1.0f, 0}});
  ASSERT_EQ(sw.size(), 1u);
  EXPECT_EQ(sw[0].incoming.expert, 5);
  EXPECT_EQ(sw[0].outgoing.expert, 0);
}

TEST(DaliWindow, PrefetchedExpertsLeaveFirstAndAreNotSwappedOut) {
  // Three slots: placed e0, e1 (window members), then e2 arrives by prefetch.
  Residency res(1, 6, 3, false);
  DaliWindowCache::Params pp;
  pp.w_size = 1;
  pp.u_size = 1;
  DaliWindowCache c(pp);
  Context ctx;
  ctx.layer = 0;
  ctx.experts = 6;
  ctx.moe_layers = 1;
  ctx.residency = &res;
  std::vector<ActiveExpert> act;
  auto gate = [&](DaliWindowCache& p, std::vector<ActiveExpert> a) {
    act = std::move(a);
    ctx.active = act;
    p.on_gate(ctx);
  };
  res.place(0, 0);
  res.place(0, 1);
  c.reset(CacheSetup{1, 6, 3, false});
  c.on_insert(0, 0, ctx);  // the placement's inserts, before the first gate
  c.on_insert(0, 1, ctx);
  gate(c, {{0, 1, 1.0f, 0}, {1, 1, 1.0f, 0}});
  res.place(0, 2);
  c.on_insert(0, 2, ctx);  // a prefetch
  // e2 is used heavily (score 5, e0 and e1 have 1): still, the next
  // prefetch evicts e2, the prefetched one.
  gate(c, {{2, 5, 1.0f, 0}});
  const std::vector<SlotRef> cand = {{0, 0}, {0, 1}, {0, 2}};
  EXPECT_EQ(c.victim(cand, SlotRef{0, 3}, ctx), 2u);
  // The window swap never picks the prefetched e2 to leave: e4 (score 3)
  // replaces the worst window member.
  gate(c, {{4, 3, 1.0f, 0}});
  std::vector<CachePolicy::Swap> sw;
  c.after_layer(ctx, sw);
  ASSERT_EQ(sw.size(), 1u);
  EXPECT_EQ(sw[0].incoming.expert, 4);
  EXPECT_NE(sw[0].outgoing.expert, 2);
  // Swapped in, e4 is a window member: a later prefetch evicts e2 first.
  res.evict(0, sw[0].outgoing.expert);
  c.on_evict(0, sw[0].outgoing.expert, ctx);
  res.place(0, 4);
  c.on_insert(0, 4, ctx);
  const std::vector<SlotRef> cand2 = {{0, sw[0].outgoing.expert == 0 ? 1 : 0}, {0, 2}, {0, 4}};
  EXPECT_EQ(c.victim(cand2, SlotRef{0, 5}, ctx), 1u);
  // prefetched_first = false: the lowest score leaves, whatever its origin.
  pp.prefetched_first = false;
  DaliWindowCache plain(pp);
  plain.reset(CacheSetup{1, 6, 3, false});
  gate(plain, {{2, 5, 1.0f, 0}});
  plain.on_insert(0, 2, ctx);
  EXPECT_EQ(plain.victim(cand, SlotRef{0, 3}, ctx), 0u);  // e0 and e1 score 0: lower id
}

}  // namespace
}  // namespace moebench
