#include "core/engine/cost_model.h"

#include <gtest/gtest.h>

#include "core/engine/testing.h"

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
  h.gpu.peak_tflops_bf16 = 100;   // 1e5 FLOP/ns
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
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(1, true), 1000 + 3000 + std::max(bytes / 100, flops_per_token / 1000));
  // CPU, 512 tokens: compute bound.
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(512, false), 1000 + flops_per_token * 512 / 1000);
  // GPU: launch + max(bytes / 1000, flops / (1e5 * 0.5)).
  EXPECT_DOUBLE_EQ(c.gpu_expert_ns(1), 2000 + bytes / 1000);
  EXPECT_DOUBLE_EQ(c.gpu_expert_ns(4096), 2000 + flops_per_token * 4096 / 5e4);
  // Transfer: latency + bytes / 20.
  EXPECT_DOUBLE_EQ(c.h2d_expert_ns(), 10000 + bytes / 20);
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
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(7, false), 30000);  // clamped to the last point, not extrapolated
  EXPECT_EQ(c.clamped_lookups(), 1);
  EXPECT_DOUBLE_EQ(c.cpu_expert_ns(1, true), 10000 + 3000);  // warm-up still applies
  EXPECT_NE(c.gpu_expert_ns(1), 1000);  // the other model's table is not used
}

}  // namespace
}  // namespace moebench
