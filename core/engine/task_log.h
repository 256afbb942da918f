// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// TaskLog: the run's record of its tasks. Every lane task gets an id (the
// order of submission); with EngineOptions::check_graph the task graph is
// kept and checked at the end (each task starts when its lane and what it
// waits for allow, never before); with EngineOptions::timeline every task
// and every copy on the link becomes a TaskRecord of the Chrome trace.

#include <cstdint>
#include <limits>
#include <vector>

#include "core/engine/lanes.h"

namespace moebench {

// What a task waits for besides its lane: up to four tasks (ids from the
// log, -1: none) and copies (the latest end among them, -inf: none).
struct Waits {
  int64_t task[4] = {-1, -1, -1, -1};
  double copies_end = -std::numeric_limits<double>::infinity();
  int64_t copy = -1;  // a GPU expert's own copy (transfer id; timeline only), -1: none
};

class TaskLog {
 public:
  TaskLog(bool graph, bool timeline) : graph_on_(graph), timeline_on_(timeline) {}

  // A lane task on `lane` (named `id`) from start to end: its id. `checked`
  // is what the graph check holds it to; `shown`, what the timeline says it
  // waits for. A task of no duration is not drawn.
  int64_t add_task(Lane id, const FifoLane* lane, TaskKind kind, double start, double end,
                   double dur, const Waits& checked, const Waits& shown, int64_t step,
                   int32_t layer, int32_t expert, int64_t tokens);
  // A copy on the link that has ended (timeline only; no id).
  void add_copy(const Transfer& t, int64_t transfer_id);
  // Task `task`, an attention run whole on the GPU, over `sequences`
  // sequences whose new tokens each read `context` KV entries (timeline only).
  void shape_attention(int64_t task, int64_t sequences, int64_t context);
  // The task added last (`task`) ends `extra_ns` later (nothing has waited
  // for it yet).
  void extend_last(int64_t task, double extra_ns);
  // The id of the lane task added last (-1: none yet).
  int64_t last() const { return last_; }
  // Keep the task graph from now on (its lanes and ends): a task waiting for
  // a task of another lane starts `handoff_ns` after its end (the hardware's
  // hand-off term), which check() then holds it to.
  void keep_ends(double handoff_ns) {
    graph_on_ = true;
    handoff_ns_ = handoff_ns;
  }
  // Task `task`'s lane and end (the graph kept before it was added).
  Lane lane_of(int64_t task) const { return graph_[size_t(task)].lane; }
  double end_of(int64_t task) const { return graph_[size_t(task)].end; }
  // Throws InternalError naming the first task that starts before its lane
  // and what it waits for allow, or that waits for a later task.
  void check() const;
  // The timeline in event order (core/engine/lanes.h, event_before).
  std::vector<TaskRecord> take_timeline();

 private:
  struct GraphTask {
    Lane lane;
    const FifoLane* on;
    TaskKind kind;
    double start, end;
    Waits waits;
  };
  bool graph_on_, timeline_on_;
  double handoff_ns_ = 0;
  std::vector<GraphTask> graph_;
  std::vector<TaskRecord> timeline_;
  int64_t last_ = -1;
  int64_t seq_ = 0;  // submission order of the timeline's records (ties)
};

}  // namespace moebench
