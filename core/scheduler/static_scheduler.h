// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// scheduler = "static": the papers' fixed batches. Sequences are taken in
// order, batch_size at a time; a batch is prefilled in one step (every
// prompt token of its sequences), then decoded one token per sequence per
// step until its longest sequence ends; only then does the next batch
// start. Time plays no part: every step is known at start.

#include "core/scheduler/scheduler.h"

namespace moebench {

class StaticScheduler final : public Scheduler {
 public:
  void start(SchedulerInput in) override;
  bool next(double now_ns, StepPlan* step) override;
  bool plans_ahead() const override { return true; }
  bool serves_arrivals() const override { return false; }

 private:
  std::vector<SequenceInfo> seqs_;
  int64_t batch_size_ = 1;
  int64_t b0_ = 0;          // the current batch's first sequence
  int64_t batch_ = 0;       // its index
  int64_t decode_ = -1;     // the next decode step of the batch; -1: its prefill is next
  int64_t max_decode_ = 0;  // the batch's longest decode
};

}  // namespace moebench
