// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// MoE-Infinity: the current request is matched to the most
// similar past request of the EAMC, whose later layers are prefetched,
// nearer layers first; a finished request joins the EAMC; the cache evicts
// the expert with the lowest activation share, shallow layers kept longer,
// and spares a prefetch still waiting for its layer.
// Hand-computed on 3 MoE layers of 4 experts, top-1.
#include <gtest/gtest.h>

#include "baselines/moe_infinity/components.h"
#include "baselines/testing.h"
#include "core/engine/cost_model.h"
#include "core/engine/residency.h"
#include "core/engine/routing_data.h"

namespace moebench {
namespace {

using Ids = std::vector<std::vector<int32_t>>;  // [token][layer] -> expert (top-1)

// A workload of several sequences, each a list of tokens (top-1 routing).
MemoryTraceSource workload(const std::vector<Ids>& seqs, int64_t prompt_len = 0) {
  TraceInfo info;
  info.model_name = "tiny";
  info.moe_layers = 3;
  info.routing.experts = 4;
  info.routing.top_k = 1;
  info.probs = ProbsStorage::kNone;
  for (const Ids& s : seqs) info.sequences.push_back({prompt_len, int64_t(s.size()) - prompt_len});
  MemoryTraceSource src(info);
  for (size_t q = 0; q < seqs.size(); ++q) {
    for (const auto& tok : seqs[q]) {
      TokenRecord r;
      for (int32_t e : tok) {
        r.ids.push_back(e);
        r.weights.push_back(1.0f);
      }
      src.add(int64_t(q), r);
    }
  }
  return src;
}

using Calibration = testing::TraceCalibration;

struct Fixture {
  ModelSpec m = testing::tiny_model(3, 4, 1);
  HardwareProfile hw = testing::round_hardware();
  CostModel cost{m, hw};
  Residency res{3, 4, 2, true};
};

Context context_at(const Fixture& f, const StepRouting& step, int64_t s, int32_t layer,
                   const CalibrationData* calib) {
  Context ctx;
  ctx.step = s;
  ctx.layer = layer;
  ctx.moe_layers = 3;
  ctx.experts = 4;
  ctx.top_k = 1;
  ctx.routing = &step;
  ctx.residency = &f.res;
  ctx.cost = &f.cost;
  ctx.calibration = calib;
  return ctx;
}

TEST(ActivationMatrixPrefetcher, PrefetchesTheMostSimilarPastRequestsLaterLayers) {
  Fixture f;
  // Past requests: A uses 0 / 2 / 1 in layers 0 / 1 / 2, B uses 1 / 3 / 0.
  const MemoryTraceSource past = workload({{{0, 2, 1}, {0, 2, 1}}, {{1, 3, 0}, {1, 3, 0}}});
  const Calibration calib(past);
  // The run: one request routing layer 0 to expert 1 (like B), then 2 decode tokens.
  const MemoryTraceSource run_src = workload({{{1, 3, 0}, {1, 3, 0}, {1, 3, 2}}});
  const RunRouting run(run_src, 0);
  StepRouting step(run, Phase::kDecode);
  step.add(0, 0);
  step.reveal(0);
  ActivationMatrixPrefetcher::Params p;
  p.size = 2;
  ActivationMatrixPrefetcher pf(p);
  std::vector<PrefetchRequest> out;
  pf.after_gate(context_at(f, step, 0, 0, &calib), out);
  EXPECT_EQ(pf.tracer().entries(), 2);
  // Matched B: its layer 1 (weight 1 - 1/4) before its layer 2 (1 - 2/4).
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].layer, 1);
  EXPECT_EQ(out[0].expert, 3);
  EXPECT_EQ(out[1].layer, 2);
  EXPECT_EQ(out[1].expert, 0);
  EXPECT_EQ(pf.tracer().accesses(1), 1);
  EXPECT_EQ(pf.tracer().accesses(0), 0);
  // A cached expert is not asked for; the next one in line is not there (size 2, one left).
  f.res.place(1, 3);
  out.clear();
  step.reveal(1);
  pf.after_gate(context_at(f, step, 0, 1, &calib), out);  // from layer 1: only layer 2 is later
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].layer, 2);
  EXPECT_EQ(out[0].expert, 0);
}

