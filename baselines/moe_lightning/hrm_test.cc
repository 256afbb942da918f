// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// MoE-Lightning's policy search (hrm.h) on a hand-computed case, and the
// core applying its choice (apply_residency_choice). The tiny model (2 MoE
// layers, 4 experts, top-2) on the test hardware of moe_lightning_test.cc:
// a sequence's CPU attention 4 us per context entry, the GPU's QKV part
// 1 us, a GPU expert 2 us, an expert copy 5 us, activations free.

#include <gtest/gtest.h>

#include "baselines/moe_lightning/hrm.h"
#include "baselines/testing.h"
#include "core/engine/cost_model.h"
#include "core/engine/engine.h"
#include "core/util/error.h"

namespace moebench {
namespace {

using testing::cpu_attention_hardware;
using testing::round_hardware;
using testing::tiny_model;

constexpr double us = 1000.0;
constexpr double eps = 2.0;  // ns: the tiny projections' roofline time

// Two sequences, one new token each, context 0 + 2 / 2 = 1. GPU memory by
// hand: 2 GiB per unit of cache ratio, 10 more with the KV cache on the GPU;
// the GPU has 1 GiB, so attention stays on the CPU and r_w <= 0.5.
ResidencyQuestion question(const ModelSpec& m, const CostModel& c) {
  ResidencyQuestion q;
  q.model = &m;
  q.cost = &c;
  q.batch = 2;
  q.prompt_len = 0;
  q.decode_len = 2;
  q.gpu_capacity_gib = 1.0;
  q.gpu_gib = [](const ResidencySpec& r) {
    return 2.0 * r.cache_ratio + (r.attention == "gpu" ? 10.0 : 0.0);
  };
  return q;
}

TEST(MoeLightningHrm, EachLanePerLayerAndTheLayerAsTheLongerOfLinkAndPipeline) {
  const ModelSpec m = tiny_model();
  const HardwareProfile h = cpu_attention_hardware();
  const CostModel c(m, h);
  // The pieces, by hand.
  ASSERT_NEAR(c.attention_pre_ns(1), 1 * us, eps);
  ASSERT_NEAR(c.attention_pre_ns(2), 1 * us, eps);
  ASSERT_NEAR(c.attention_post_ns(2), 0.0, eps);
  ASSERT_NEAR(c.cpu_attention_ns(1, 1, 1), 4 * us, eps);
  ASSERT_NEAR(c.cpu_attention_ns(2, 2, 1), 8 * us, eps);
  ASSERT_NEAR(c.gpu_expert_ns(1), 2 * us, eps);
  ASSERT_NEAR(c.h2d_expert_ns(), 5 * us, eps);
  const double head = c.lm_head_ns(2);
  const ResidencyQuestion q = question(m, c);

  // The whole batch, nothing cached: 4 x (1 - 1/2^2) = 3 experts active with
  // one token each (2 x 2 / 3 rounded), 6 us; QKV 1 us: GPU 7 us. CPU 8 us.
  // Link: 4 experts x 5 us = 20 us. Pipeline 8 + 7 / 1 = 15 us < 20.
  HrmEstimate e = hrm_estimate(q, {"cpu", 1, 0.0});
  EXPECT_NEAR(e.gpu_ns, 7 * us, 2 * eps);
  EXPECT_NEAR(e.cpu_ns, 8 * us, eps);
  EXPECT_NEAR(e.link_ns, 20 * us, eps);
  EXPECT_NEAR(e.d2h_ns, 0.0, eps);
  EXPECT_NEAR(e.layer_ns, 20 * us, eps);
  EXPECT_NEAR(e.step_ns, 2 * 20 * us + head, 2 * eps);
  EXPECT_NEAR(e.tokens_per_s, 2.0 / ((40 * us + head) / 1e9), 1.0);
  EXPECT_TRUE(e.fits);

  // Two micro-batches of one: 2 experts each (4 us) + QKV 1 us, twice: GPU
  // 10 us; CPU 2 x 4 us. r_w = 0.5: 2 experts kept, link 10 us. Pipeline
  // 10 + 8 / 2 = 14 us > 10: the layer is the pipeline's.
  e = hrm_estimate(q, {"cpu", 2, 0.5});
  EXPECT_NEAR(e.gpu_ns, 10 * us, 3 * eps);
  EXPECT_NEAR(e.cpu_ns, 8 * us, eps);
  EXPECT_NEAR(e.link_ns, 10 * us, eps);
  EXPECT_NEAR(e.layer_ns, 14 * us, 3 * eps);
  EXPECT_TRUE(e.fits);
  EXPECT_FALSE(hrm_estimate(q, {"cpu", 2, 0.75}).fits);  // 1.5 GiB
  EXPECT_FALSE(hrm_estimate(q, {"gpu", 1, 0.0}).fits);   // the KV cache
}

TEST(MoeLightningHrm, TheSearchTakesTheShortestStepThatFits) {
  const ModelSpec m = tiny_model();
  const HardwareProfile h = cpu_attention_hardware();
  const CostModel c(m, h);
  const ResidencyQuestion q = question(m, c);
  // cpu x {1, 2} micro-batches x {0, .25, .5, .75, 1}, then gpu the same.
  const HrmSearch s = hrm_search(q, 32, 0.25);
  ASSERT_EQ(s.candidates.size(), 20u);
  ASSERT_GE(s.best, 0);
  const HrmEstimate& b = s.candidates[size_t(s.best)];
  // Layers: 1 micro-batch: r 0 -> 20, .25 -> max(15, 15), .5 -> 15 us;
  // 2 micro-batches: r 0 -> 20, .25 -> 15, .5 -> 14 us; r above 0.5 does
  // not fit; attention on the GPU does not fit.
  EXPECT_EQ(b.policy.attention, "cpu");
  EXPECT_EQ(b.policy.micro_batches, 2);
  EXPECT_DOUBLE_EQ(b.policy.cache_ratio, 0.5);
  EXPECT_NEAR(b.step_ns, 2 * 14 * us + c.lm_head_ns(2), 6 * eps);
  // A larger GPU: everything fits, and attention on the GPU (its layer work
  // and 6 us of experts, no CPU work or copies of activations) is fastest.
  // One expert paged (r_w = 0.75: 5 us) already hides behind the GPU's work,
  // so r_w = 1 ties it and the first candidate, the smaller share, is kept.
  ResidencyQuestion big = q;
  big.gpu_capacity_gib = 100;
  const HrmSearch t = hrm_search(big, 32, 0.25);
  const HrmEstimate& g = t.candidates[size_t(t.best)];
  EXPECT_EQ(g.policy.attention, "gpu");
  EXPECT_EQ(g.policy.micro_batches, 1);
  EXPECT_DOUBLE_EQ(g.policy.cache_ratio, 0.75);
  EXPECT_NEAR(g.link_ns, 5 * us, eps);
  EXPECT_GT(g.gpu_ns, 6 * us);
  EXPECT_DOUBLE_EQ(g.layer_ns, g.gpu_ns);
  EXPECT_DOUBLE_EQ(hrm_estimate(big, {"gpu", 1, 1.0}).step_ns, g.step_ns);
  EXPECT_LT(g.step_ns, b.step_ns);
  // No GPU: no candidate.
  const HardwareProfile cpu_only = round_hardware(false);
  const CostModel cc(m, cpu_only);
  ResidencyQuestion none = q;
  none.cost = &cc;
  EXPECT_EQ(hrm_search(none, 32, 0.25).best, -1);
}

// FlexGen's own search (policy = "flexgen"): the same candidates and lanes,
// a layer as its decode cost model has it, the copies in plus the longer of
// the copies out and the GPU's and CPU's work added together.
TEST(FlexGenSearch, TheLayerAddsTheCopiesAndTheComputeLanes) {
  const ModelSpec m = tiny_model();
  const HardwareProfile h = cpu_attention_hardware();
  const CostModel c(m, h);
  const ResidencyQuestion q = question(m, c);
  // The whole batch, nothing kept: link 20 us + (GPU 7 + CPU 8) = 35 us.
  HrmEstimate e = hrm_estimate(q, {"cpu", 1, 0.0}, LayerModel::kFlexGen);
  EXPECT_NEAR(e.link_ns, 20 * us, eps);
  EXPECT_NEAR(e.layer_ns, 35 * us, 3 * eps);
  // Two micro-batches, r_w 0.5: 10 + (10 + 8) = 28 us (the roofline: 14).
  e = hrm_estimate(q, {"cpu", 2, 0.5}, LayerModel::kFlexGen);
  EXPECT_NEAR(e.layer_ns, 28 * us, 4 * eps);
  // The whole batch, r_w 0.5: 10 + (7 + 8) = 25 us (the roofline: 15).
  e = hrm_estimate(q, {"cpu", 1, 0.5}, LayerModel::kFlexGen);
  EXPECT_NEAR(e.layer_ns, 25 * us, 3 * eps);
  EXPECT_NEAR(hrm_estimate(q, {"cpu", 1, 0.5}).layer_ns, 15 * us, 3 * eps);
  // Candidates (r_w <= 0.5 fit): 1 micro-batch 35 / 30 / 25 us, 2: 38 / 33 /
  // 28 us. FlexGen's search keeps the whole batch, where the roofline
  // splits it in two (TheSearchTakesTheShortestStepThatFits).
  const HrmSearch s = hrm_search(q, 32, 0.25, LayerModel::kFlexGen);
  ASSERT_EQ(s.candidates.size(), 20u);
  ASSERT_GE(s.best, 0);
  const HrmEstimate& b = s.candidates[size_t(s.best)];
  EXPECT_EQ(b.policy.attention, "cpu");
  EXPECT_EQ(b.policy.micro_batches, 1);
  EXPECT_DOUBLE_EQ(b.policy.cache_ratio, 0.5);
  EXPECT_NEAR(b.step_ns, 2 * 25 * us + c.lm_head_ns(2), 6 * eps);
  const HrmSearch roofline = hrm_search(q, 32, 0.25);
  ASSERT_GE(roofline.best, 0);
  EXPECT_EQ(roofline.candidates[size_t(roofline.best)].policy.micro_batches, 2);
}

// A candidate with the KV cache in host memory read by the GPU
// ("gpu-host-kv", FlexGen without delegation): the layer's work on the GPU,
// the entries on the link beside the experts. The link at 0.128 bytes/ns:
// two sequences' 256-byte entries at context 1, 4 us.
TEST(FlexGenSearch, AHostKvCacheReadByTheGpuAddsItsCopiesToTheLink) {
  const ModelSpec m = tiny_model();
  HardwareProfile h = cpu_attention_hardware();
  h.link.h2d_gbps = 0.128;
  const CostModel c(m, h);
  ASSERT_NEAR(c.kv_h2d_ns(2, 1), 4 * us, eps);
  const ResidencyQuestion q = question(m, c);
  // Nothing kept: link 4 x 5 + 4 = 24 us; GPU the layer's 1 us + 3 experts'
  // 6 us; no CPU work. The roofline: 24 us; FlexGen's model: 24 + 7 = 31 us.
  const HrmEstimate e = hrm_estimate(q, {"gpu-host-kv", 1, 0.0});
  EXPECT_NEAR(e.link_ns, 24 * us, 2 * eps);
  EXPECT_NEAR(e.gpu_ns, 7 * us, 2 * eps);
  EXPECT_EQ(e.cpu_ns, 0.0);
  EXPECT_NEAR(e.layer_ns, 24 * us, 2 * eps);
  EXPECT_TRUE(e.fits);  // the question's footprint counts no KV cache for it
  EXPECT_NEAR(hrm_estimate(q, {"gpu-host-kv", 1, 0.0}, LayerModel::kFlexGen).layer_ns, 31 * us,
              4 * eps);
  // The search's host candidates are these instead of CPU attention.
  const HrmSearch s = hrm_search(q, 32, 0.25, LayerModel::kFlexGen, "gpu-host-kv");
  ASSERT_EQ(s.candidates.size(), 20u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(s.candidates[i].policy.attention, "gpu-host-kv");
  ASSERT_GE(s.best, 0);
  EXPECT_EQ(s.candidates[size_t(s.best)].policy.attention, "gpu-host-kv");
  // r_w 0.5 (2 experts kept): 10 + 4 + 7 = 21 us, the shortest that fits.
  EXPECT_DOUBLE_EQ(s.candidates[size_t(s.best)].policy.cache_ratio, 0.5);
  EXPECT_NEAR(s.candidates[size_t(s.best)].layer_ns, 21 * us, 4 * eps);
}

TEST(MoeLightningHrm, TheCoreAppliesTheChoiceAndTheRunRecordsIt) {
  const ModelSpec m = tiny_model();
  HardwareProfile h = cpu_attention_hardware();
  StrategySpec spec = testing::strategy("gpu-ondemand", "none", "uniform", 0);
  spec.name = "hrm";
  spec.residency.slots_per_layer = -1;  // the share from cache_ratio
  spec.residency.cache_ratio = 0;
  spec.residency.attention = "cpu";
  spec.residency.micro_batches = 1;
  spec.residency.prefetch_buffer = true;
  spec.residency.late_prefetch = "issue";
  spec.prefetcher = testing::component("paged-weights");
  spec.prefetcher.params.set("policy", cfg::Value::string("hrm", Where{"<test>"}), Where{"<test>"});
  spec.prefetcher.params.set("cache_ratio_step", cfg::Value::number(0.25, Where{"<test>"}),
                             Where{"<test>"});
  StrategyInstance st = StrategyInstance::create(spec, builtin_registry());
  RunShape shape;
  shape.sequences = 2;
  shape.batch_size = 2;
  shape.max_tokens = 2;
  shape.total_tokens = 4;
  apply_residency_choice(m, h, st, shape, 0, 2);
  // 1000 GiB of GPU memory: attention on the GPU, the experts' copies
  // hidden behind its work (the previous test's case, cache ratio step 0.25).
  EXPECT_EQ(st.residency.attention, "gpu");
  EXPECT_EQ(st.residency.micro_batches, 1);
  EXPECT_DOUBLE_EQ(st.residency.cache_ratio, 0.75);
  EXPECT_EQ(st.residency_chosen_by, "strategy.prefetcher = \"paged-weights\"");
  EXPECT_GT(st.residency_estimate_ns, 0.0);
  EXPECT_NE(st.residency_why.find("hierarchical roofline"), std::string::npos);
  // The run's rows say what ran and who chose it.
  const auto src = testing::routing(2, 4, 2, {{{0, 1}, {2, 3}}, {{1, 2}, {0, 3}}});
  WorkloadSpec w;
  w.sequences = 1;
  w.batch_size = 1;
  const SimulationResult r = simulate(m, h, w, st, src, nullptr, {});
  EXPECT_EQ(r.metrics.run_attention, "gpu");
  EXPECT_EQ(r.metrics.run_micro_batches, 1);
  EXPECT_DOUBLE_EQ(r.metrics.run_cache_ratio, 0.75);
  EXPECT_EQ(r.metrics.residency_chosen_by, "strategy.prefetcher = \"paged-weights\"");
  EXPECT_DOUBLE_EQ(r.metrics.residency_estimate_ns, st.residency_estimate_ns);
  EXPECT_EQ(r.metrics.residency_why, st.residency_why);

  // Policy "fixed": the strategy's settings stand.
  spec.prefetcher.params.set("policy", cfg::Value::string("fixed", Where{"<test>"}),
                             Where{"<test>"});
  StrategyInstance fixed = StrategyInstance::create(spec, builtin_registry());
  apply_residency_choice(m, h, fixed, shape, 0, 2);
  EXPECT_EQ(fixed.residency.attention, "cpu");
  EXPECT_TRUE(fixed.residency_chosen_by.empty());
}

}  // namespace
}  // namespace moebench
