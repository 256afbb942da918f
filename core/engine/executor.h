// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// One core, two executors (docs/ARCHITECTURE.md, "Backends"). The step
// loop, the component hooks, residency and the validation of every
// decision are shared; an Executor says how long a task takes:
//
//   simulated  the cost model's duration (core/engine/cost_model.h): the
//              default, deterministic, any model on any hardware profile
//   real       the task is run on this machine when it is submitted and its
//              measured wall-clock time is its duration
//              (harness/backend/real_cpu_executor.h)
//
// The engine hands the executor every compute task of a CPU-only step:
// attention with norms and router, dense FFN, shared and routed experts,
// lm head. For each it passes the cost model's duration (`predicted_ns`,
// what decisions read); the simulated executor returns it, the real one
// runs the task and returns what it measured. Copies and GPU tasks stay
// with the cost model (the real backend has no GPU lane yet), and the executor's
// notes() say what it ran in the result. Lanes stay FIFO on both: on a
// CPU-only machine the real executor runs the CPU lane's tasks one after
// another in lane order, each with all of its threads, which is the order
// the lane's times compose in.

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/cost_model.h"
#include "core/engine/lanes.h"

namespace moebench {

// The tokens of a step as attention sees them: token t belongs to the
// step's sequence slot[t] (0 .. sequences - 1, in the step's order) and sits
// at position pos[t] of its sequence (it attends to positions 0 .. pos[t]).
struct StepTokens {
  std::vector<int32_t> slot;
  std::vector<int64_t> pos;
  int64_t sequences = 0;
  int64_t size() const { return int64_t(pos.size()); }
};

class Executor {
 public:
  virtual ~Executor() = default;
  // "sim" or "real".
  virtual std::string backend() const = 0;
  // Before the first step: the most sequences in one step, the most
  // positions of a sequence, the most tokens in one step; `record`: keep
  // every executed task's measured span (measured()).
  virtual void begin_run(int64_t /*max_sequences*/, int64_t /*max_positions*/,
                         int64_t /*max_step_tokens*/, bool /*record*/) {}
  virtual void begin_step(int64_t /*step*/) {}
  // A routed expert of MoE layer `layer` on the CPU lane with `tokens`
  // tokens (>= 1); `first_in_layer` is the layer's first CPU expert task.
  virtual double cpu_expert_ns(const CostModel& c, int32_t layer, int32_t expert, int64_t tokens,
                               bool first_in_layer) = 0;
  // All shared experts of a layer for `tokens` tokens on the compute lane
  // (0 when the model has none).
  virtual double shared_experts_ns(const CostModel& c, int32_t layer, int64_t tokens) = 0;
  // Attention, norms and router of transformer block `block` (0-based over
  // every block, dense ones included) for the step's tokens.
  virtual double attention_ns(int32_t /*block*/, const StepTokens& /*tokens*/,
                              double predicted_ns) {
    return predicted_ns;
  }
  // The FFN of dense block `block`.
  virtual double dense_ffn_ns(int32_t /*block*/, int64_t /*tokens*/, double predicted_ns) {
    return predicted_ns;
  }
  // The lm head and sampling.
  virtual double lm_head_ns(int64_t /*tokens*/, double predicted_ns) { return predicted_ns; }
  // Every task it executed since begin_run with `record`, on the host clock
  // (ns since begin_run), in the order they ran; empty on the simulated backend.
  virtual std::vector<TaskRecord> measured() const { return {}; }
  // What this executor ran and what it only timed, for the result's warnings.
  virtual std::vector<std::string> notes() const { return {}; }
};

// The simulated executor: every duration from the cost model.
class SimExecutor final : public Executor {
 public:
  std::string backend() const override { return "sim"; }
  double cpu_expert_ns(const CostModel& c, int32_t, int32_t, int64_t tokens, bool first) override {
    return c.cpu_expert_ns(tokens, first);
  }
  double shared_experts_ns(const CostModel& c, int32_t, int64_t tokens) override {
    return c.gpu_shared_ns(tokens);
  }
};

}  // namespace moebench
