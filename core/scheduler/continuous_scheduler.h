// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The continuous scheduler (docs/SERVING.md): requests join and
// leave between steps, as in vLLM's and SGLang's schedulers. Before each
// step it admits the requests that have arrived, first come first served,
// while fewer than batch_size are running; a step is either the prefill of
// newly admitted requests (their prompts, at most max_batch_tokens together;
// a longer prompt runs alone) or one decode token of every running request.
// Prefills go first, as in vLLM's default scheduler without chunked prefill.
// When nothing is running and nothing has arrived, the next step waits for
// the next arrival (StepPlan::not_before_ns).
//
// With chunked_prefill (Sarathi-Serve's and vLLM's chunked prefill) a step
// holds one decode token of every running request that has its first token,
// then prompt chunks that fill the budget left: the prompts being prefilled
// first, then newly admitted requests, first come first served. A step with
// any prompt token is a prefill step (its phase); a prompt's last chunk
// produces its first token.

#include <deque>

#include "core/scheduler/scheduler.h"

namespace moebench {

class ContinuousScheduler final : public Scheduler {
 public:
  void start(SchedulerInput in) override;
  bool next(double now_ns, StepPlan* step) override;
  bool plans_ahead() const override { return false; }
  bool serves_arrivals() const override { return true; }
  std::vector<std::string> settings() const override {
    return {"max_batch_tokens", "chunked_prefill"};
  }

 private:
  struct Running {
    int64_t seq;
    int64_t decoded;    // decode tokens run so far
    int64_t prefilled;  // prompt tokens run so far (chunked prefill)
  };
  bool prefill(StepPlan* step);
  void decode(StepPlan* step);
  void chunked(StepPlan* step);
  void drop_finished();

  SchedulerInput in_;
  int64_t arrived_ = 0;   // sequences with arrival <= now: [0, arrived_)
  int64_t admitted_ = 0;  // sequences admitted (FCFS): [0, admitted_)
  std::deque<Running> running_;
  int64_t decode_steps_ = 0;  // decode steps so far (StepPlan::decode_step)
};

}  // namespace moebench
