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

// Per request, ms: from arrival to its first step's start, to its first token, to its last.
std::vector<double> per_request(const RunMetrics& m, int what) {
  std::vector<double> v;
  for (const RequestTimes& r : m.requests) {
    if (what == 0) v.push_back((r.start_ns - r.arrival_ns) / 1e6);
    if (what == 1) v.push_back((r.first_token_ns - r.arrival_ns) / 1e6);
    if (what == 2) v.push_back((r.last_token_ns - r.arrival_ns) / 1e6);
    // TPOT (MLPerf): the mean interval between the request's output tokens.
    if (what == 3 && r.output_tokens >= 2)
      v.push_back((r.last_token_ns - r.first_token_ns) / 1e6 / double(r.output_tokens - 1));
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

bool meets_slo(const RunMetrics& m, const RequestTimes& r) {
  const double ttft = (r.first_token_ns - r.arrival_ns) / 1e6;
  const double tpot = r.output_tokens >= 2
                          ? (r.last_token_ns - r.first_token_ns) / 1e6 / double(r.output_tokens - 1)
                          : 0.0;
  return ttft <= m.slo_ttft_ms && tpot <= m.slo_tpot_ms;
}

RunMetrics::Field stat(const char* name, const char* doc, int what, double p) {
  return {name, doc, [what, p](const RunMetrics& m) {
            if (m.requests.empty()) return J(nullptr);
            const auto v = what == 4 ? m.itl_ms : per_request(m, what);
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
      stat("serve_queue_mean_ms", q, 0, -1),
      stat("serve_queue_p99_ms", q, 0, 99),
      stat("serve_ttft_mean_ms", t, 1, -1),
      stat("serve_ttft_p50_ms", t, 1, 50),
      stat("serve_ttft_p90_ms", t, 1, 90),
      stat("serve_ttft_p99_ms", t, 1, 99),
      stat("serve_tpot_mean_ms", o, 3, -1),
      stat("serve_tpot_p50_ms", o, 3, 50),
      stat("serve_tpot_p90_ms", o, 3, 90),
      stat("serve_tpot_p99_ms", o, 3, 99),
      stat("serve_itl_p50_ms", i, 4, 50),
      stat("serve_itl_p99_ms", i, 4, 99),
      stat("serve_e2e_mean_ms", e, 2, -1),
      stat("serve_e2e_p99_ms", e, 2, 99),
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
         if (m.requests.empty()) return J(nullptr);
         double n = 0;
         for (const RequestTimes& r : m.requests) n += meets_slo(m, r) ? 1 : 0;
         return J(n / double(m.requests.size()));
       }},
      {"serve_goodput_rps",
       "Serving: requests within both SLO bounds per second, first arrival to last token.",
       [](const RunMetrics& m) {
         if (m.requests.empty()) return J(nullptr);
         double n = 0;
         for (const RequestTimes& r : m.requests) n += meets_slo(m, r) ? 1 : 0;
         return num(n / span_s(m));
       }},
      {"serve_slo_p99_met",
       "Serving: 1 when the p99 TTFT and the p99 TPOT are within the SLO's bounds (MLPerf's "
       "server test), else 0.",
       [](const RunMetrics& m) {
         if (m.requests.empty()) return J(nullptr);
         const double tpot = percentile(per_request(m, 3), 99);
         const bool ok = percentile(per_request(m, 1), 99) <= m.slo_ttft_ms &&
                         (!std::isfinite(tpot) || tpot <= m.slo_tpot_ms);
         return J(ok ? 1 : 0);
       }},
  };
  return f;
}

}  // namespace moebench
