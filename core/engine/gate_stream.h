// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The gate inputs of a run's steps, streamed per sequence from the workload
// and written into a step when a component first reads them
// (StepRouting::gate_input). A step whose gate inputs nobody reads (every
// predictor's result already shared by another case of the workload,
// core/engine/token_memo.h) generates none; a later step's read skips the
// stream past them, so every token read gets the same bits as when each
// step read its own.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/routing_data.h"
#include "core/trace/trace.h"

namespace moebench {

class GateStream final : public GateFiller {
 public:
  // Refuses a source without gate inputs or gate weights (`strategy` names
  // the run's strategy in the message).
  GateStream(const TraceSource& src, int64_t sequences, int64_t layers,
             const std::string& strategy);
  // The step's tokens' gate inputs, [token][layer][h_trace], into `out`.
  // REQUIRES: a sequence's tokens are asked for in position order.
  void fill(const StepRouting& step, std::vector<float>& out) override;
  int64_t h() const { return h_; }

 private:
  const TraceSource& src_;
  int64_t layers_, h_;
  std::vector<std::unique_ptr<SequenceReader>> readers_;
  std::vector<int64_t> next_pos_;  // per sequence: the position its reader gives next
  TokenRecord rec_;
};

}  // namespace moebench
