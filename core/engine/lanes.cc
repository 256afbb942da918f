// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/lanes.h"

#include <algorithm>
#include <iterator>

#include "core/util/error.h"

namespace moebench {

const char* to_string(Lane l) {
  switch (l) {
    case Lane::kH2D:
      return "h2d";
    case Lane::kGpu:
      return "gpu";
    case Lane::kCpu:
      return "cpu";
    case Lane::kD2H:
      return "d2h";
    case Lane::kActH2D:
      return "h2d-act";
  }
  return "?";
}

namespace {

using C = TaskClass;
// Every task kind, in the enum's order (lanes_test.cc checks it).
constexpr TaskKindInfo kTaskKinds[] = {
    {TaskKind::kAttention, "attention", C::kCompute, false},
    {TaskKind::kDenseFfn, "dense-ffn", C::kCompute, false},
    {TaskKind::kSharedExperts, "shared-experts", C::kCompute, false},
    {TaskKind::kGpuExpert, "gpu-expert", C::kCompute, false},
    {TaskKind::kCpuExpert, "cpu-expert", C::kCompute, false},
    {TaskKind::kDeferredExpert, "deferred-expert", C::kCompute, false},
    {TaskKind::kLmHead, "lm-head", C::kCompute, false},
    {TaskKind::kPredict, "predict", C::kCompute, false},
    {TaskKind::kActToCpu, "act-to-cpu", C::kActivations, false},
    {TaskKind::kActToGpu, "act-to-gpu", C::kActivations, false},
    {TaskKind::kDemandLoad, "demand-load", C::kWeights, true},
    {TaskKind::kPrefetchLoad, "prefetch", C::kWeights, false},
    {TaskKind::kSwapLoad, "swap-load", C::kWeights, false},
    {TaskKind::kBufferCopy, "buffer-copy", C::kWeights, false},
    {TaskKind::kRecopy, "recopy", C::kWeights, false},
    {TaskKind::kKvToGpu, "kv-to-gpu", C::kKv, true},
};
static_assert(std::size(kTaskKinds) == size_t(TaskKind::kCount),
              "every task kind of the enum has its row in kTaskKinds");

// Copies that something waits for now: demand loads and KV copies.
bool is_demand(TaskKind k) {
  return kTaskKinds[size_t(k)].demand;
}

}  // namespace

const TaskKindInfo& task_info(TaskKind k) {
  return kTaskKinds[size_t(k)];
}

std::span<const TaskKindInfo> task_kinds() {
  return kTaskKinds;
}

const TaskKindInfo* task_info_named(std::string_view name) {
  for (const TaskKindInfo& i : kTaskKinds) {
    if (name == i.name) return &i;
  }
  return nullptr;
}

const char* to_string(TaskKind k) {
  return kTaskKinds[size_t(k)].name;
}

int64_t Link::issue(Transfer t, size_t* moved_from, size_t* moved_to) {
  t.id = base_ + int64_t(all_.size());
  t.fixed = false;
  t.done = false;
  all_.push_back(t);
  // Where it goes: at the end, or (demand-first) before the first queued
  // prefetch/swap that has neither started nor been fixed. Buffer copies
  // share the demand loads' stream: a demand load never passes one. A KV
  // copy for an attention that waits for it is placed as a demand load.
  size_t pos = queue_.size();
  if (order_ == LinkOrder::kDemandFirst && is_demand(t.kind)) pos = demand_place(t.issue_ns);
  if (t.kind == TaskKind::kBufferCopy) ++buffer_copies_;
  if (pos == queue_.size()) {
    queue_.push_back(t.id);
  } else {
    queue_.insert(pos, t.id);
  }
  fixed_ = std::min(fixed_, pos);  // a place is after the fixed prefix: it stays
  const size_t to = reschedule(pos);
  if (moved_from) *moved_from = pos;
  if (moved_to) *moved_to = to;
  return t.id;
}

size_t Link::demand_place(double issue_ns) const {
  if (buffer_copies_ > 0) {
    // Only a place behind the last buffer copy.
    size_t pos = queue_.size();
    for (size_t i = 0; i < queue_.size(); ++i) {
      const Transfer& q = get(queue_[i]);
      if (q.kind == TaskKind::kBufferCopy) {
        pos = queue_.size();
        continue;
      }
      const bool movable = !q.fixed && !is_demand(q.kind) && q.start_ns > issue_ns;
      if (movable && pos == queue_.size()) pos = i;
    }
    return pos;
  }
  // The queue is in start order and its fixed transfers are a prefix of
  // it, so "neither fixed nor started by issue_ns" holds from one position
  // on (found by bisection); the place is the first transfer from there
  // that is not itself a demand.
  size_t lo = 0, hi = queue_.size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const Transfer& q = get(queue_[mid]);
    if (!q.fixed && q.start_ns > issue_ns)
      hi = mid;
    else
      lo = mid + 1;
  }
  for (size_t i = lo; i < queue_.size(); ++i) {
    if (!is_demand(get(queue_[i]).kind)) return i;
  }
  return queue_.size();
}

