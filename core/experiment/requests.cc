// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/experiment/requests.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "core/util/detmath.h"
#include "core/util/error.h"
#include "core/util/strings.h"

namespace moebench {

namespace {

constexpr uint64_t kArrivalStream = 0x61727269766c7331ull;  // "arrivls1"
constexpr uint64_t kLengthStream = 0x6c656e6774687331ull;   // "lengths1"

// (0, 1]: never 0, so its logarithm is finite.
double open_uniform(uint64_t& state) {
  return 1.0 - det::uniform01(state);
}

double standard_normal(uint64_t& state) {
  const double u1 = open_uniform(state), u2 = det::uniform01(state);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// Gamma(shape, 1) by Marsaglia and Tsang (2000); shape < 1 through
// Gamma(shape + 1) * U^(1 / shape). Terminates for a finite shape > 0 (the
// workload's arrival_cv range keeps it in [1e-2, 1e4]).
double standard_gamma(double shape, uint64_t& state) {
  if (shape < 1.0)
    return standard_gamma(shape + 1.0, state) * std::pow(open_uniform(state), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = standard_normal(state);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = open_uniform(state);
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

// The arrival times: drawn, or the file's (relative to its first request).
void draw_arrivals(const WorkloadSpec& w, const RequestsFile* file, std::vector<Request>& out) {
  uint64_t state = det::mix(uint64_t(w.seed), kArrivalStream);
  double t = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (w.arrival == "poisson") {
      t += -std::log(open_uniform(state)) / w.rate;
    } else if (w.arrival == "gamma") {
      t += gamma_gap(w.rate, w.arrival_cv, state);
    } else if (w.arrival == "file") {
      t = file->requests[i].arrival_s;
    }
    if (!(t <= kMaxArrivalSpanS)) {
      const bool gamma = w.arrival == "gamma";
      throw ConfigError(
          Where{}, gamma ? "workload.arrival_cv" : "workload.rate",
          fmt::format("arrivals within {:g} s of the run's start (a higher rate{})",
                      kMaxArrivalSpanS, gamma ? " or a lower arrival_cv" : ""),
          fmt::format("request {} of {} arriving at {:g} s (rate {:g} requests/s{})", i + 1,
                      out.size(), t, w.rate,
                      gamma ? fmt::format(", arrival_cv {:g}", w.arrival_cv) : std::string()));
    }
    out[i].arrival_s = t;
  }
}

void draw_lengths(const WorkloadSpec& w, const RequestsFile* file, std::vector<Request>& out) {
  uint64_t state = det::mix(uint64_t(w.seed), kLengthStream);
  for (size_t i = 0; i < out.size(); ++i) {
    Request& r = out[i];
    if (w.lengths == "uniform") {
      const int64_t pmax = w.prompt_len_max < 0 ? w.prompt_len : w.prompt_len_max;
      const int64_t dmax = w.decode_len_max < 0 ? w.decode_len : w.decode_len_max;
      r.prompt_len =
          w.prompt_len + int64_t(det::uniform01(state) * double(pmax - w.prompt_len + 1));
      r.decode_len =
          w.decode_len + int64_t(det::uniform01(state) * double(dmax - w.decode_len + 1));
    } else if (w.lengths == "file") {
      r.prompt_len = file->requests[i].prompt_len;
      r.decode_len = file->requests[i].decode_len;
    }
  }
}

}  // namespace

double gamma_gap(double rate, double cv, uint64_t& state) {
  const double shape = 1.0 / (cv * cv);
  return standard_gamma(shape, state) / (shape * rate);
}

std::vector<Request> make_requests(const WorkloadSpec& w, const RequestsFile* file) {
  const int64_t n = w.sequences;
  if ((w.arrival == "file" || w.lengths == "file") && !file) {
    throw InternalError("make_requests: a workload with a requests file, called without it");
  }
  if (file && int64_t(file->requests.size()) < n) {
    throw ConfigError(Where{file->shown, 0, 0}, "workload.sequences",
                      fmt::format("at most the file's requests ({})", file->requests.size()),
                      std::to_string(n));
  }
  std::vector<Request> out(size_t(n), Request{0.0, w.prompt_len, w.decode_len});
  draw_arrivals(w, file, out);
  draw_lengths(w, file, out);
  return out;
}

RequestsFile reread_requests_file(const WorkloadSpec& w, const std::filesystem::path& base_dir,
                                  int64_t context_length) {
  const std::filesystem::path p = base_dir / w.arrivals;  // an absolute path stays as it is
  RequestsFile f =
      read_requests_file(p, w.arrivals, {w.arrival == "file", w.lengths == "file", context_length});
  if (!w.arrivals_sha256.empty() && f.sha256 != w.arrivals_sha256) {
    throw Error(fmt::format(
        "workload.arrivals: '{}': expected the requests file the suite loaded (sha256 {}), found "
        "it changed since (sha256 {}); the case's result would not be the run's (run the suite "
        "again once the file is stable)",
        shown_text(p.string(), 200), w.arrivals_sha256.substr(0, 16), f.sha256.substr(0, 16)));
  }
  return f;
}

}  // namespace moebench