TEST(ActivationTracer, AFinishedRequestJoinsTheCollection) {
  Fixture f;
  const MemoryTraceSource past = workload({{{0, 2, 1}}});
  const MemoryTraceSource run_src = workload({{{1, 3, 0}}});  // one token: it ends with step 0
  const RunRouting run(run_src, 0);
  StepRouting step(run, Phase::kDecode);
  step.add(0, 0);
  ActivationTracer tr;
  tr.reset(3, 4);
  tr.load_collection(past, 2);
  for (int32_t l = 0; l < 3; ++l) {
    step.reveal(l);
    tr.observe(context_at(f, step, 0, l, nullptr));
  }
  tr.observe(
      context_at(f, step, 0, 2, nullptr));  // a second call for the same layer counts nothing
  EXPECT_FLOAT_EQ(tr.eam(0)[2 * 4 + 0], 1.0f);
  tr.finish_step(context_at(f, step, 0, 2, nullptr));
  ASSERT_EQ(tr.entries(), 2);
  EXPECT_TRUE(tr.eam(0).empty());
  EXPECT_FLOAT_EQ(tr.entry(1)[0 * 4 + 1], 1.0f);
  EXPECT_FLOAT_EQ(tr.entry(1)[1 * 4 + 3], 1.0f);
  EXPECT_FLOAT_EQ(tr.entry(1)[2 * 4 + 0], 1.0f);
}

TEST(ActivationAwareCache, EvictsTheLowestShareWithShallowLayersWeightedUp) {
  Fixture f;
  // One request, a 5-token prompt: layer 0 routes e0 x3, e1 x2; layer 2 e1 x3, e2 x2.
  const MemoryTraceSource src =
      workload({{{0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {1, 0, 2}, {1, 0, 2}}}, 5);
  const RunRouting run(src, 0);
  StepRouting step(run, Phase::kPrefill);
  for (int64_t t = 0; t < 5; ++t) step.add(0, t);
  ActivationAwareCache::Params p;
  ActivationAwareCache cache(p);
  cache.reset(CacheSetup{3, 4, 2, true});
  for (int32_t l = 0; l < 3; ++l) {
    step.reveal(l);
    cache.on_gate(context_at(f, step, 0, l, nullptr));
  }
  const Context ctx = context_at(f, step, 0, 2, nullptr);
  // (0, e1): share 0.4 x (1 - 0/4) = 0.4; (2, e1): 0.6 x (1 - 2/4) = 0.3; (2, e3): 0.
  EXPECT_DOUBLE_EQ(cache.priority(0, 1, ctx), 0.4);
  EXPECT_DOUBLE_EQ(cache.priority(2, 1, ctx), 0.3);
  std::vector<SlotRef> c = {{0, 1}, {2, 1}, {2, 3}};
  EXPECT_EQ(cache.victim(c, {1, 1}, ctx), 2u);
  c = {{0, 1}, {2, 1}};
  EXPECT_EQ(cache.victim(c, {1, 1}, ctx), 1u);  // the deeper layer's, though its share is higher
  p.layer_decay = false;
  ActivationAwareCache flat(p);
  flat.reset(CacheSetup{3, 4, 2, true});
  for (int32_t l = 0; l < 3; ++l) flat.on_gate(context_at(f, step, 0, l, nullptr));
  EXPECT_EQ(flat.victim(c, {1, 1}, ctx), 0u);  // without the layer weight: the lower share
  // A prefetch waiting for its layer (loaded in this step for a later layer,
  // unused) goes last, whatever its share: at layer 0, (2, e3) is spared.
  const Context at0 = context_at(f, step, 0, 0, nullptr);
  cache.on_insert(2, 3, at0);
  c = {{2, 3}, {0, 1}};
  EXPECT_EQ(cache.victim(c, {1, 1}, at0), 1u);
  cache.on_access(2, ActiveExpert{3, 1, 1.0f, 0}, at0);  // used: no longer waiting
  EXPECT_EQ(cache.victim(c, {1, 1}, at0), 0u);
}

}  // namespace
}  // namespace moebench
