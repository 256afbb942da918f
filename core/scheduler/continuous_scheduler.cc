// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/scheduler/continuous_scheduler.h"

#include <algorithm>

#include "core/util/error.h"

namespace moebench {

void ContinuousScheduler::start(SchedulerInput in) {
  const size_t S = in.sequences.size();
  if (!in.arrival_ns.empty() && in.arrival_ns.size() != S)
    throw InternalError("scheduler 'continuous': an arrival time per sequence expected");
  if (in.arrival_ns.empty()) in.arrival_ns.assign(S, 0.0);
  for (size_t i = 1; i < S; ++i) {
    if (in.arrival_ns[i] < in.arrival_ns[i - 1])
      throw InternalError("scheduler 'continuous': arrival times out of order");
  }
  in.batch_size = std::max<int64_t>(1, in.batch_size);
  in_ = std::move(in);
  arrived_ = admitted_ = decode_steps_ = 0;
  running_.clear();
}

bool ContinuousScheduler::next(double now_ns, StepPlan* step) {
  const int64_t S = int64_t(in_.sequences.size());
  *step = StepPlan{};
  step->batch = -1;
  // Nothing running and nothing waiting: the machine idles until the next arrival.
  if (running_.empty() && admitted_ == arrived_ && arrived_ < S &&
      in_.arrival_ns[size_t(arrived_)] > now_ns) {
    now_ns = in_.arrival_ns[size_t(arrived_)];
    step->not_before_ns = now_ns;
  }
  while (arrived_ < S && in_.arrival_ns[size_t(arrived_)] <= now_ns) ++arrived_;
  if (in_.chunked_prefill) {
    if (running_.empty() && admitted_ == arrived_) return false;  // arrived_ == S: all done
    chunked(step);
    return true;
  }
  if (prefill(step)) return true;
  if (running_.empty()) return false;  // every request has finished (arrived_ == S)
  decode(step);
  return true;
}

// The prefill of the arrived requests that fit: FCFS while fewer than
// batch_size run and their prompts fit in max_batch_tokens (the first always
// does). A request without a prompt joins the running set at once: its
// first token is its first decode step's. A request with nothing to decode
// ends with its prefill, but it ran in the step: it counts towards
// batch_size there (once it did not, and a step held more requests).
bool ContinuousScheduler::prefill(StepPlan* step) {
  step->phase = Phase::kPrefill;
  const int64_t budget = in_.max_batch_tokens > 0 ? in_.max_batch_tokens : INT64_MAX;
  int64_t tokens = 0;
  int64_t ended = 0;  // requests of this step that end with it
  while (admitted_ < arrived_ && int64_t(running_.size()) + ended < in_.batch_size) {
    const SequenceInfo& q = in_.sequences[size_t(admitted_)];
    if (tokens > 0 && tokens + q.prompt_len > budget) break;
    for (int64_t p = 0; p < q.prompt_len; ++p) step->tokens.push_back({admitted_, p});
    tokens += q.prompt_len;
    if (q.decode_len > 0) {
      running_.push_back({admitted_, 0, q.prompt_len});
    } else {
      ++ended;
    }
    ++admitted_;
  }
  return !step->tokens.empty();
}

void ContinuousScheduler::decode(StepPlan* step) {
  step->phase = Phase::kDecode;
  step->decode_step = decode_steps_++;
  for (Running& r : running_) {
    const SequenceInfo& q = in_.sequences[size_t(r.seq)];
    step->tokens.push_back({r.seq, q.prompt_len + r.decoded});
    ++r.decoded;
  }
  drop_finished();
}

// Requests that have run every token leave the running set.
void ContinuousScheduler::drop_finished() {
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [&](const Running& r) {
                                  const SequenceInfo& q = in_.sequences[size_t(r.seq)];
                                  return r.prefilled >= q.prompt_len && r.decoded >= q.decode_len;
                                }),
                 running_.end());
}

// A chunked step: decode tokens first, then prompt chunks in the budget left.
void ContinuousScheduler::chunked(StepPlan* step) {
  int64_t left = in_.max_batch_tokens > 0 ? in_.max_batch_tokens : INT64_MAX;
  const auto decode_tokens = [&] {
    for (Running& r : running_) {
      const SequenceInfo& q = in_.sequences[size_t(r.seq)];
      if (left == 0 || r.prefilled < q.prompt_len || r.decoded >= q.decode_len) continue;
      step->tokens.push_back({r.seq, q.prompt_len + r.decoded++});
      --left;
    }
  };
  decode_tokens();
  const auto chunk = [&](Running& r) {
    const int64_t prompt = in_.sequences[size_t(r.seq)].prompt_len;
    const int64_t n = std::min(left, prompt - r.prefilled);
    for (int64_t p = r.prefilled; p < r.prefilled + n; ++p) step->tokens.push_back({r.seq, p});
    r.prefilled += n;
    left -= n;
  };
  for (Running& r : running_) {
    if (left > 0) chunk(r);
  }
  while (left > 0 && admitted_ < arrived_ && int64_t(running_.size()) < in_.batch_size) {
    running_.push_back({admitted_++, 0, 0});
    chunk(running_.back());
  }
  // Only requests without a prompt were admitted: they decode at once.
  if (step->tokens.empty()) decode_tokens();
  bool prompt = false;
  for (const auto& [seq, pos] : step->tokens)
    prompt = prompt || pos < in_.sequences[size_t(seq)].prompt_len;
  step->phase = prompt ? Phase::kPrefill : Phase::kDecode;
  step->decode_step = prompt ? -1 : decode_steps_++;
  drop_finished();
}

}  // namespace moebench
