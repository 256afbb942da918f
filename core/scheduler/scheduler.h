// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Scheduler: decides before each step which tokens run in it (Vidur's
// scheduler family is the model: docs/ARCHITECTURE.md, "Requests and a
// scheduler"). The engine asks for steps and runs them; the scheduler owns
// which sequence is where. One file per scheduler under
// core/scheduler/, each made by name (make_scheduler).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/config/value.h"
#include "core/config/workload_spec.h"
#include "core/trace/trace.h"

namespace moebench {

// One step of the run: its phase and the tokens in it, (sequence, position)
// in the order the step holds them.
struct StepPlan {
  Phase phase = Phase::kDecode;
  int64_t batch =
      0;  // the group of sequences it belongs to (the static scheduler's batch; -1 none)
  // The batch's decode step (continuous: the run's decode steps so far), -1 for a prefill step.
  int64_t decode_step = -1;
  std::vector<std::pair<int64_t, int64_t>> tokens;
  // The step starts no earlier (simulated ns): the arrival of a request it
  // serves when the machine sat idle waiting for it; 0 otherwise.
  double not_before_ns = 0;

  bool operator==(const StepPlan&) const = default;
};

// What a scheduler serves: the run's sequences in order (each a request),
// when each arrives and the limits of a step.
struct SchedulerInput {
  std::vector<SequenceInfo> sequences;
  std::vector<double> arrival_ns;  // per sequence, non-decreasing; empty: every one at 0
  int64_t batch_size = 1;          // static: a batch; continuous: running sequences at most
  int64_t max_batch_tokens = 0;    // continuous: tokens in a step at most (0: no bound)
  // continuous: prompts in chunks that fill the token budget left by the
  // running requests' decode tokens (a step may hold both phases).
  bool chunked_prefill = false;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // The name it is made by (set by make_scheduler).
  const std::string& name() const { return name_; }
  // The run's sequences and limits. Called once, before any next().
  virtual void start(SchedulerInput in) = 0;
  // The next step to run once the previous one has ended at `now_ns`
  // (simulated time), or false when every sequence has finished.
  virtual bool next(double now_ns, StepPlan* step) = 0;
  // True when next() does not depend on time: the engine then plans every
  // step before the first (what the oracles' future and the real
  // executor's sizing read).
  virtual bool plans_ahead() const = 0;
  // True when it serves requests that arrive over time (workload.arrival
  // other than "batch"); a scheduler of fixed batches answers false.
  virtual bool serves_arrivals() const = 0;
  // The workload keys of its own it reads (SchedulerInput's limits beyond
  // batch_size, e.g. "max_batch_tokens"): the experiment refuses any other
  // scheduler's key in the workload, which would have no effect.
  virtual std::vector<std::string> settings() const { return {}; }

 private:
  friend std::unique_ptr<Scheduler> make_scheduler(const std::string& name);
  std::string name_;
};

// The scheduler registered under `name`; throws moebench::Error naming the
// known ones otherwise.
std::unique_ptr<Scheduler> make_scheduler(const std::string& name);
// The names make_scheduler knows, in order.
std::vector<std::string> scheduler_names();
// What `name` does, in a sentence (moebench config list).
std::string scheduler_doc(const std::string& name);
// The workload's scheduler, checked at load (`src` is the workload table,
// `prefix` its name): a known name, one that serves requests arriving over
// time when they do, and no key of another scheduler's it does not read.
// Throws ConfigError naming the key and its line.
void check_scheduler(const WorkloadSpec& w, const cfg::Value& src, const std::string& prefix);

}  // namespace moebench
