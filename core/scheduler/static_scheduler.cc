// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/scheduler/static_scheduler.h"

#include <algorithm>

#include "core/util/error.h"

namespace moebench {

void StaticScheduler::start(SchedulerInput in) {
  // Every sequence is there from the start (the workload's validation
  // refuses arrivals over time with this scheduler).
  for (double a : in.arrival_ns) {
    if (a != 0.0) throw InternalError("scheduler 'static': a sequence arrives after time 0");
  }
  seqs_ = std::move(in.sequences);
  const int64_t S = int64_t(seqs_.size());
  batch_size_ = std::max<int64_t>(1, std::min<int64_t>(in.batch_size, S));
  b0_ = 0;
  batch_ = 0;
  decode_ = -1;
  max_decode_ = 0;
}

bool StaticScheduler::next(double /*now_ns*/, StepPlan* step) {
  const int64_t S = int64_t(seqs_.size());
  while (b0_ < S) {
    const int64_t b1 = std::min(S, b0_ + batch_size_);
    if (decode_ < 0) {
      // The batch's prefill: every prompt token of its sequences (none when
      // every prompt is empty: the batch starts with its first decode step).
      decode_ = 0;
      max_decode_ = 0;
      StepPlan pre{Phase::kPrefill, batch_, -1, {}};
      for (int64_t s = b0_; s < b1; ++s) {
        for (int64_t p = 0; p < seqs_[size_t(s)].prompt_len; ++p) pre.tokens.push_back({s, p});
        max_decode_ = std::max(max_decode_, seqs_[size_t(s)].decode_len);
      }
      if (!pre.tokens.empty()) {
        *step = std::move(pre);
        return true;
      }
    }
    if (decode_ < max_decode_) {
      StepPlan dec{Phase::kDecode, batch_, decode_, {}};
      for (int64_t s = b0_; s < b1; ++s) {
        const SequenceInfo& q = seqs_[size_t(s)];
        if (decode_ < q.decode_len) dec.tokens.push_back({s, q.prompt_len + decode_});
      }
      ++decode_;
      *step = std::move(dec);
      return true;
    }
    // The batch is done: the next one starts.
    b0_ = b1;
    ++batch_;
    decode_ = -1;
  }
  return false;
}

}  // namespace moebench
