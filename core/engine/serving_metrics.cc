// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The serving metrics' columns (docs/SERVING.md, analysis/METRICS.md): per
// request queueing, TTFT from arrival, TPOT, inter-token latency and end to
// end; their means and percentiles; throughput and goodput under the SLO.
// Null in every row that is not a served run.
#include <algorithm>
#include <cmath>

#include "core/engine/metrics.h"

namespace moebench {

namespace {

using J = nlohmann::ordered_json;

J num(double x) {
  return std::isfinite(x) ? J(x) : J(nullptr);
}

// What a statistic is taken over: per request (ms from its arrival to its
// first step's start, first token, last token; its TPOT) or every
// inter-token interval.
enum class Over { kQueue, kTtft, kE2e, kTpot, kItl };

// TPOT (MLPerf): the mean interval between the request's output tokens; NaN
// for a request of fewer than 2.
double tpot_ms(const RequestTimes& r) {
  return r.output_tokens >= 2
             ? (r.last_token_ns - r.first_token_ns) / 1e6 / double(r.output_tokens - 1)
             : NAN;
}

std::vector<double> values(const RunMetrics& m, Over what) {
  if (what == Over::kItl) return m.itl_ms;
  std::vector<double> v;
  for (const RequestTimes& r : m.requests) {
    if (what == Over::kQueue) v.push_back((r.start_ns - r.arrival_ns) / 1e6);
    if (what == Over::kTtft) v.push_back((r.first_token_ns - r.arrival_ns) / 1e6);
    if (what == Over::kE2e) v.push_back((r.last_token_ns - r.arrival_ns) / 1e6);
    if (what == Over::kTpot && r.output_tokens >= 2) v.push_back(tpot_ms(r));
  }
  return v;
}

// The run's span: first arrival to last token, s.
double span_s(const RunMetrics& m) {
  double a = INFINITY, b = -INFINITY;
  for (const RequestTimes& r : m.requests) {
    a = std::min(a, r.arrival_ns);
    b = std::max(b, r.last_token_ns);
  }
  return m.requests.empty() ? NAN : (b - a) / 1e9;
}

// Requests within both SLO bounds (a request of one token has no TPOT to miss).
double within_slo(const RunMetrics& m) {
  double n = 0;
  for (const RequestTimes& r : m.requests) {
    const double tpot = r.output_tokens >= 2 ? tpot_ms(r) : 0.0;
    n += (r.first_token_ns - r.arrival_ns) / 1e6 <= m.slo_ttft_ms && tpot <= m.slo_tpot_ms;
  }
  return n;
}

RunMetrics::Field stat(const char* name, const char* doc, Over what, double p) {
  return {name, doc, [what, p](const RunMetrics& m) {
            if (m.requests.empty()) return J(nullptr);
            const auto v = values(m, what);
            return num(p < 0 ? mean(v) : percentile(v, p));
          }};
}

}  // namespace

std::vector<RunMetrics::Field> serving_fields() {
  const char* q = "Serving: queueing time, arrival to the request's first step's start";
  const char* t = "Serving: time to first token from the request's arrival (queueing counts)";
  const char* o =
      "Serving: time per output token (MLPerf): a request's first to last token over its output "
      "tokens less one (requests of at least 2 tokens)";
  const char* i = "Serving: inter-token latency, every interval between a request's output tokens";
  const char* e = "Serving: end to end, arrival to the request's last token";
  std::vector<RunMetrics::Field> f = {
      {"serve_requests", "Serving: requests served (null: not a served run).",
       [](const RunMetrics& m) { return m.requests.empty() ? J(nullptr) : J(m.requests.size()); }},
      stat("serve_queue_mean_ms", q, Over::kQueue, -1),
      stat("serve_queue_p99_ms", q, Over::kQueue, 99),
      stat("serve_ttft_mean_ms", t, Over::kTtft, -1),
      stat("serve_ttft_p50_ms", t, Over::kTtft, 50),
      stat("serve_ttft_p90_ms", t, Over::kTtft, 90),
      stat("serve_ttft_p99_ms", t, Over::kTtft, 99),
      stat("serve_tpot_mean_ms", o, Over::kTpot, -1),
      stat("serve_tpot_p50_ms", o, Over::kTpot, 50),
      stat("serve_tpot_p90_ms", o, Over::kTpot, 90),
      stat("serve_tpot_p99_ms", o, Over::kTpot, 99),
      stat("serve_itl_p50_ms", i, Over::kItl, 50),
      stat("serve_itl_p99_ms", i, Over::kItl, 99),
      stat("serve_e2e_mean_ms", e, Over::kE2e, -1),
      stat("serve_e2e_p99_ms", e, Over::kE2e, 99),
      {"serve_throughput_rps", "Serving: requests per second, first arrival to last token.",
       [](const RunMetrics& m) {
         return m.requests.empty() ? J(nullptr) : num(double(m.requests.size()) / span_s(m));
       }},
      {"serve_output_tokens_per_s",
       "Serving: output tokens per second, first arrival to last token.",
       [](const RunMetrics& m) {
         double n = 0;
         for (const RequestTimes& r : m.requests) n += double(r.output_tokens);
         return m.requests.empty() ? J(nullptr) : num(n / span_s(m));
       }},
      {"serve_slo", "Serving: the SLO goodput counts against (workload.slo; docs/SERVING.md).",
       [](const RunMetrics& m) { return m.requests.empty() ? J(nullptr) : J(m.slo); }},
      {"serve_slo_ttft_ms", "Serving: the SLO's TTFT bound.",
       [](const RunMetrics& m) { return m.requests.empty() ? J(nullptr) : J(m.slo_ttft_ms); }},
      {"serve_slo_tpot_ms", "Serving: the SLO's TPOT bound.",
       [](const RunMetrics& m) { return m.requests.empty() ? J(nullptr) : J(m.slo_tpot_ms); }},
      {"serve_slo_attained_frac",
       "Serving: share of requests within both SLO bounds (TTFT and TPOT).",
       [](const RunMetrics& m) {
         return m.requests.empty() ? J(nullptr) : J(within_slo(m) / double(m.requests.size()));
       }},
      {"serve_goodput_rps",
       "Serving: requests within both SLO bounds per second, first arrival to last token.",
       [](const RunMetrics& m) {
         return m.requests.empty() ? J(nullptr) : num(within_slo(m) / span_s(m));
       }},
      {"serve_slo_p99_met",
       "Serving: 1 when the p99 TTFT and the p99 TPOT are within the SLO's bounds (MLPerf's "
       "server test), else 0.",
       [](const RunMetrics& m) {
         if (m.requests.empty()) return J(nullptr);
         const double tpot = percentile(values(m, Over::kTpot), 99);
         const bool ok = percentile(values(m, Over::kTtft), 99) <= m.slo_ttft_ms &&
                         (!std::isfinite(tpot) || tpot <= m.slo_tpot_ms);
         return J(ok ? 1 : 0);
       }},
  };
  return f;
}

}  // namespace moebench
