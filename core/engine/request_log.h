// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// RequestLog: each request's times in a served run (
// docs/SERVING.md), kept apart from the engine's step: the engine reports
// every step's plan, start and end; the log finds which requests it started
// and which output tokens it produced. A request's output tokens are its
// prefill's (when it has a prompt) and one per decode step.

#include <string>
#include <vector>

#include "core/engine/metrics.h"
#include "core/scheduler/scheduler.h"

namespace moebench {

// The latency bounds of a named SLO (docs/SERVING.md), ms; throws
// moebench::Error naming the known ones for another name.
struct SloBounds {
  double ttft_ms = 0, tpot_ms = 0;
};
SloBounds slo_bounds(const std::string& name);

class RequestLog {
 public:
  // Starts logging the run's requests (nothing is logged before).
  void start(const SchedulerInput& in);
  bool on() const { return !req_.empty(); }
  // A step that ran plan `sp` from start_ns to end_ns (simulated ns).
  void step(const StepPlan& sp, double start_ns, double end_ns);
  // Moves the records and the SLO into `m`; InternalError when a request did
  // not produce every token exactly once or started before it arrived. The
  // warnings the user should see (too few requests for a percentile).
  std::vector<std::string> finish(const std::string& slo, RunMetrics* m);

 private:
  std::vector<SequenceInfo> seqs_;
  std::vector<RequestTimes> req_;
  std::vector<int64_t> next_pos_;  // each request's next token position
  std::vector<double> itl_ms_;
};

}  // namespace moebench
