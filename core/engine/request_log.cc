// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/request_log.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/util/error.h"

namespace moebench {

SloBounds slo_bounds(const std::string& name) {
  // MLPerf Inference v5.x server and interactive scenarios (p99 TTFT, p99
  // TPOT); local-pc: this project's bound for one user at a PC
  // (docs/SERVING.md says why).
  if (name == "mlperf-mixtral-server") return {2000, 200};
  if (name == "mlperf-deepseek-r1-server") return {2000, 80};
  if (name == "mlperf-deepseek-r1-interactive") return {1500, 15};
  if (name == "local-pc") return {5000, 200};
  throw Error(fmt::format(
      "workload.slo: expected one of local-pc, mlperf-mixtral-server, mlperf-deepseek-r1-server, "
      "mlperf-deepseek-r1-interactive, found \"{}\"",
      name));
}

void RequestLog::start(const SchedulerInput& in) {
  seqs_ = in.sequences;
  req_.assign(seqs_.size(), RequestTimes{});
  for (size_t i = 0; i < req_.size(); ++i)
    req_[i].arrival_ns = in.arrival_ns.empty() ? 0.0 : in.arrival_ns[i];
  next_pos_.assign(seqs_.size(), 0);
  itl_ms_.clear();
}

void RequestLog::step(const StepPlan& sp, double start_ns, double end_ns) {
  for (const auto& [seq, pos] : sp.tokens) {
    RequestTimes& r = req_[size_t(seq)];
    if (pos != next_pos_[size_t(seq)]) {
      throw InternalError(fmt::format("request {}: token {} ran where token {} was next", seq, pos,
                                      next_pos_[size_t(seq)]));
    }
    ++next_pos_[size_t(seq)];
    if (r.start_ns < 0) r.start_ns = start_ns;
    const int64_t prompt = seqs_[size_t(seq)].prompt_len;
    // The last prompt token produces the first output token; every decode token one more.
    if (pos < prompt - 1) continue;
    if (r.first_token_ns < 0) {
      r.first_token_ns = end_ns;
    } else {
      itl_ms_.push_back((end_ns - r.last_token_ns) / 1e6);
    }
    r.last_token_ns = end_ns;
    ++r.output_tokens;
  }
}

std::vector<std::string> RequestLog::finish(const std::string& slo, RunMetrics* m) {
  for (size_t i = 0; i < req_.size(); ++i) {
    const RequestTimes& r = req_[i];
    const SequenceInfo& q = seqs_[i];
    const int64_t want = (q.prompt_len > 0 ? 1 : 0) + q.decode_len;
    if (next_pos_[i] != q.tokens() || r.output_tokens != want || r.start_ns < r.arrival_ns) {
      throw InternalError(fmt::format(
          "request {}: {} of {} tokens run, {} of {} output tokens, started at {} ns, arrived at "
          "{} ns",
          i, next_pos_[i], q.tokens(), r.output_tokens, want, r.start_ns, r.arrival_ns));
    }
  }
  const SloBounds b = slo_bounds(slo);
  m->slo = slo;
  m->slo_ttft_ms = b.ttft_ms;
  m->slo_tpot_ms = b.tpot_ms;
  m->requests = std::move(req_);
  m->itl_ms = std::move(itl_ms_);
  std::vector<std::string> warnings;
  if (m->requests.size() < 100) {
    warnings.push_back(fmt::format(
        "serving: {} requests: their p99 is near their largest value (at least 100 requests "
        "for a p99 that is more than a maximum)",
        m->requests.size()));
  }
  return warnings;
}

}  // namespace moebench
