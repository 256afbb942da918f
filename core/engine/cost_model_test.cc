// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/cost_model.h"

#include <gtest/gtest.h>

#include "baselines/testing.h"

namespace moebench {
namespace {

HardwareProfile roofline_hw() {
  HardwareProfile h;
  h.cpu.mem_bw_gbps = 100;        // 100 bytes/ns
  h.cpu.peak_gflops_fp32 = 1000;  // 1000 FLOP/ns
  h.cpu.peak_gflops_bf16 = 2000;
  h.cpu.gemm_efficiency = 0.5;
  h.cpu.task_overhead_us = 1;
  h.cpu.first_task_warmup_us = 3;
  h.gpu.count = 1;
  h.gpu.hbm_gbps = 1000;
  h.gpu.peak_tflops_bf16 = 100;  // 1e5 FLOP/ns
  h.gpu.gemm_efficiency = 0.5;
  h.gpu.kernel_launch_us = 2;
  h.link.h2d_gbps = 20;
  h.link.latency_us = 10;
  return h;
}

TEST(CostModel, RooflineFormulas) {
  ModelSpec m = testing::tiny_model();
  m.hidden_size = 1024;
  m.expert_intermediate = 2048;  // expert: 3 * 1024 * 2048 params, bf16 = 12,582,912 bytes
  const HardwareProfile h = roofline_hw();
  const CostModel c(m, h);
  const double bytes = 3.0 * 1024 * 2048 * 2;
  const double flops_per_token = 2.0 * 3 * 1024 * 2048;
  EXPECT_EQ(c.expert_bytes(), int64_t(bytes));
  // CPU, 1 token: memory bound (bytes / 100) vs flops / (2000 * 0.5).
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(1, false), 1000 + std::max(bytes / 100, flops_per_token / 1000));
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(1, true),
                   1000 + 3000 + std::max(bytes / 100, flops_per_token / 1000));
  // CPU, 512 tokens: compute bound.
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(512, false), 1000 + flops_per_token * 512 / 1000);
  // GPU: launch + max(bytes / 1000, flops / (1e5 * 0.5)).
  EXPECT_DOUBLE_EQ(c.gpu_expert_ns(1), 2000 + bytes / 1000);
  EXPECT_DOUBLE_EQ(c.gpu_expert_ns(4096), 2000 + flops_per_token * 4096 / 5e4);
  // Transfer: latency + bytes / 20.
  EXPECT_DOUBLE_EQ(c.h2d_expert_ns(), 10000 + bytes / 20);
}

// A GPU expert's roofline is computed once per token count and kept; a
// planner's scaling (scale_experts) drops what was kept.
TEST(CostModel, GpuExpertTimeIsKeptByTokensUntilScaled) {
  const ModelSpec m = testing::tiny_model();
  const HardwareProfile h = roofline_hw();
  CostModel c(m, h);
  const CostModel fresh(m, h);
  for (int64_t n : {1, 7, 256, 257, 5000}) {
    EXPECT_DOUBLE_EQ(c.gpu_expert_ns(n), fresh.gpu_expert_ns(n)) << n;
    EXPECT_DOUBLE_EQ(c.gpu_expert_ns(n), fresh.gpu_expert_ns(n)) << n;  // the kept value
  }
  c.scale_experts(1.0, 3.0, 1.0);
  for (int64_t n : {1, 7, 256, 257, 5000})
    EXPECT_DOUBLE_EQ(c.gpu_expert_ns(n), 3.0 * fresh.gpu_expert_ns(n)) << n;
}

TEST(CostModel, NoNativeBf16FallsBackToFp32Rate) {
  ModelSpec m = testing::tiny_model();
  m.hidden_size = 1024;
  m.expert_intermediate = 2048;
  HardwareProfile h = roofline_hw();
  h.cpu.peak_gflops_bf16 = 0;
  const CostModel c(m, h);
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(512, false), 1000 + 2.0 * 3 * 1024 * 2048 * 512 / 500);
}

TEST(CostModel, MeasuredTablesInterpolateAndClamp) {
  ModelSpec m = testing::tiny_model();
  HardwareProfile h = roofline_hw();
  h.tables.push_back({"cpu-expert", "tiny", "bf16", {1, 3}, {10, 30}});
  h.tables.push_back({"gpu-expert", "other-model", "*", {1, 3}, {1, 1}});  // does not apply
  const CostModel c(m, h);
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(2, false), 20000);
  EXPECT_EQ(c.clamped_lookups(), 0);
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(7, false),
                   30000);  // clamped to the last point, not extrapolated
  EXPECT_EQ(c.clamped_lookups(), 1);
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(1, true), 10000 + 3000);  // warm-up still applies
  EXPECT_NE(c.gpu_expert_ns(1), 1000);                       // the other model's table is not used
}

