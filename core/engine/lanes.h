// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Lanes of the simulated machine and the H2D link.
//
// GPU, CPU, D2H and the activation-return lane run tasks in the order they
// are submitted: a task starts at max(lane free, its inputs ready) and its
// times are fixed when it is submitted. The H2D link carries expert weights
// and keeps transfers that have not started yet movable: with the
// "demand-first" order an on-demand load overtakes queued prefetches. A
// transfer becomes fixed once something depends on it (a GPU task waits for
// it) or once it has started.
//
// Events are ordered by (time, lane priority, sequence number): at equal
// times a transfer completion (H2D) is applied before a GPU event, so an
// expert whose copy ends exactly when its layer's gate ends counts as
// resident. Timelines list tasks in the same order.

#include <cstdint>
#include <deque>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moebench {

enum class Lane : int { kH2D = 0, kGpu = 1, kCpu = 2, kD2H = 3, kActH2D = 4 };
inline constexpr int kNumLanes = 5;
const char* to_string(Lane l);
// Lower runs first at equal times.
inline int lane_priority(Lane l) {
  return static_cast<int>(l);
}

enum class TaskKind {
  kAttention,  // non-MoE work of a layer (attention, norms, router)
  kDenseFfn,   // FFN of a dense layer
  kSharedExperts,
  kGpuExpert,
  kCpuExpert,
  kDeferredExpert,  // CPU expert whose output is consumed one layer later
  kLmHead,
  kPredict,       // a predictor's extra GPU work
  kActToCpu,      // hidden states to the CPU
  kActToGpu,      // CPU expert outputs back to the GPU
  kDemandLoad,    // weights copied because the expert runs on the GPU now
  kPrefetchLoad,  // weights copied ahead of need
  kSwapLoad,      // weights copied by a cache policy's swap (window, prefill-end fill)
  kBufferCopy,    // weights copied into a buffer no expert reads (LayerPlan::unread_buffer_layer)
  kRecopy,        // a cached expert's weights copied again after it computed
                  // (residency.recopy_from_layer)
  kKvToGpu,       // a micro-batch's KV entries of a layer copied host to device for its
                  // attention on the GPU (residency.attention = "gpu-host-kv")
  kCount,         // not a kind: how many there are (each has its row in lanes.cc's table)
};
const char* to_string(TaskKind k);

// What a task kind is, from the one table of them (lanes.cc, kTaskKinds):
// its name (the Chrome timeline's, the replay's, the metrics' labels), what
// it moves or computes, and whether something waits for it now (a demand
// copy, placed before queued prefetches on a demand-first link). Adding a
// GPU task: docs/ADDING_A_GPU_TASK.md.
enum class TaskClass {
  kCompute,      // runs on a compute lane (GPU or CPU)
  kWeights,      // expert weights copied host to device
  kActivations,  // hidden states or expert outputs between host and device
  kKv,           // KV-cache entries copied host to device
};
struct TaskKindInfo {
  TaskKind kind;
  const char* name;
  TaskClass cls;
  bool demand;
};
const TaskKindInfo& task_info(TaskKind k);
// Every task kind, in the enum's order.
std::span<const TaskKindInfo> task_kinds();
// The kind named `name` (a timeline's task), or nullptr.
const TaskKindInfo* task_info_named(std::string_view name);

struct TaskRecord {
  Lane lane;
  TaskKind kind;
  double start_ns = 0, end_ns = 0;
  int64_t seq = 0;  // submission order (ties)
  int64_t step = -1;
  int32_t layer = -1;   // MoE layer (-1: none)
  int32_t expert = -1;  // -1: none
  int64_t tokens = -1;  // tokens the task processes (expert and attention tasks; -1: none)
  int64_t task =
      -1;  // lane tasks: the task's id in the layer's task graph (-1: a copy on the link)
  int64_t waits[4] = {-1, -1, -1, -1};  // lane tasks: the ids of the earlier tasks it waits for
  int64_t copy =
      -1;  // a copy on the link: its transfer id; a GPU expert: the id of its own copy (-1: none)
  // A copy on the link that is not one whole expert host to device: reduced
  // precision, or with an evicted expert's write-back (what a replay of the
  // timeline cannot reproduce with whole-expert copies).
  bool reduced = false, writeback = false;
  // An attention run whole on the GPU: its sequences and the KV entries
  // each new token reads (a replay runs it for real with them; -1: unknown).
  int64_t sequences = -1, context = -1;
};

// Event order: (time, lane priority, sequence number).
inline bool event_before(double ta, Lane la, int64_t sa, double tb, Lane lb, int64_t sb) {
  if (ta != tb) return ta < tb;
  if (lane_priority(la) != lane_priority(lb)) return lane_priority(la) < lane_priority(lb);
  return sa < sb;
}

// A FIFO lane.
class FifoLane {
 public:
  // Starts a task no earlier than `ready_ns`; returns its start.
  double submit(double ready_ns, double duration_ns, double* end_ns) {
    const double start = ready_ns > free_ ? ready_ns : free_;
    free_ = start + duration_ns;
    busy_ += duration_ns;
    *end_ns = free_;
    return start;
  }
  double free_ns() const { return free_; }
  double busy_ns() const { return busy_; }
  // The task submitted last takes `extra_ns` longer (nothing queued behind it).
  void extend_last(double extra_ns) {
    free_ += extra_ns;
    busy_ += extra_ns;
  }

 private:
  double free_ = 0, busy_ = 0;
};

enum class LinkOrder { kDemandFirst, kFifo };

