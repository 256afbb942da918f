// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The real CPU executor on small shapes: it runs what it is asked, sizes
// its buffers by the budget, and rejects what it cannot run by name.
#include "harness/backend/real_cpu_executor.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "core/config/hardware_profile.h"
#include "core/testing/child.h"
#include "core/util/cancel.h"
#include "core/util/error.h"
#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/kernel_choice.h"

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
  EXPECT_NE(
      notes[0].find("attention, norms, router, dense FFN and lm head not run (no step began)"),
      std::string::npos);
}

ModelSpec with_blocks(ModelSpec m, bool mla) {
  m.vocab_size = 1000;
  m.first_dense_layers = 1;
  m.dense_intermediate = 320;
  if (mla) {
    m.attention = AttentionKind::kMla;
    m.num_heads = 4;
    m.q_lora_rank = 96;
    m.kv_lora_rank = 64;
    m.qk_nope_head_dim = 32;
    m.qk_rope_head_dim = 16;
    m.v_head_dim = 32;
  }
  return m;
}

// the rest of the step runs for real too, each task recorded with
// its measured span on one host clock, in the order it ran.
TEST(RealCpuExecutor, RunsAttentionDenseFfnAndLmHeadAndRecordsTheirSpans) {
  for (bool mla : {false, true}) {
    const ModelSpec m = with_blocks(small(WeightDtype::kBf16), mla);
    RealCpuOptions o;
    o.threads = 2;
    o.weights_gib = 0.05;
    RealCpuExecutor ex(m, o);
    ex.begin_run(2, 40, 70, true);
    ex.begin_step(0);
    StepTokens prefill;  // two sequences of 35 prompt tokens
    for (int32_t s = 0; s < 2; ++s) {
      for (int64_t p = 0; p < 35; ++p) {
        prefill.slot.push_back(s);
        prefill.pos.push_back(p);
      }
    }
    prefill.sequences = 2;
    for (int32_t b = 0; b < 3; ++b) EXPECT_GT(ex.attention_ns(b, prefill, 0.0), 0.0);
    EXPECT_GT(ex.dense_ffn_ns(0, 70, 0.0), 0.0);
    EXPECT_GT(ex.lm_head_ns(70, 0.0), 0.0);
    ex.begin_step(1);
    const StepTokens decode{{0, 1}, {35, 39}, 2};  // the last position prepared
    EXPECT_GT(ex.attention_ns(2, decode, 0.0), 0.0);
    const auto spans = ex.measured();
    ASSERT_EQ(spans.size(), 6u) << (mla ? "mla" : "gqa");
    EXPECT_EQ(spans[0].kind, TaskKind::kAttention);
    EXPECT_EQ(spans[0].layer, -1);  // block 0 is dense
    EXPECT_EQ(spans[1].layer, 0);   // block 1: MoE layer 0
    EXPECT_EQ(spans[3].kind, TaskKind::kDenseFfn);
    EXPECT_EQ(spans[4].kind, TaskKind::kLmHead);
    EXPECT_EQ(spans[4].tokens, 70);
    EXPECT_EQ(spans[5].step, 1);
    for (size_t i = 0; i < spans.size(); ++i) {
      EXPECT_LT(spans[i].start_ns, spans[i].end_ns);
      if (i > 0) {
        EXPECT_GE(spans[i].start_ns, spans[i - 1].end_ns);
      }
    }
    const auto notes = ex.notes();
    EXPECT_NE(notes[0].find(mla ? "attention (MLA, absorbed)" : "attention (grouped-query)"),
              std::string::npos)
        << notes[0];
    EXPECT_EQ(notes[0].find("cost model"), std::string::npos) << notes[0];
    // A step beyond what begin_run prepared is a bug of the caller, named.
    const StepTokens beyond{{0}, {40}, 1};
    EXPECT_THROW(ex.attention_ns(1, beyond, 0.0), InternalError);
  }
}