// gpu-layer tables at several contexts: linear in the context between
// them, the nearest outside (counted); the GPU's shared experts, dense FFN
// and lm head tables replace their formulas.
TEST(CostModel, LayerTablesByContextInterpolateInContext) {
  ModelSpec m = testing::tiny_model();
  m.shared_experts = 1;
  m.shared_intermediate = 8;
  HardwareProfile h = roofline_hw();
  const CostModel roof(m, h);
  h.tables.push_back({"gpu-layer", "*", "*", {1, 9}, {10, 50}, 1000});
  h.tables.push_back({"gpu-layer", "*", "*", {1, 9}, {20, 100}, 100});
  h.tables.push_back({"gpu-shared", "*", "*", {1, 9}, {3, 11}});
  h.tables.push_back({"gpu-dense-ffn", "*", "*", {1, 9}, {4, 12}});
  h.tables.push_back({"gpu-lm-head", "*", "*", {1, 9}, {5, 13}});
  const CostModel c(m, h);
  EXPECT_DOUBLE_EQ(c.layer_nonmoe_ns(1, 1, 100), 20000);
  EXPECT_DOUBLE_EQ(c.layer_nonmoe_ns(5, 5, 1000), 30000);  // tokens interpolated at a context
  EXPECT_DOUBLE_EQ(c.layer_nonmoe_ns(1, 1, 550), 15000);   // halfway in context
  EXPECT_EQ(c.clamped_lookups(), 0);
  EXPECT_DOUBLE_EQ(c.layer_nonmoe_ns(1, 1, 4000), 10000);  // beyond the last: its time
  EXPECT_DOUBLE_EQ(c.layer_nonmoe_ns(1, 1, 10), 20000);    // before the first: its time
  EXPECT_EQ(c.clamped_lookups(), 2);
  EXPECT_DOUBLE_EQ(c.gpu_shared_ns(5), 7000);
  EXPECT_DOUBLE_EQ(c.dense_ffn_ns(5), 8000);
  EXPECT_DOUBLE_EQ(c.lm_head_ns(5), 9000);
  EXPECT_NE(roof.gpu_shared_ns(5), 7000);  // without the tables: the formulas
  EXPECT_NE(roof.lm_head_ns(5), 9000);
}

}  // namespace
}  // namespace moebench

