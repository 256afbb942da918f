// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The real backend's CPU executor (docs/BACKENDS.md):
// every task of a CPU-only step runs on this machine and its measured
// wall-clock time becomes the task's duration: routed and shared experts
// through an expert kernel (kernels/cpu/expert_ffn.h), attention with its
// norms and router, dense FFNs and the lm head through RealCpuBlocks
// (harness/backend/real_cpu_blocks.h), all on one thread pool. Copies and GPU
// tasks (a profile with a GPU: the real backend has no GPU lane yet) are timed by the cost model.
//
// Weights at paper scale: an expert of DeepSeek-V3 is 88 MB in bf16, all
// 58 x 256 of them 5 TB. The executor allocates as many distinct expert
// buffers as `weights_gib` allows (far beyond the last-level cache) and
// maps (layer, expert) onto them round-robin, so consecutive experts of a
// step read different memory, as they would with the real model. This
// keeps each task's kernel time and memory traffic; it does not keep page
// placement, TLB reach or the NUMA layout of a full model, nor the
// chance that an expert used again soon is still in the cache (with fewer
// buffers than experts, a buffer can be hit by two different experts in
// one step). Buffers hold seeded random weights (one expert's values,
// copied into every buffer: the kernels' time does not depend on them).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/model_spec.h"
#include "core/engine/executor.h"
#include "harness/backend/real_cpu_blocks.h"
#include "kernels/cpu/expert_ffn.h"
#include "kernels/cpu/kernel_choice.h"
#include "kernels/cpu/kernel_registry.h"
#include "kernels/cpu/thread_pool.h"

namespace moebench {

struct RealCpuOptions {
  std::string kernel = "auto";  // an expert kernel name or "auto"
  // For "auto": the candidates' measured times for this model and dtype
  // (the profile's [[kernel_time]] entries); "auto" then runs the fastest at
  // each token count (kernels/cpu/kernel_choice.h). Empty: the fixed rule of
  // auto_expert_kernel, stated in the notes.
  std::vector<KernelTiming> auto_timings;
  double weights_gib = 4.0;  // distinct expert buffers take at most this much memory
  int threads = 1;           // threads per expert task (the caller included)
  // How long an idle pool thread polls for the next task before it sleeps
  // (ThreadPool::kDefaultSpinUs); 0 frees its core at once, for threads
  // that feed a GPU beside it (moebench replay --spin-us).
  int spin_us = ThreadPool::kDefaultSpinUs;
  uint64_t seed = 1;
  // The run's largest shape as the case's workload gives it (sequences in a
  // step, positions, tokens in a step): the memory check before anything is
  // allocated counts the attention blocks' KV caches and scratch for it.
  int64_t plan_sequences = 1, plan_positions = 1, plan_step_tokens = 1;
};

// The memory a real run holds, in bytes, from the model's sizes and the
// options (the budget, the run's shape), before anything is allocated: the
// expert buffers (with one seed built unpacked and packed), the attention
// blocks with their KV caches, and the lm head, dense FFN and scratch. The
// executor checks it, plus 1 GiB for the rest of the run, against the
// memory available (DeepSeek-V3 at the default 4 GiB: 12.23 GiB counted,
// 11.30 GiB peak resident measured; docs/BACKENDS.md, "Memory").
struct RealFootprint {
  double experts = 0, blocks = 0, other = 0;
  // In an AddressSanitizer build (make asan) only: its shadow memory (an
  // eighth of what the run holds) and its quarantine of freed memory (256 MiB
  // by default on 64-bit), which the process also holds: the check's promise
  // holds in every build the Makefile offers. 0 elsewhere.
  double sanitizer = 0;
  int64_t block_buffers = 0;
  double total() const { return experts + blocks + other + sanitizer; }
};
RealFootprint real_footprint(const ModelSpec& model, const RealCpuOptions& opt);

// auto_expert_kernel, the fixed rule of "auto": kernels/cpu/kernel_registry.h.

class RealCpuExecutor final : public Executor {
 public:
  // Allocates the weight buffers (seconds for gigabytes). Throws
  // moebench::Error for an expert dtype or kernel this CPU cannot run.
  RealCpuExecutor(const ModelSpec& model, const RealCpuOptions& opt);

  std::string backend() const override { return "real"; }
  double cpu_expert_ns(const CostModel& c, int32_t layer, int32_t expert, int64_t tokens,
                       bool first_in_layer) override;
  double shared_experts_ns(const CostModel& c, int32_t layer, int64_t tokens) override;
  void begin_run(int64_t max_sequences, int64_t max_positions, int64_t max_step_tokens,
                 bool record) override;
  void begin_step(int64_t step) override { step_ = step; }
  double attention_ns(int32_t block, const StepTokens& tokens, double predicted_ns) override;
  double dense_ffn_ns(int32_t block, int64_t tokens, double predicted_ns) override;
  double lm_head_ns(int64_t tokens, double predicted_ns) override;
  std::vector<TaskRecord> measured() const override { return measured_; }
  std::vector<std::string> notes() const override;

  const std::string& kernel_name() const { return kernel_name_; }
  // The kernel a routed task of `tokens` tokens per expert runs.
  std::string kernel_for(int64_t tokens) const { return moebench::kernel_for(*kernel_, tokens); }
  // With kernel "auto": from now on the fastest of `timings` at each token
  // count (moebench calibrate, after timing the candidates). Throws
  // moebench::Error for a candidate that does not read the packed weights
  // this executor holds, or when the kernel is not "auto".
  void use_auto_timings(const std::vector<KernelTiming>& timings);
  // One routed expert task on buffer `buffer` (modulo the buffers) with
  // kernel `k`, not recorded: its wall time in ns (calibrate's candidates).
  double time_routed_with(ExpertKernel& k, int64_t buffer, int64_t tokens);
  int64_t routed_buffers() const { return int64_t(routed_.size()); }
  int64_t shared_buffers() const { return int64_t(shared_.size()); }
  // Tasks run and their measured time, ns.
  int64_t tasks() const { return tasks_; }
  double measured_ns() const { return measured_ns_; }

 private:
  // Runs `e` for `tokens` tokens; returns the wall-clock time in ns.
  double run(const ExpertWeights& e, int64_t tokens, TaskKind kind, int32_t layer, int32_t expert);
  // Runs f() and returns its wall-clock time in ns, recorded as a task.
  template <class F>
  double timed(TaskKind kind, int32_t layer, int32_t expert, int64_t tokens, F&& f);
  void ensure_tokens(int64_t tokens);

  ModelSpec model_;
  RealCpuOptions opt_;
  std::string kernel_name_;
  std::string kernel_note_;  // how "auto" chose (notes())
  std::unique_ptr<ExpertKernel> kernel_;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<ExpertWeights> routed_, shared_;
  int64_t max_tokens_ = 0;
  std::vector<float> x_, w_, out_;
  int64_t tasks_ = 0;
  double measured_ns_ = 0;
  std::unique_ptr<RealCpuBlocks> blocks_;  // from begin_run
  bool record_ = false;
  int64_t step_ = -1;
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();
  std::vector<TaskRecord> measured_;
};

}  // namespace moebench
