// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/requests/requests.h"

#include <cmath>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/util/detmath.h"
#include "core/util/error.h"

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
// Gamma(shape + 1) * U^(1 / shape).
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

struct FileRequest {
  double arrival_s;
  int64_t prompt_len, decode_len;
};

// One request a line: arrival_time (s), prompt_len (or input_len), output_len
// (or decode_len). Blank lines are skipped.
std::vector<FileRequest> read_requests(const std::filesystem::path& path, const std::string& shown,
                                       bool need_time, bool need_lengths, int64_t context_length) {
  std::ifstream in(path);
  if (!in) {
    throw ConfigError(Where{shown, 0, 0}, "workload.arrivals", "a readable JSONL file of requests",
                      "no such file or not readable");
  }
  std::vector<FileRequest> out;
  std::string line;
  int no = 0;
  const auto field = [&](const nlohmann::json& j, std::initializer_list<const char*> names,
                         bool integer) -> double {
    for (const char* n : names) {
      auto it = j.find(n);
      if (it == j.end()) continue;
      const bool ok = integer ? it->is_number_integer() : it->is_number();
      if (!ok || it->get<double>() < 0 || !std::isfinite(it->get<double>())) {
        throw ConfigError(Where{shown, no, 0}, n,
                          integer ? "a whole number >= 0" : "a finite number >= 0", it->dump());
      }
      return it->get<double>();
    }
    throw ConfigError(Where{shown, no, 0}, *names.begin(), "the key on every request line", "none");
  };
  while (std::getline(in, line)) {
    ++no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw ConfigError(Where{shown, no, 0}, "workload.arrivals", "a JSON object per line",
                        line.substr(0, 60));
    }
    if (!j.is_object()) {
      throw ConfigError(Where{shown, no, 0}, "workload.arrivals", "a JSON object per line",
                        line.substr(0, 60));
    }
    FileRequest r{0, 0, 0};
    if (need_time) {
      r.arrival_s = field(j, {"arrival_time", "timestamp"}, false);
      if (!out.empty() && r.arrival_s < out.back().arrival_s) {
        throw ConfigError(Where{shown, no, 0}, "arrival_time",
                          fmt::format("arrival times in order (at least {} s, the line before's)",
                                      out.back().arrival_s),
                          fmt::format("{} s", r.arrival_s));
      }
    }
    if (need_lengths) {
      r.prompt_len = int64_t(field(j, {"prompt_len", "input_len"}, true));
      r.decode_len = int64_t(field(j, {"output_len", "decode_len"}, true));
      if (r.prompt_len + r.decode_len == 0) {
        throw ConfigError(Where{shown, no, 0}, "output_len", "prompt_len + output_len >= 1",
                          "0 tokens in total");
      }
      if (context_length > 0 && r.prompt_len + r.decode_len > context_length) {
        throw ConfigError(
            Where{shown, no, 0}, "prompt_len",
            fmt::format("prompt_len + output_len at most the model's context ({} tokens)",
                        context_length),
            fmt::format("{} + {} = {} tokens", r.prompt_len, r.decode_len,
                        r.prompt_len + r.decode_len));
      }
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace

double gamma_gap(double rate, double cv, uint64_t& state) {
  const double shape = 1.0 / (cv * cv);
  return standard_gamma(shape, state) / (shape * rate);
}

std::vector<Request> make_requests(const WorkloadSpec& w, const std::filesystem::path& base_dir,
                                   int64_t context_length) {
  const int64_t n = w.sequences;
  std::vector<Request> out(size_t(n), Request{0.0, w.prompt_len, w.decode_len});
  std::vector<FileRequest> file;
  if (w.arrival == "file" || w.lengths == "file") {
    const std::filesystem::path p = base_dir / w.arrivals;  // an absolute path stays as it is
    file = read_requests(p, w.arrivals, w.arrival == "file", w.lengths == "file", context_length);
    if (int64_t(file.size()) < n) {
      throw ConfigError(Where{w.arrivals, 0, 0}, "workload.sequences",
                        fmt::format("at most the file's requests ({})", file.size()),
                        std::to_string(n));
    }
  }
  uint64_t t_state = det::mix(uint64_t(w.seed), kArrivalStream);
  double t = 0;
  for (int64_t i = 0; i < n; ++i) {
    Request& r = out[size_t(i)];
    if (w.arrival == "poisson") {
      t += -std::log(open_uniform(t_state)) / w.rate;
    } else if (w.arrival == "gamma") {
      t += gamma_gap(w.rate, w.arrival_cv, t_state);
    } else if (w.arrival == "file") {
      t = file[size_t(i)].arrival_s;
    }
    r.arrival_s = t;
  }
  uint64_t l_state = det::mix(uint64_t(w.seed), kLengthStream);
  for (int64_t i = 0; i < n; ++i) {
    Request& r = out[size_t(i)];
    if (w.lengths == "uniform") {
      const int64_t pmax = w.prompt_len_max < 0 ? w.prompt_len : w.prompt_len_max;
      const int64_t dmax = w.decode_len_max < 0 ? w.decode_len : w.decode_len_max;
      r.prompt_len =
          w.prompt_len + int64_t(det::uniform01(l_state) * double(pmax - w.prompt_len + 1));
      r.decode_len =
          w.decode_len + int64_t(det::uniform01(l_state) * double(dmax - w.decode_len + 1));
    } else if (w.lengths == "file") {
      r.prompt_len = file[size_t(i)].prompt_len;
      r.decode_len = file[size_t(i)].decode_len;
    }
  }
  return out;
}

}  // namespace moebench