namespace moebench {
namespace {

// A strategy's implementation on a profile (docs/COST_MODEL.md, "Implementations").
HardwareProfile implementation_hw() {
  HardwareProfile h = roofline_hw();
  h.gpu.layer_kernels = 8;
  CpuKernelSpec any;
  any.family = "ggml";
  any.bw_efficiency = 0.5;
  any.evidence = "assumption";
  CpuKernelSpec int4 = any;
  int4.dtype = "int4";
  int4.bw_efficiency = 0.25;
  int4.compute_gflops = 100;
  int4.task_overhead_us = 7;
  h.cpu_kernels = {any, int4};
  StackSpec eager;
  eager.name = "pytorch";
  eager.launches_per_layer = 100;
  eager.launch_us = 16;
  eager.layer_overhead_us = 50;
  StackSpec graph;
  graph.name = "ktransformers";
  graph.cuda_graph = true;
  h.stacks = {eager, graph};
  return h;
}

// Contention terms (HardwareProfile::contention): each kind's tasks take
// factor times their time plus the per-task cost; the other kinds and a
// profile without terms are unchanged.
TEST(CostModel, ContentionTermsScaleTheirKindOnly) {
  ModelSpec m = testing::tiny_model();
  m.hidden_size = 1024;
  m.expert_intermediate = 2048;
  m.shared_experts = 1;
  m.shared_intermediate = 2048;
  HardwareProfile plain_hw = roofline_hw();
  plain_hw.link.d2h_gbps = 20;
  HardwareProfile h = plain_hw;
  h.contention = {{"gpu-expert", 0.5, 10.0, "test"},
                  {"cpu-expert", 2.0, 0.0, "test"},
                  {"act-to-gpu", 3.0, 7.0, "test"},
                  {"gpu-layer", 1.0, 4.0, "test"}};
  const CostModel plain(m, plain_hw), c(m, h);
  EXPECT_DOUBLE_EQ(c.gpu_expert_ns(3), 0.5 * plain.gpu_expert_ns(3) + 10e3);
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(2, true), 2.0 * plain.cpu_expert_ns(2, true));
  EXPECT_DOUBLE_EQ(c.h2d_activations_ns(4), 3.0 * plain.h2d_activations_ns(4) + 7e3);
  EXPECT_DOUBLE_EQ(c.gpu_shared_ns(4), plain.gpu_shared_ns(4) + 4e3);
  EXPECT_DOUBLE_EQ(c.layer_nonmoe_ns(4, 1, 8), plain.layer_nonmoe_ns(4, 1, 8) + 4e3);
  EXPECT_DOUBLE_EQ(c.lm_head_ns(4), plain.lm_head_ns(4) + 4e3);
  // No term for these kinds: as without terms.
  EXPECT_DOUBLE_EQ(c.h2d_expert_ns(), plain.h2d_expert_ns());
  EXPECT_DOUBLE_EQ(c.d2h_activations_ns(4), plain.d2h_activations_ns(4));
  // Recorded only where set: a profile without terms keeps its JSON (and its cases their ids).
  EXPECT_FALSE(plain_hw.to_json().contains("contention"));
  EXPECT_EQ(h.to_json()["contention"].size(), 4u);
}

TEST(Implementation, KernelEntryForTheDtypeBeforeTheWildcard) {
  const HardwareProfile h = implementation_hw();
  nlohmann::ordered_json used;
  const HardwareProfile bf16 = with_implementation(h, "generic", "ggml", "bf16", kAnySystem, &used);
  EXPECT_DOUBLE_EQ(bf16.cpu.expert_bw_efficiency, 0.5);
  EXPECT_DOUBLE_EQ(bf16.cpu.expert_gflops, -1);
  EXPECT_DOUBLE_EQ(bf16.cpu.task_overhead_us, 1);  // unset: the [cpu] value
  EXPECT_EQ(used["cpu_kernel_entry"], "ggml (*)");
  EXPECT_EQ(used["stack_entry"], "profile default");
  EXPECT_DOUBLE_EQ(used["cpu_expert_bw_gbps"].get<double>(), 50.0);
  const HardwareProfile q = with_implementation(h, "generic", "ggml", "int4", kAnySystem, &used);
  EXPECT_DOUBLE_EQ(q.cpu.expert_bw_efficiency, 0.25);
  EXPECT_DOUBLE_EQ(q.cpu.expert_gflops, 100);
  EXPECT_DOUBLE_EQ(q.cpu.task_overhead_us, 7);
  EXPECT_EQ(used["cpu_kernel_entry"], "ggml (int4)");
  // A family the profile does not list keeps the profile's values.
  const HardwareProfile other =
      with_implementation(h, "generic", "pytorch", "int4", kAnySystem, &used);
  EXPECT_DOUBLE_EQ(other.cpu.expert_bw_efficiency, 1.0);
  EXPECT_EQ(used["cpu_kernel_entry"], "profile default");
}

TEST(Implementation, KernelEfficiencyAndRateChangeCpuExpertTime) {
  ModelSpec m = testing::tiny_model();
  m.hidden_size = 1024;
  m.expert_intermediate = 2048;
  const double bytes = 3.0 * 1024 * 2048 * 2;
  const double flops_per_token = 2.0 * 3 * 1024 * 2048;
  const HardwareProfile base = implementation_hw();
  const HardwareProfile h = with_implementation(base, "generic", "ggml", "bf16");
  const CostModel c(m, h);
  // Memory-bound: half the bandwidth (100 GB/s x 0.5).
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(1, false), 1000 + bytes / 50);
  HardwareProfile rate = h;
  rate.cpu.expert_gflops = 100;  // replaces peak x gemm_efficiency (1000)
  const CostModel r(m, rate);
  EXPECT_DOUBLE_EQ(r.cpu_expert_ns(512, false), 1000 + flops_per_token * 512 / 100);
}

TEST(Implementation, StackSetsLaunchesAndHostTimePerLayer) {
  ModelSpec m = testing::tiny_model();
  const HardwareProfile base = implementation_hw();
  const HardwareProfile plain = with_implementation(base, "generic", "generic", "bf16");
  const HardwareProfile eager = with_implementation(base, "pytorch", "generic", "bf16");
  const HardwareProfile graph = with_implementation(base, "ktransformers", "generic", "bf16");
  const CostModel cp(m, plain), ce(m, eager), cg(m, graph);
  const double t_plain = cp.layer_nonmoe_ns(1, 1, 16);
  // Eager: 100 launches of 16 us and 50 us of host time instead of 8 launches of 2 us.
  EXPECT_DOUBLE_EQ(ce.layer_nonmoe_ns(1, 1, 16) - t_plain, (100 * 16 - 8 * 2 + 50) * 1e3);
  EXPECT_DOUBLE_EQ(ce.gpu_expert_ns(1) - cp.gpu_expert_ns(1), (16 - 2) * 1e3);
  // CUDA Graph: no launch time at all.
  EXPECT_DOUBLE_EQ(t_plain - cg.layer_nonmoe_ns(1, 1, 16), 8 * 2 * 1e3);
  EXPECT_DOUBLE_EQ(cp.gpu_expert_ns(1) - cg.gpu_expert_ns(1), 2 * 1e3);
}