TEST(RealCpuExecutor, BlockBuffersFollowTheBudget) {
  const ModelSpec m = with_blocks(small(WeightDtype::kBf16), false);
  // One block: q, k, v, o of 256 x 256 and the router 8 x 256, bf16, plus
  // its K and V cache: 1 sequence x 64 positions x 256 x 2 bytes, twice.
  const double block = (4.0 * 256 * 256 + 8 * 256) * 2 + 2.0 * 64 * 256 * 2;
  RealCpuOptions o;
  o.threads = 1;
  o.weights_gib = 2.5 * block / double(int64_t(1) << 30);
  RealCpuBlocks two(m, o.weights_gib, 1, 64, 8, nullptr, 1);
  EXPECT_EQ(two.buffers(), 2);
  RealCpuBlocks all(m, 1.0, 1, 64, 8, nullptr, 1);
  EXPECT_EQ(all.buffers(), 3);
  RealCpuBlocks one(m, 1e-9, 1, 64, 8, nullptr, 1);
  EXPECT_EQ(one.buffers(), 1);
  ModelSpec int8 = m;
  int8.dense_dtype = WeightDtype::kInt8;
  EXPECT_NE(error_of([&] {
              RealCpuBlocks b(int8, 1.0, 1, 64, 8, nullptr, 1);
            }).find("model.dense_dtype: expected bf16"),
            std::string::npos);
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
  EXPECT_NE(error_of([&] { RealCpuExecutor(small(WeightDtype::kInt8), o); })
                .find(onednn_bf16_available() ? "expected weights in bf16, found int8"
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

// real_weights_gib = 100000 grew to 23.5 GB and was killed. The
// budget is checked against the memory available before anything is
// allocated, and the error names the key.
TEST(RealCpuExecutor, AWeightBudgetBeyondTheMemoryAvailableIsRefusedBeforeAllocating) {
  ModelSpec m = small(WeightDtype::kBf16);
  m.num_layers = 64;
  m.routed_experts = 4096;  // 262,144 experts of 192 KiB: 48 GiB if the budget allowed
  ::setenv("MOEBENCH_MEMORY_LIMIT_MB", "2048", 1);
  RealCpuOptions o;
  o.threads = 1;
  o.weights_gib = 100000;
  const std::string e = error_of([&] { RealCpuExecutor ex(m, o); });
  ::unsetenv("MOEBENCH_MEMORY_LIMIT_MB");
  EXPECT_EQ(
      e.rfind("suite.real_weights_gib = 100000 (model 'small': about 48.00 GiB of expert buffers",
              0),
      0u)
      << e;
  EXPECT_NE(e.find("expected at most 2.00 GiB (the memory available)"), std::string::npos) << e;
}

// The memory check counts what the run holds: DeepSeek-V3 at the default
// budget passed a check of 4 + 1 GiB and peaked at 11.8 GB (its attention
// blocks, KV caches, lm head and packing were not counted). The footprint is
// checked against the resident memory a run of that shape grows by, in a
// child process (its peak is its own).
TEST(RealCpuExecutor, TheMemoryCheckCountsWhatTheRunHolds) {
  ModelSpec m = small(WeightDtype::kBf16, 2);
  m.num_layers = 8;
  m.hidden_size = 1024;
  m.expert_intermediate = 512;
  m.shared_intermediate = 512;
  m.routed_experts = 32;
  m.num_heads = 8;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.vocab_size = 16384;
  RealCpuOptions o;
  o.threads = 1;
  o.weights_gib = 0.1;
  o.plan_sequences = 4;
  o.plan_positions = 512;
  o.plan_step_tokens = 64;
  const RealFootprint f = real_footprint(m, o);
  int fd[2];
  ASSERT_EQ(::pipe(fd), 0);
  ASSERT_EQ(testing::exit_code_in_child([&] {
              auto rss_kb = [] {
                std::ifstream in("/proc/self/status");
                std::string line;
                while (std::getline(in, line))
                  if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
                return 0LL;
              };
              const long long before = rss_kb();
              {
                RealCpuExecutor ex(m, o);
                ex.begin_run(o.plan_sequences, o.plan_positions, o.plan_step_tokens, false);
              }
              rusage u{};
              ::getrusage(RUSAGE_SELF, &u);
              const double grew = double(u.ru_maxrss - before) * 1024;
              return ::write(fd[1], &grew, sizeof grew) == ssize_t(sizeof grew) ? 0 : 1;
            }),
            0);
  double grew = 0;
  ASSERT_EQ(::read(fd[0], &grew, sizeof grew), ssize_t(sizeof grew));
  ::close(fd[0]);
  ::close(fd[1]);
  EXPECT_GT(f.blocks, 0.0);
  EXPECT_GE(f.total(), grew) << "counted " << f.total() / 1048576 << " MiB, grew by "
                             << grew / 1048576 << " MiB";
  EXPECT_LE(f.total(), 1.5 * grew)
      << "counted " << f.total() / 1048576 << " MiB, grew by " << grew / 1048576 << " MiB";
}

// SIGINT/SIGTERM stop the allocation and the kernels (core/util/cancel.h).
TEST(RealCpuExecutor, ACancellationStopsItBetweenBuffersAndTasks) {
  const ModelSpec m = small(WeightDtype::kBf16);
  RealCpuOptions o;
  o.threads = 1;
  o.weights_gib = 0.01;
  request_cancel();
  EXPECT_THROW({ RealCpuExecutor cancelled(m, o); }, Cancelled);
  clear_cancel();
  RealCpuExecutor ex(m, o);
  HardwareProfile h;
  const CostModel c(m, h);
  request_cancel();
  EXPECT_THROW(ex.cpu_expert_ns(c, 0, 0, 1, true), Cancelled);
  clear_cancel();
  EXPECT_GT(ex.cpu_expert_ns(c, 0, 0, 1, true), 0.0);
}

// with the profile's measured kernel times, "auto" runs at each
// token count the candidate measured fastest there, and says so; without
// them the fixed rule, also said.
TEST(RealCpuExecutor, AutoRunsTheKernelMeasuredFastestAtEachCount) {
  const auto cands = auto_candidates(WeightDtype::kInt8);
  if (cands.size() < 2) GTEST_SKIP() << "fewer than two packed int8 kernels on this CPU";
  const ModelSpec m = small(WeightDtype::kInt8);
  RealCpuOptions o;
  o.threads = 1;
  o.weights_gib = 0.01;
  {
    RealCpuExecutor fixed(m, o);
    EXPECT_NE(fixed.notes()[0].find("auto: no measured kernel times for small int8"),
              std::string::npos)
        << fixed.notes()[0];
  }
  // Linear between the counts: cands[1] faster from 11 tokens to 95 (the
  // curves cross between 10 and 11, and tie at 96: the tie to the first),
  // cands[0] elsewhere.
  o.auto_timings = {KernelTiming{cands[0], {1, 8, 16, 64, 128}, {100, 100, 300, 800, 1200}},
                    KernelTiming{cands[1], {1, 8, 16, 64, 128}, {150, 150, 200, 700, 1300}}};
  RealCpuExecutor ex(m, o);
  for (int64_t T : {1, 8, 10, 11, 16, 64, 95, 96, 128, 500}) {
    const bool second = T >= 11 && T <= 95;
    EXPECT_EQ(ex.kernel_for(T), second ? cands[1] : cands[0]) << T << " tokens";
  }
  EXPECT_EQ(ex.kernel_name().rfind("auto[" + cands[0] + " 1-", 0), 0u) << ex.kernel_name();
  EXPECT_NE(ex.notes()[0].find("the fastest at each token count of " + cands[0] + ", " + cands[1]),
            std::string::npos)
      << ex.notes()[0];
  HardwareProfile h;
  const CostModel c(m, h);
  EXPECT_GT(ex.cpu_expert_ns(c, 0, 0, 12, true), 0.0);
  // A candidate this CPU lacks, or one reading other weights, is refused by name.
  o.auto_timings = {KernelTiming{"no-such-kernel", {1}, {1}}, KernelTiming{cands[0], {1}, {2}}};
  const std::string other = error_of([&] { RealCpuExecutor bad(m, o); });
  EXPECT_NE(
      other.find(
          "found measured times of 'no-such-kernel' (a profile calibrated on another machine?"),
      std::string::npos)
      << other;
  o.auto_timings = {KernelTiming{"reference", {1}, {1}}, KernelTiming{cands[0], {1}, {2}}};
  const std::string e = error_of([&] { RealCpuExecutor bad(m, o); });
  EXPECT_NE(e.find("hardware kernel_time"), std::string::npos) << e;
  EXPECT_NE(e.find("packed"), std::string::npos) << e;
}

}  // namespace
}  // namespace moebench