// A queue in one vector that pops from the front by moving a head index (and
// gives the popped space back once half the vector is behind the head): the
// link's random access by position is an index, not a deque's block lookup.
// Pushing or inserting may move the elements (references do not survive it).
template <typename T>
class FrontQueue {
 public:
  size_t size() const { return v_.size() - head_; }
  bool empty() const { return v_.size() == head_; }
  T& operator[](size_t i) { return v_[head_ + i]; }
  const T& operator[](size_t i) const { return v_[head_ + i]; }
  T& front() { return v_[head_]; }
  const T& front() const { return v_[head_]; }
  const T& back() const { return v_.back(); }
  const T* begin() const { return v_.data() + head_; }
  const T* end() const { return v_.data() + v_.size(); }
  void push_back(const T& x) { v_.push_back(x); }
  void insert(size_t i, const T& x) { v_.insert(v_.begin() + std::ptrdiff_t(head_ + i), x); }
  void erase(size_t i) { v_.erase(v_.begin() + std::ptrdiff_t(head_ + i)); }
  void pop_front() {
    if (++head_ == v_.size()) {
      v_.clear();
      head_ = 0;
    } else if (head_ >= 1024 && 2 * head_ >= v_.size()) {
      v_.erase(v_.begin(), v_.begin() + std::ptrdiff_t(head_));
      head_ = 0;
    }
  }

 private:
  std::vector<T> v_;
  size_t head_ = 0;
};

struct Transfer {
  int64_t id = 0;
  int32_t layer = -1, expert = -1;
  TaskKind kind = TaskKind::kDemandLoad;
  double issue_ns = 0;  // when the host asked for it
  double earliest_ns =
      0;  // cannot start before (e.g. its slot's previous occupant is still computing)
  double duration_ns = 0;
  double start_ns = 0, end_ns = 0;
  bool fixed = false;        // cannot be moved any more
  bool done = false;         // completion applied
  bool staging = false;      // goes to a use-once buffer, not into the cache
  int64_t step = -1;         // step it was issued in
  int64_t target_step = -1;  // prefetch: the step it is meant for
  int32_t target_layer = -1;
  int64_t bytes = 0;       // host-to-device bytes it moves (a reduced copy: fewer)
  bool reduced = false;    // a reduced-precision copy (residency.reduced_copy_ratio)
  bool writeback = false;  // also writes an evicted expert back first (residency.writeback)
};

class Link {
 public:
  explicit Link(LinkOrder order) : order_(order) {}

  // Queues a transfer; returns its id. Earlier-queued transfers that have
  // not started by `t.issue_ns` and are not fixed are moved behind a demand
  // load when the order is demand-first. `moved_from`, when given, receives
  // the queue position it was inserted at, and `moved_to` one past the last
  // position whose times changed: only the transfers queued in between moved.
  int64_t issue(Transfer t, size_t* moved_from = nullptr, size_t* moved_to = nullptr);
  // Freezes transfer `id` (and everything queued before it).
  void fix(int64_t id);
  // Completes, in event order, every transfer ending at or before now_ns;
  // appends their ids to `done`.
  void advance(double now_ns, std::vector<int64_t>* done);
  // Removes a queued, not-started, unfixed transfer. Returns false if it cannot be cancelled.
  bool cancel(int64_t id, double now_ns);

  // REQUIRES: the transfer is still queued, or is the most recently completed
  // ones not yet released (completed transfers are freed as the link advances).
  const Transfer& get(int64_t id) const { return all_[size_t(id - base_)]; }
  Transfer& get(int64_t id) { return all_[size_t(id - base_)]; }
  int64_t count() const { return base_ + int64_t(all_.size()); }
  // When the link could start a new transfer (after everything queued).
  double free_ns() const;
  double busy_ns() const { return busy_; }
  // How much of [from_ns, to_ns) the transfers take, at their present times
  // (the link carries one transfer at a time): the queued ones, and the
  // completed ones while a history is kept.
  double copying_ns(double from_ns, double to_ns) const;
  // Keep the times of completed transfers for copying_ns (off by default);
  // forget_before drops those that ended at or before t_ns (a caller that
  // asks about nothing earlier).
  void keep_history(bool on) { keep_history_ = on; }
  void forget_before(double t_ns);
  std::span<const int64_t> queue() const { return {queue_.begin(), queue_.end()}; }

 private:
  // Recomputes start and end from queue position `from` on; stops at the
  // first later transfer whose start is unchanged (every one behind it keeps
  // its times, which were computed from the same predecessor). Returns one
  // past the last position it changed.
  size_t reschedule(size_t from);
  // Where a demand load issued at `issue_ns` goes (demand-first): before the
  // first queued prefetch or swap that has neither started nor been fixed,
  // never before a buffer copy; the end when there is none.
  size_t demand_place(double issue_ns) const;

  LinkOrder order_;
  FrontQueue<Transfer> all_;  // transfers with id >= base_
  int64_t base_ = 0;
  FrontQueue<int64_t> queue_;  // not yet completed, in link order
  // How many of queue_'s first transfers are fixed: the fixed ones are a
  // prefix of the queue (nothing is placed before a fixed transfer).
  size_t fixed_ = 0;
  double committed_free_ = 0;  // end of the last completed transfer
  double busy_ = 0;
  int64_t buffer_copies_ = 0;  // buffer copies in queue_
  bool keep_history_ = false;
  std::deque<std::pair<double, double>> done_spans_;  // completed [start, end), in time order
};

}  // namespace moebench