size_t Link::reschedule(size_t from) {
  // Every queued transfer's times follow from its predecessor's end (the
  // invariant issue, cancel and advance keep), so the first one behind
  // `from` that starts where it did leaves the rest as they were.
  double prev = from == 0 ? committed_free_ : get(queue_[from - 1]).end_ns;
  for (size_t i = from; i < queue_.size(); ++i) {
    Transfer& q = get(queue_[i]);
    const double start = std::max({prev, q.issue_ns, q.earliest_ns});
    if (i > from && start == q.start_ns) return i;
    q.start_ns = start;
    q.end_ns = q.start_ns + q.duration_ns;
    prev = q.end_ns;
  }
  return queue_.size();
}

void Link::fix(int64_t id) {
  // Queued and fixed already: so is every transfer before it (the prefix).
  if (const Transfer& t = get(id); t.fixed && !t.done) return;
  // Else from the end of the fixed prefix to it; a transfer no longer queued
  // (completed or cancelled) fixes the whole queue.
  for (size_t i = fixed_; i < queue_.size(); ++i) {
    get(queue_[i]).fixed = true;
    fixed_ = i + 1;
    if (queue_[i] == id) return;
  }
}

void Link::advance(double now_ns, std::vector<int64_t>* done) {
  // The queue is in start order and transfers do not overlap, so
  // completions come out in time order; ties keep queue (sequence) order.
  while (!queue_.empty()) {
    Transfer& q = get(queue_.front());
    if (q.end_ns > now_ns) break;
    q.done = true;
    q.fixed = true;
    committed_free_ = q.end_ns;
    busy_ += q.duration_ns;
    if (keep_history_ && q.end_ns > q.start_ns) done_spans_.emplace_back(q.start_ns, q.end_ns);
    if (done) done->push_back(q.id);
    if (q.kind == TaskKind::kBufferCopy) --buffer_copies_;
    queue_.pop_front();
    if (fixed_ > 0) --fixed_;
  }
  // Free completed transfers that nothing queued precedes (the caller has
  // read the ones it was just told about; keep those until the next call).
  const int64_t keep_from = queue_.empty() ? count() : queue_.front();
  const int64_t oldest_reported = done && !done->empty() ? done->front() : keep_from;
  const int64_t drop_to = std::min(keep_from, oldest_reported);
  while (base_ < drop_to && !all_.empty() && all_.front().done) {
    all_.pop_front();
    ++base_;
  }
}

bool Link::cancel(int64_t id, double now_ns) {
  for (size_t i = 0; i < queue_.size(); ++i) {
    if (queue_[i] != id) continue;
    Transfer& q = get(id);
    if (q.fixed || q.start_ns <= now_ns) return false;
    queue_.erase(i);  // after the fixed prefix (it is not fixed)
    if (q.kind == TaskKind::kBufferCopy) --buffer_copies_;
    q.done = true;
    q.end_ns = q.start_ns = now_ns;
    q.duration_ns = 0;
    reschedule(i);
    return true;
  }
  return false;
}

double Link::free_ns() const {
  return queue_.empty() ? committed_free_ : get(queue_.back()).end_ns;
}

void Link::forget_before(double t_ns) {
  while (!done_spans_.empty() && done_spans_.front().second <= t_ns) done_spans_.pop_front();
}

double Link::copying_ns(double from_ns, double to_ns) const {
  double sum = 0;
  for (auto it = done_spans_.rbegin(); it != done_spans_.rend() && it->second > from_ns; ++it)
    sum += std::max(0.0, std::min(it->second, to_ns) - std::max(it->first, from_ns));
  for (int64_t id : queue_) {
    const Transfer& t = get(id);
    if (t.start_ns >= to_ns) break;  // in link order: every later one starts later
    sum += std::max(0.0, std::min(t.end_ns, to_ns) - std::max(t.start_ns, from_ns));
  }
  return sum;
}

}  // namespace moebench
