// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// llama.cpp as used today: the first layers' experts on the CPU
// (layerwise placement, --n-cpu-moe), and in a step of at least
// offload_min_batch tokens a CPU layer's activated experts copied to the
// GPU, computed there and not kept; ik_llama.cpp's threshold scaled by
// experts / top-k. Hand-computed on the round-number testbed
// (baselines/testing.h: CPU expert 10 us per token, GPU expert 2 us, a copy
// 5 us).
#include <gtest/gtest.h>

#include "baselines/testing.h"

namespace moebench {
namespace {

using testing::tasks;

// Two MoE layers of 4 experts, top-2; the GPU holds one layer (4 slots in a
// global pool), the last one. A 4-token prompt routes every token to
// experts {0, 1} in layer 0 and {2, 3} in layer 1; one decode token too.
SimulationResult run_llamacpp(int64_t min_batch, const std::string& scale = "none") {
  const ModelSpec m = testing::tiny_model(2, 4, 2);
  const HardwareProfile hw = testing::round_hardware();
  StrategySpec s = testing::strategy("llamacpp", "none", "layerwise", 2);
  s.residency.pool = "global";
  s.residency.admit_on_demand = false;  // the copies are not kept
  s.assigner.params.set("serialize", cfg::Value::boolean(true), Where{"<test>"});
  s.assigner.params.set("offload_min_batch", cfg::Value::integer(min_batch), Where{"<test>"});
  s.assigner.params.set("offload_scale", cfg::Value::string(scale), Where{"<test>"});
  std::vector<std::vector<std::vector<int32_t>>> ids(5, {{0, 1}, {2, 3}});
  return testing::run(m, hw, s, testing::routing(2, 4, 2, ids, /*prompt_len=*/4));
}

TEST(LlamaCppOffload, APromptBatchAtTheThresholdRunsTheCpuLayersExpertsOnTheGpu) {
  const SimulationResult r = run_llamacpp(4);
  const auto loads = tasks(r, Lane::kH2D, TaskKind::kDemandLoad);
  const auto gpu = tasks(r, Lane::kGpu, TaskKind::kGpuExpert);
  const auto cpu = tasks(r, Lane::kCpu, TaskKind::kCpuExpert);
  // Prefill (step 0): layer 0's experts 0 and 1 copied and run on the GPU.
  ASSERT_EQ(loads.size(), 2u);
  for (const auto& t : loads) {
    EXPECT_EQ(t.step, 0);
    EXPECT_EQ(t.layer, 0);
    EXPECT_DOUBLE_EQ(t.end_ns - t.start_ns, 5000);  // one expert's copy
  }
  std::vector<TaskRecord> gpu_l0;
  for (const auto& t : gpu) {
    if (t.step == 0 && t.layer == 0) gpu_l0.push_back(t);
  }
  ASSERT_EQ(gpu_l0.size(), 2u);
  // One staging buffer: copy, compute, next copy, compute (llama.cpp copies
  // the used experts, then computes: the same layer time).
  EXPECT_DOUBLE_EQ(gpu_l0[0].start_ns, loads[0].end_ns);
  EXPECT_DOUBLE_EQ(loads[1].start_ns, gpu_l0[0].end_ns);
  EXPECT_DOUBLE_EQ(gpu_l0[1].start_ns, loads[1].end_ns);
  EXPECT_DOUBLE_EQ(gpu_l0[1].end_ns - loads[0].start_ns, 5000 + 2000 + 5000 + 2000);
  // Decode (step 1, one token < 4): layer 0 on the CPU again, the copies
  // were not kept; layer 1 on the GPU throughout.
  int cpu_decode = 0;
  for (const auto& t : cpu) {
    EXPECT_EQ(t.layer, 0);
    EXPECT_NE(t.step, 0);  // nothing on the CPU in the offloaded prefill
    cpu_decode += t.step == 1;
  }
  EXPECT_EQ(cpu_decode, 2);
  for (const auto& t : gpu) EXPECT_TRUE(t.layer == 1 || t.step == 0);
}

TEST(LlamaCppOffload, BelowTheThresholdOrOffNothingIsCopied) {
  for (int64_t min_batch : {int64_t(0), int64_t(5)}) {
    const SimulationResult r = run_llamacpp(min_batch);
    EXPECT_TRUE(tasks(r, Lane::kH2D, TaskKind::kDemandLoad).empty()) << min_batch;
    int prefill_cpu = 0;
    for (const auto& t : tasks(r, Lane::kCpu, TaskKind::kCpuExpert)) prefill_cpu += t.step == 0;
    EXPECT_EQ(prefill_cpu, 2) << min_batch;  // layer 0's two experts, 4 tokens each, on the CPU
  }
}

TEST(LlamaCppOffload, IkLlamaScalesTheThresholdByExpertsOverTopK) {
  // 4 experts, top-2: the threshold 2 becomes 2 x 4 / 2 = 4 tokens.
  EXPECT_EQ(tasks(run_llamacpp(2), Lane::kH2D, TaskKind::kDemandLoad).size(), 2u);
  EXPECT_EQ(tasks(run_llamacpp(2, "experts-per-active"), Lane::kH2D, TaskKind::kDemandLoad).size(),
            2u);
  EXPECT_EQ(tasks(run_llamacpp(3, "experts-per-active"), Lane::kH2D, TaskKind::kDemandLoad).size(),
            0u);  // 3 x 2 = 6 > 4 tokens
  EXPECT_EQ(tasks(run_llamacpp(3), Lane::kH2D, TaskKind::kDemandLoad).size(), 2u);
}

}  // namespace
}  // namespace moebench
