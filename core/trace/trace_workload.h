// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// How a trace file becomes a suite's workload.
//
// check_trace_model: the trace must have the model's shape (MoE layers,
// routed experts, top-k); a trace recorded for another model of the same
// shape is accepted with a warning on standard error.
//
// select_trace: a view of a TraceSource that keeps the first `sequences` sequences and caps
// each sequence's prompt and decode lengths: how a suite's `[workload]
// sequences`, `prompt_len` and `decode_len` apply to a trace file.
//
// Routing is causal, so the first P tokens of a recorded prompt are exactly
// the routing of a P-token prompt, and the first D generated tokens are the
// routing of a D-token generation. A generated token after a *shortened*
// prompt, however, was routed with the full prompt as context; the view
// therefore refuses to keep decode tokens of a sequence whose prompt it
// shortens (TraceSelection::check says so; the experiment loader asks it
// before any case runs).

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "core/trace/trace.h"

namespace moebench {

struct TraceSelection {
  static constexpr int64_t kAll = std::numeric_limits<int64_t>::max();
  int64_t sequences = kAll;   // first N sequences
  int64_t prompt_cap = kAll;  // prompt tokens kept per sequence
  int64_t decode_cap = kAll;  // generated tokens kept per sequence

  // What is wrong with the selection for trace `in` (named `where`): more
  // sequences than the trace has, or decode tokens kept after a shortened
  // prompt. `key` is the workload key at fault ("sequences", "prompt_len").
  struct Problem {
    std::string key, expected, found;
  };
  std::optional<Problem> check(const TraceInfo& in, const std::string& where) const;

  // The selected sequences' lengths; throws Error "workload.<key>: expected
  // ..., found ..." for a Problem.
  std::vector<SequenceInfo> apply(const TraceInfo& in, const std::string& where) const;
};

// Throws Error (naming `where`) when the trace's shape differs from the model's;
// `warn_name` prints the other-model warning (experiment expansion does, once per file).
void check_trace_model(const TraceInfo& in, const ModelSpec& m, const std::string& where,
                       bool warn_name = true);

std::unique_ptr<TraceSource> select_trace(std::unique_ptr<TraceSource> base,
                                          const TraceSelection& sel, const std::string& where);

}  // namespace moebench
