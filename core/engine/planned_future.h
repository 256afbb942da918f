// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// PlannedFuture: the oracles' look-ahead (FutureView, core/engine/policy.h)
// over a run whose steps are planned before the first (the static
// scheduler's). It reads the run's routing and the planned steps, and where
// the engine is (RunPosition), which the engine keeps current.

#include <cstdint>
#include <span>
#include <vector>

#include "core/engine/policy.h"
#include "core/engine/routing_data.h"
#include "core/scheduler/scheduler.h"

namespace moebench {

// Where the engine is: the step and MoE layer running, and, while a layer's
// experts are admitted one at a time (residency.admission), that layer and
// each expert's rank in its admission order while it is still to come (else
// -1).
struct RunPosition {
  int64_t step = 0;
  int32_t layer = 0;
  int32_t admitting_layer = -1;
  std::vector<int32_t> pending_rank;  // [E] while admitting_layer >= 0
};

class PlannedFuture final : public FutureView {
 public:
  // `steps` and `at` must outlive this view. Records, for every (layer,
  // expert), the steps it is used in (the engine makes one only for a run
  // with an oracle). `in_turn`: the admission rule admits a layer's experts
  // one at a time, in routing order (it does not judge them at the gate).
  PlannedFuture(const RunRouting& run, const std::vector<StepPlan>& steps, const RunPosition& at,
                bool in_turn);

  int64_t next_use(int32_t layer, int32_t expert) const override;
  int64_t use_position(int64_t step_offset, int32_t layer, int32_t expert) const override;
  std::span<const ActiveExpert> active(int64_t step_offset, int32_t layer) const override;

 private:
  const RunRouting& run_;
  const std::vector<StepPlan>& steps_;
  const RunPosition& at_;
  int32_t L_, E_, k_;
  bool in_turn_;  // the layer's experts admitted one at a time, in routing order
  std::vector<std::vector<int64_t>> uses_;  // [L*E] steps in which (layer, expert) is active
  mutable std::vector<std::vector<ActiveExpert>> active_;  // of step active_step_, per layer
  mutable int64_t active_step_ = -1;
};

}  // namespace moebench
