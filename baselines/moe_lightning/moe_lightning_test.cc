// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// MoE-Lightning's mechanism on hand-computed cases: attention on the CPU
// over a host KV cache (residency.attention = "cpu"), micro-batches in
// CGOPipe's order (residency.micro_batches), paged weights (prefetcher
// "paged-weights"). The tiny model's KV entry is 256 bytes per token and
// layer; the CPU reads 0.064 bytes/ns, so one sequence at context 1 takes
// 4 us of CPU attention; the GPU's QKV part 1 us (the layer overhead), its
// output projection and router ~0; a GPU expert 2 us (baselines/testing.h).

#include <gtest/gtest.h>

#include "baselines/testing.h"
#include "core/engine/cost_model.h"
#include "core/engine/executor.h"

namespace moebench {
namespace {

using testing::round_hardware;
using testing::strategy;
using testing::tasks;
using testing::tiny_model;

constexpr double us = 1000.0;
constexpr double eps = 1.0;  // ns: the tiny projections' roofline time

using testing::cpu_attention_hardware;

// Two sequences, one decode token each (no prompt): A uses experts {0, 1}
// in both layers, B {2, 3}.
MemoryTraceSource two_sequences() {
  TraceInfo info;
  info.model_name = "tiny";
  info.moe_layers = 2;
  info.routing.experts = 4;
  info.routing.top_k = 2;
  info.probs = ProbsStorage::kFull;
  info.sequences = {{0, 1}, {0, 1}};
  MemoryTraceSource src(info);
  for (int64_t s = 0; s < 2; ++s) {
    TokenRecord r;
    for (int32_t l = 0; l < 2; ++l) {
      for (int32_t j = 0; j < 2; ++j) {
        r.ids.push_back(int32_t(2 * s + j));
        r.weights.push_back(0.5f);
      }
      for (int32_t e = 0; e < 4; ++e) r.probs.push_back(e / 2 == s ? 0.5f : 0.0f);
    }
    src.add(s, r);
  }
  return src;
}

SimulationResult run_batch(const StrategySpec& s, const HardwareProfile& h,
                           const MemoryTraceSource& src) {
  StrategyInstance st = StrategyInstance::create(s, builtin_registry());
  WorkloadSpec w;
  w.sequences = 2;
  w.batch_size = 2;
  EngineOptions opt;
  opt.timeline = true;
  opt.check_graph = true;
  const ModelSpec m = tiny_model();
  return simulate(m, h, w, st, src, nullptr, opt);
}

StrategySpec all_cached(const std::string& attention, int64_t micro_batches) {
  StrategySpec s = strategy("gpu-ondemand", "none", "uniform", 4);
  s.residency.attention = attention;
  s.residency.micro_batches = micro_batches;
  return s;
}

TEST(MoeLightningCostModel, CpuAttentionReadsTheKvCacheFromHostMemory) {
  const ModelSpec m = tiny_model();
  const HardwareProfile h = cpu_attention_hardware();
  const CostModel c(m, h);
  EXPECT_EQ(m.kv_bytes_per_token(), 256);
  EXPECT_NEAR(c.cpu_attention_ns(1, 1, 1), 4 * us, eps);
  EXPECT_NEAR(c.cpu_attention_ns(2, 2, 3), 6 * 4 * us, eps);  // 2 sequences x 3 entries
  EXPECT_NEAR(c.attention_pre_ns(1), 1 * us, eps);
  EXPECT_NEAR(c.attention_post_ns(1), 0.0, eps);
  EXPECT_EQ(c.qkv_bytes(3), 3 * (4 + 2 * 4) * 16 * 2);
}

TEST(MoeLightningPipeline, MicroBatchesOverlapCpuAttentionWithGpuExperts) {
  const auto src = two_sequences();
  const auto r = run_batch(all_cached("cpu", 2), cpu_attention_hardware(), src);
  const auto att = tasks(r, Lane::kCpu, TaskKind::kAttention);
  ASSERT_EQ(att.size(), 4u);
  // Layer 0: A's QKV [0,1], its CPU attention [1,5]; B's QKV [1,2] (issued
  // before A's experts), its attention waits for the CPU: [5,9].
  EXPECT_NEAR(att[0].start_ns, 1 * us, eps);
  EXPECT_NEAR(att[0].end_ns, 5 * us, eps);
  EXPECT_NEAR(att[1].start_ns, 5 * us, eps);
  EXPECT_NEAR(att[1].end_ns, 9 * us, eps);
  const auto gpu = tasks(r, Lane::kGpu, TaskKind::kGpuExpert);
  ASSERT_EQ(gpu.size(), 8u);
  // A's experts [5,7], [7,9] while B's attention runs on the CPU; B's [9,13].
  EXPECT_EQ(gpu[0].expert, 0);
  EXPECT_NEAR(gpu[0].start_ns, 5 * us, eps);
  EXPECT_NEAR(gpu[1].end_ns, 9 * us, eps);
  EXPECT_EQ(gpu[2].expert, 2);
  EXPECT_NEAR(gpu[3].end_ns, 13 * us, eps);
  // Layer 1: A's QKV waits for the GPU lane [13,14], its attention [14,18];
  // B's QKV [14,15], attention [18,22]; experts [18,22] and [22,26].
  EXPECT_NEAR(att[2].start_ns, 14 * us, 2 * eps);
  EXPECT_NEAR(att[3].end_ns, 22 * us, 3 * eps);
  EXPECT_NEAR(gpu[7].end_ns, 26 * us, 4 * eps);
  ASSERT_EQ(r.metrics.tbt_ms.size(), 1u);
  EXPECT_NEAR(r.metrics.tbt_ms[0], 0.026, 1e-5);
  // Each micro-batch's accesses are counted: 2 micro-batches x 2 layers x 2 experts.
  EXPECT_EQ(r.metrics.token_accesses[1], 8);
  EXPECT_EQ(r.metrics.token_hits[1], 8);
  // Q, K, V of each token to the host and its output back, per layer.
  EXPECT_EQ(r.metrics.d2h_bytes, 4 * (4 + 2 * 4) * 16 * 2);
  // The lanes' busy time in the decode step: the GPU 2 x (2 x 1 us QKV + 4
  // experts x 2 us), the CPU 4 x 4 us of attention, no copies.
  EXPECT_NEAR(r.metrics.decode_busy_ns[1], 20 * us, 8 * eps);
  EXPECT_NEAR(r.metrics.decode_busy_ns[2], 16 * us, eps);
  EXPECT_EQ(r.metrics.decode_busy_ns[0], 0.0);
  EXPECT_NEAR(r.metrics.to_json()["decode_cpu_busy_ms_per_step"].get<double>(), 0.016, 1e-6);
}

// FlexGen's order (residency.attention_order = "serial"): each micro-batch
// through its attention and experts before the next one's attention is
// issued, so the CPU's attention never overlaps the GPU's experts.
TEST(MoeLightningPipeline, TheSerialOrderRunsEachMicroBatchThroughBeforeTheNext) {
  const auto src = two_sequences();
  StrategySpec s = all_cached("cpu", 2);
  s.residency.attention_order = "serial";
  const auto r = run_batch(s, cpu_attention_hardware(), src);
  const auto att = tasks(r, Lane::kCpu, TaskKind::kAttention);
  ASSERT_EQ(att.size(), 4u);
  // Layer 0: A's QKV [0,1], attention [1,5], experts [5,9]; only then B's
  // QKV [9,10], attention [10,14], experts [14,18].
  EXPECT_NEAR(att[0].end_ns, 5 * us, eps);
  EXPECT_NEAR(att[1].start_ns, 10 * us, 2 * eps);
  EXPECT_NEAR(att[1].end_ns, 14 * us, 2 * eps);
  const auto gpu = tasks(r, Lane::kGpu, TaskKind::kGpuExpert);
  ASSERT_EQ(gpu.size(), 8u);
  EXPECT_NEAR(gpu[1].end_ns, 9 * us, eps);
  EXPECT_EQ(gpu[2].expert, 2);
  EXPECT_NEAR(gpu[2].start_ns, 14 * us, 2 * eps);
  // Layer 1 the same from 18 us: A [18,27], B [27,36]. Every piece in turn:
  // 2 layers x 2 micro-batches x (1 + 4 + 4) us, 10 us longer than CGOPipe's
  // order (MicroBatchesOverlapCpuAttentionWithGpuExperts: 26 us).
  EXPECT_NEAR(att[3].end_ns, 32 * us, 4 * eps);
  EXPECT_NEAR(gpu[7].end_ns, 36 * us, 4 * eps);
  ASSERT_EQ(r.metrics.tbt_ms.size(), 1u);
  EXPECT_NEAR(r.metrics.tbt_ms[0], 0.036, 1e-5);
  // The same work on every lane as in CGOPipe's order; only its timing moved.
  EXPECT_NEAR(r.metrics.decode_busy_ns[1], 20 * us, 8 * eps);
  EXPECT_NEAR(r.metrics.decode_busy_ns[2], 16 * us, eps);
  EXPECT_EQ(r.metrics.token_hits[1], 8);
}

TEST(MoeLightningPipeline, OneMicroBatchSerializesAttentionAndExperts) {
  const auto src = two_sequences();
  // The whole batch: QKV [0,1], the CPU reads both sequences' entries
  // [1,9], the four experts [9,17]; layer 1 [17,18], [18,26], [26,34].
  const auto one = run_batch(all_cached("cpu", 1), cpu_attention_hardware(), src);
  const auto att = tasks(one, Lane::kCpu, TaskKind::kAttention);
  ASSERT_EQ(att.size(), 2u);
  EXPECT_NEAR(att[0].end_ns, 9 * us, eps);
  EXPECT_NEAR(one.metrics.tbt_ms[0], 0.034, 1e-5);
  // Attention on the GPU (the table's 1 us per layer): [0,1], experts [1,9]; twice.
  const auto gpu = run_batch(all_cached("gpu", 1), cpu_attention_hardware(), src);
  EXPECT_TRUE(tasks(gpu, Lane::kCpu, TaskKind::kAttention).empty());
  EXPECT_NEAR(gpu.metrics.tbt_ms[0], 0.018, 1e-5);
  // Micro-batches with the attention on the GPU: nothing to overlap, same
  // GPU work in four pieces (attention [0,1], [1,2], experts [2,10]; twice).
  const auto gpu2 = run_batch(all_cached("gpu", 2), cpu_attention_hardware(), src);
  EXPECT_NEAR(gpu2.metrics.tbt_ms[0], 0.020, 1e-5);
}

TEST(MoeLightningPipeline, PagedWeightsStreamTheNextLayerIntoTheBuffer) {
  const auto src = two_sequences();
  StrategySpec s = strategy("gpu-ondemand", "none", "none", 0);
  s.prefetcher = testing::component("paged-weights");
  s.residency.prefetch_buffer = true;
  s.residency.admit_on_demand = false;
  s.residency.late_prefetch = "issue";
  s.residency.attention = "cpu";
  s.residency.micro_batches = 2;
  const auto r = run_batch(s, cpu_attention_hardware(), src);
  // Layer 0 has nothing on the GPU: its four experts load on demand (A's at
  // its gate, B's at its own). At A's gate the prefetcher requests all four
  // of layer 1 (B's gate finds them requested already), and at layer 1
  // the next step's layer 0 (wasted here: the run has one decode step).
  const auto pre = tasks(r, Lane::kH2D, TaskKind::kPrefetchLoad);
  ASSERT_EQ(pre.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(pre[i].layer, i < 4 ? 1 : 0);
  const auto dem = tasks(r, Lane::kH2D, TaskKind::kDemandLoad);
  ASSERT_EQ(dem.size(), 4u);
  for (const auto& t : dem) EXPECT_EQ(t.layer, 0);
  // The buffer's copies for layer 1 are used by both micro-batches: no
  // layer-1 expert is loaded twice.
  EXPECT_EQ(r.metrics.prefetch_useful, 4);
}

TEST(MoeLightningFootprint, TheKvCacheLivesInHostMemoryWithCpuAttention) {
  const ModelSpec m = tiny_model();
  const HardwareProfile h = cpu_attention_hardware();
  RunShape shape;
  shape.sequences = 1000;
  shape.batch_size = 1000;
  shape.max_tokens = 1000;
  shape.total_tokens = 1000000;
  const auto on_gpu = StrategyInstance::create(all_cached("gpu", 1), builtin_registry());
  const auto on_cpu = StrategyInstance::create(all_cached("cpu", 1), builtin_registry());
  EXPECT_GT(case_footprint(m, h, on_gpu, shape).gpu_kv_gib, 0.0);
  EXPECT_EQ(case_footprint(m, h, on_cpu, shape).gpu_kv_gib, 0.0);
  // A host KV cache read by the GPU: two layers' entries of one micro-batch
  // (250 sequences of the 1,000 in 4) on the GPU, 2 x 250 x 1,000 x 256 bytes.
  const auto host = StrategyInstance::create(all_cached("gpu-host-kv", 4), builtin_registry());
  const double gib = 1024.0 * 1024.0 * 1024.0;
  EXPECT_DOUBLE_EQ(case_footprint(m, h, host, shape).gpu_kv_gib, 2.0 * 250 * 1000 * 256 / gib);
  EXPECT_DOUBLE_EQ(case_footprint(m, h, on_gpu, shape).gpu_kv_gib,
                   1000.0 * 1000 * double(m.num_layers) * 256 / gib);
}

// FlexGen without CPU delegation (residency.attention = "gpu-host-kv"): each
// micro-batch's KV entries of a layer cross the link before its attention on
// the GPU. The link at 0.128 bytes/ns: one sequence's 256-byte entry, 2 us.
TEST(MoeLightningPipeline, AHostKvCacheIsCopiedToTheGpuBeforeEachAttention) {
  const auto src = two_sequences();
  HardwareProfile h = cpu_attention_hardware();
  h.link.h2d_gbps = 0.128;
  const auto r = run_batch(all_cached("gpu-host-kv", 2), h, src);
  const auto kv = tasks(r, Lane::kH2D, TaskKind::kKvToGpu);
  ASSERT_EQ(kv.size(), 4u);
  // Layer 0: A's entries [0,2], its attention [2,3]; B's entries [2,4] (the
  // link is busy until 2), its attention [4,5]; A's experts [5,9], B's
  // [9,13]. Layer 1: A's entries when its layer 0 is done [9,11], its
  // attention when the GPU is free [13,14]; B's [13,15], attention [15,16];
  // experts [16,20], [20,24].
  EXPECT_NEAR(kv[0].start_ns, 0.0, eps);
  EXPECT_NEAR(kv[0].end_ns, 2 * us, eps);
  EXPECT_NEAR(kv[1].start_ns, 2 * us, eps);
  EXPECT_NEAR(kv[2].start_ns, 9 * us, 2 * eps);
  EXPECT_NEAR(kv[3].end_ns, 15 * us, 4 * eps);
  const auto att = tasks(r, Lane::kGpu, TaskKind::kAttention);
  ASSERT_EQ(att.size(), 4u);
  EXPECT_NEAR(att[0].start_ns, 2 * us, eps);
  EXPECT_NEAR(att[1].start_ns, 4 * us, eps);
  EXPECT_NEAR(att[3].start_ns, 15 * us, 4 * eps);
  EXPECT_TRUE(tasks(r, Lane::kCpu, TaskKind::kAttention).empty());
  ASSERT_EQ(r.metrics.tbt_ms.size(), 1u);
  EXPECT_NEAR(r.metrics.tbt_ms[0], 0.024, 1e-5);
  // The KV cache on the GPU instead: nothing to copy, 20 us
  // (OneMicroBatchSerializesAttentionAndExperts).
  EXPECT_EQ(r.metrics.kv_h2d_bytes, 4 * 256);
  EXPECT_EQ(r.metrics.h2d_bytes, 0);
  const auto on_gpu = run_batch(all_cached("gpu", 2), h, src);
  EXPECT_NEAR(on_gpu.metrics.tbt_ms[0], 0.020, 1e-5);
  EXPECT_EQ(on_gpu.metrics.kv_h2d_bytes, 0);
}

TEST(MoeLightningPipeline, CpuAttentionNeedsAGpu) {
  const auto src = two_sequences();
  try {
    run_batch(all_cached("cpu", 1), round_hardware(/*gpu=*/false), src);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("residency.attention"), std::string::npos) << e.what();
  }
}

// An executor that says it is the real backend (its durations are the
// cost model's): the pipelined decode is refused before anything runs.
class RealLooking final : public Executor {
 public:
  std::string backend() const override { return "real"; }
  double cpu_expert_ns(const CostModel& c, int32_t, int32_t, int64_t tokens, bool first) override {
    return c.cpu_expert_ns(tokens, first);
  }
  double shared_experts_ns(const CostModel& c, int32_t, int64_t tokens) override {
    return c.gpu_shared_ns(tokens);
  }
};

TEST(MoeLightningPipeline, TheRealBackendRefusesMicroBatches) {
  const auto src = two_sequences();
  StrategyInstance st = StrategyInstance::create(all_cached("gpu", 2), builtin_registry());
  WorkloadSpec w;
  w.sequences = 2;
  w.batch_size = 2;
  RealLooking real;
  EngineOptions opt;
  opt.executor = &real;
  const ModelSpec m = tiny_model();
  const HardwareProfile h = cpu_attention_hardware();
  try {
    simulate(m, h, w, st, src, nullptr, opt);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("micro_batches = 2"), std::string::npos) << what;
    EXPECT_NE(what.find("simulated backend"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace moebench