TEST(Implementation, StackGpuBandwidthEfficiencySlowsMemoryBoundGpuWork) {
  ModelSpec m = testing::tiny_model();
  m.hidden_size = 1024;
  m.expert_intermediate = 2048;
  const double bytes = 3.0 * 1024 * 2048 * 2;  // one bf16 expert, memory-bound at one token
  HardwareProfile base = implementation_hw();
  base.stacks[0].gpu_bw_efficiency = 0.25;
  nlohmann::ordered_json used;
  const HardwareProfile eager =
      with_implementation(base, "pytorch", "generic", "bf16", kAnySystem, &used);
  EXPECT_DOUBLE_EQ(eager.gpu.hbm_efficiency, 0.25);
  EXPECT_DOUBLE_EQ(used["gpu_bw_gbps"].get<double>(), 250.0);
  const HardwareProfile graph =
      with_implementation(base, "ktransformers", "generic", "bf16", kAnySystem, &used);
  EXPECT_DOUBLE_EQ(graph.gpu.hbm_efficiency, 1.0);  // unset: the [gpu] value
  EXPECT_DOUBLE_EQ(used["gpu_bw_gbps"].get<double>(), 1000.0);
  const CostModel ce(m, eager), cg(m, graph);
  EXPECT_DOUBLE_EQ(ce.gpu_expert_ns(1),
                   16 * 1e3 + bytes / 250);  // launch + bytes at 1000 x 0.25 GB/s
  EXPECT_DOUBLE_EQ(cg.gpu_expert_ns(1), bytes / 1000);
}

// What a testbed's evidence says of a shared kernel or stack is paid by
// every system that runs it (measured_on is provenance); a system the stack
// entry says differs pays its share of the host time; a kernel family
// without an entry runs the testbed's default entry.
TEST(Implementation, EntriesApplyToEverySystemOnTheirStack) {
  HardwareProfile h = implementation_hw();
  h.stacks[1].layer_overhead_us = 6000;
  h.stacks[1].evidence = "fitted";
  h.stacks[1].measured_on = "ktransformers";
  h.stacks[1].differs = {"hybrimoe"};
  h.stacks[1].differs_share = 0.25;
  nlohmann::ordered_json used;
  // The system it was measured on and another on the same stack pay it all.
  for (const char* sys : {"ktransformers", "dali", kAnySystem}) {
    const HardwareProfile x = with_implementation(h, "ktransformers", "ggml", "int4", sys, &used);
    EXPECT_DOUBLE_EQ(x.gpu.layer_overhead_us, 6000) << sys;
    EXPECT_DOUBLE_EQ(x.cpu.task_overhead_us, 7) << sys;
    EXPECT_EQ(used["stack_entry"], "ktransformers (measured on ktransformers)");
  }
  // The system the paper says differs: its share.
  const HardwareProfile hy =
      with_implementation(h, "ktransformers", "ggml", "int4", "hybrimoe", &used);
  EXPECT_DOUBLE_EQ(hy.gpu.layer_overhead_us, 1500);
  EXPECT_EQ(used["stack_entry"],
            "ktransformers (measured on ktransformers), host time x 0.25 (hybrimoe differs)");
  // A family without an entry: the profile's values, until the testbed names a default.
  EXPECT_DOUBLE_EQ(
      with_implementation(h, "generic", "pytorch", "int4", "fiddler").cpu.expert_gflops, -1);
  h.cpu_kernels[1].testbed_default = true;
  const HardwareProfile fd = with_implementation(h, "generic", "pytorch", "int4", "fiddler", &used);
  EXPECT_DOUBLE_EQ(fd.cpu.expert_gflops, 100);
  EXPECT_DOUBLE_EQ(fd.cpu.expert_bw_efficiency, 0.25);
  EXPECT_EQ(used["cpu_kernel_entry"], "ggml (int4), the testbed's default");
  // ... for its dtype only (the default is an int4 entry).
  EXPECT_DOUBLE_EQ(
      with_implementation(h, "generic", "pytorch", "bf16", "fiddler").cpu.expert_gflops, -1);
}

}  // namespace
}  // namespace moebench
