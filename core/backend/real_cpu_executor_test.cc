// The real CPU executor on small shapes: it runs what it is asked, sizes
// its buffers by the budget, and rejects what it cannot run by name.
#include "core/backend/real_cpu_executor.h"

#include <gtest/gtest.h>

#include "core/config/hardware_profile.h"
#include "core/util/error.h"
#include "kernels/cpu/expert_ffn_impl.h"

namespace moebench {
namespace {

ModelSpec small(WeightDtype dt, int64_t shared = 0) {
  ModelSpec m;
  m.name = "small";
  m.num_layers = 3;
  m.hidden_size = 256;
  m.routed_experts = 8;
  m.top_k = 2;
  m.expert_intermediate = 128;
  m.shared_experts = shared;
  m.shared_intermediate = shared ? 64 : 0;
  m.expert_dtype = dt;
  m.num_heads = 4;
  m.num_kv_heads = 4;
  m.head_dim = 64;
  return m;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RealCpuExecutor, RunsEveryTaskItIsGivenAndTimesIt) {
  const ModelSpec m = small(WeightDtype::kBf16, 2);
  HardwareProfile h;
  h.gpu.count = 0;
  const CostModel c(m, h);
  RealCpuOptions o;
  o.threads = 2;
  o.weights_gib = 0.01;
  RealCpuExecutor ex(m, o);
  EXPECT_EQ(ex.shared_buffers(), 3);  // one per MoE layer: they fit in the quarter of the budget
  EXPECT_EQ(ex.kernel_name(), auto_expert_kernel(WeightDtype::kBf16));
  const int64_t routed = ex.routed_buffers();
  EXPECT_GE(routed, 2);
  EXPECT_LE(routed, 3 * 8);
  EXPECT_GT(ex.cpu_expert_ns(c, 0, 1, 1, true), 0.0);
  EXPECT_GT(ex.cpu_expert_ns(c, 2, 7, 9, false), 0.0);
  EXPECT_GT(ex.shared_experts_ns(c, 1, 3), 0.0);
  EXPECT_EQ(ex.tasks(), 3);
  EXPECT_GT(ex.measured_ns(), 0.0);
  const auto notes = ex.notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("routed and shared experts executed with kernel " + ex.kernel_name()),
            std::string::npos);
  EXPECT_NE(notes[0].find("timed by the cost model, not executed"), std::string::npos);
}

TEST(RealCpuExecutor, BudgetSetsTheNumberOfBuffers) {
  const ModelSpec m = small(WeightDtype::kBf16);
  const double expert = 3.0 * 256 * 128 * 2;
  RealCpuOptions o;
  o.weights_gib = 5.5 * expert / double(int64_t(1) << 30);
  EXPECT_EQ(RealCpuExecutor(m, o).routed_buffers(), 5);
  o.weights_gib = 1.0;  // more than all 24 experts need
  EXPECT_EQ(RealCpuExecutor(m, o).routed_buffers(), 24);
  o.weights_gib = 1e-9;  // less than one: two buffers, so consecutive experts never share one
  EXPECT_EQ(RealCpuExecutor(m, o).routed_buffers(), 2);
}

TEST(RealCpuExecutor, RejectsWhatItCannotRun) {
  RealCpuOptions o;
  o.weights_gib = 0.01;
  EXPECT_NE(error_of([&] { RealCpuExecutor(small(WeightDtype::kFp16), o); }).find("found fp16"),
            std::string::npos);
  o.kernel = "onednn";
  // bf16 only; on a CPU where oneDNN has no bf16 matmul (no AVX-512), not
  // offered at all.
  EXPECT_NE(error_of([&] {
              RealCpuExecutor(small(WeightDtype::kInt8), o);
            }).find(onednn_bf16_available() ? "expected weights in bf16, found int8"
                                            : "(what this CPU can run), found 'onednn'"),
            std::string::npos);
  o.kernel = "amx-int3";
  EXPECT_NE(error_of([&] { RealCpuExecutor(small(WeightDtype::kBf16), o); }).find("amx-int3"),
            std::string::npos);
  o.kernel = "auto";
  o.threads = 0;
  EXPECT_NE(
      error_of([&] { RealCpuExecutor(small(WeightDtype::kBf16), o); }).find("at least 1 thread"),
      std::string::npos);
}

}  // namespace
}  // namespace moebench
