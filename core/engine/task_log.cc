// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/task_log.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/util/error.h"

namespace moebench {

int64_t TaskLog::add_task(Lane id, const FifoLane* lane, TaskKind kind, double start, double end,
                          double dur, const Waits& checked, const Waits& shown, int64_t step,
                          int32_t layer, int32_t expert, int64_t tokens) {
  ++last_;
  if (graph_on_) graph_.push_back({id, lane, kind, start, end, checked});
  if (timeline_on_ && dur > 0) {
    timeline_.push_back({id,
                         kind,
                         start,
                         end,
                         seq_++,
                         step,
                         layer,
                         expert,
                         tokens,
                         last_,
                         {shown.task[0], shown.task[1], shown.task[2], shown.task[3]},
                         shown.copy});
  }
  return last_;
}

void TaskLog::extend_last(int64_t task, double extra_ns) {
  if (task != last_)
    throw InternalError(fmt::format("task log: task {} extended after {}", task, last_));
  if (graph_on_) graph_.back().end += extra_ns;
  if (timeline_on_ && !timeline_.empty() && timeline_.back().task == task)
    timeline_.back().end_ns += extra_ns;
}

void TaskLog::shape_attention(int64_t task, int64_t sequences, int64_t context) {
  if (!timeline_on_ || timeline_.empty() || timeline_.back().task != task) return;
  timeline_.back().sequences = sequences;
  timeline_.back().context = context;
}

void TaskLog::add_copy(const Transfer& t, int64_t transfer_id) {
  if (!timeline_on_) return;
  timeline_.push_back({Lane::kH2D,
                       t.kind,
                       t.start_ns,
                       t.end_ns,
                       seq_++,
                       t.step,
                       t.layer,
                       t.expert,
                       -1,
                       -1,
                       {-1, -1, -1, -1},
                       transfer_id});
  timeline_.back().reduced = t.reduced;
  timeline_.back().writeback = t.writeback;
}

void TaskLog::check() const {
  std::map<const FifoLane*, double> lane_end;
  for (size_t i = 0; i < graph_.size(); ++i) {
    const GraphTask& t = graph_[i];
    double expect = lane_end[t.on];
    for (int64_t d : t.waits.task) {
      if (d < 0) continue;
      if (d >= int64_t(i))
        throw InternalError(fmt::format("task graph: task {} waits for a later task {}", i, d));
      const GraphTask& dep = graph_[size_t(d)];
      expect = std::max(expect, dep.end + (dep.lane != t.lane ? handoff_ns_ : 0.0));
    }
    expect = std::max(expect, t.waits.copies_end);
    if (t.start != expect) {
      throw InternalError(fmt::format(
          "task graph: task {} ({} on lane {}) starts at {} ns, but its lane and what it "
          "waits for give {} ns",
          i, to_string(t.kind), to_string(t.lane), t.start, expect));
    }
    lane_end[t.on] = t.end;
  }
}

std::vector<TaskRecord> TaskLog::take_timeline() {
  std::stable_sort(timeline_.begin(), timeline_.end(),
                   [](const TaskRecord& a, const TaskRecord& b) {
                     return event_before(a.start_ns, a.lane, a.seq, b.start_ns, b.lane, b.seq);
                   });
  return std::move(timeline_);
}

}  // namespace moebench
