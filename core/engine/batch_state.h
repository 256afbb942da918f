// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The tokens running through the layers: a whole step, or one micro-batch of
// a pipelined decode step (the engine swaps micro-batches in and out of its
// current batch), and what a micro-batch carries between its layers.

#include <cstdint>

#include "core/engine/executor.h"
#include "core/engine/routing_data.h"
#include "core/engine/task_log.h"

namespace moebench {

struct BatchState {
  BatchState(const RunRouting& run, Phase phase) : step(run, phase) {}
  StepRouting step;
  StepTokens tokens;  // the tokens as attention sees them (the executor's)
  int64_t sequences = 0, context = 0;
  double nonmoe_ns = 0;
  double layer_ready_ns = 0;     // when the next layer's attention may start
  Waits ready_waits;             // what it waits for besides its lane
  double deferred_done_ns = -1;  // deferred CPU work of the previous layer (-1: none)
  int64_t deferred_task = -1;    // that work's outputs' copy back
};

// A micro-batch: its batch state while the other micro-batches run, and its
// current layer's issued attention (AttentionPath::issue): when its output is
// on the GPU, its last task, its GPU time so far.
struct MicroBatch : BatchState {
  explicit MicroBatch(const RunRouting& run) : BatchState(run, Phase::kDecode) {}
  double att_end = 0, att_gpu_ns = 0;
  int64_t att_task = -1;
};

}  // namespace moebench
