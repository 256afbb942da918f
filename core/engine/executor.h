#pragma once
// One core, two executors (docs/ARCHITECTURE.md, "Backends"). The step
// loop, the component hooks, residency and the validation of every
// decision are shared; an Executor says how long a task takes:
//
//   simulated  the cost model's duration (core/engine/cost_model.h): the
//              default, deterministic, any model on any hardware profile
//   real       the task is run on this machine when it is submitted and its
//              measured wall-clock time is its duration
//              (core/backend/real_cpu_executor.h)
//
// The engine asks the executor for every task the real backend can run
// (routed and shared experts on the CPU lane); the other tasks are timed by
// the cost model on both backends, and the executor's notes() say so in the
// result. Lanes stay FIFO on both: on a CPU-only machine the real executor
// runs the CPU lane's tasks one after another in lane order, each with all
// of its threads, which is the order the lane's times compose in.

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/cost_model.h"

namespace moebench {

class Executor {
 public:
  virtual ~Executor() = default;
  // "sim" or "real".
  virtual std::string backend() const = 0;
  // A routed expert of MoE layer `layer` on the CPU lane with `tokens`
  // tokens (>= 1); `first_in_layer` is the layer's first CPU expert task.
  virtual double cpu_expert_ns(const CostModel& c, int32_t layer, int32_t expert, int64_t tokens,
                               bool first_in_layer) = 0;
  // All shared experts of a layer for `tokens` tokens on the compute lane
  // (0 when the model has none).
  virtual double shared_experts_ns(const CostModel& c, int32_t layer, int64_t tokens) = 0;
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
