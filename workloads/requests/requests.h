// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The requests of a serving run (docs/SERVING.md): one per
// sequence of the workload, with its arrival time and, where the workload
// says so, its own prompt and decode lengths. Arrivals: all at 0 ("batch"),
// a Poisson process, a Gamma renewal process with a stated coefficient of
// variation, or the times of a JSONL file (the shape vLLM's and SGLang's
// benchmark tools write: arrival_time, prompt_len, output_len per line).
// Seeded from the workload seed: the same requests every run.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "core/config/workload_spec.h"

namespace moebench {

struct Request {
  double arrival_s = 0;    // seconds from the run's start, non-decreasing
  int64_t prompt_len = 0;  // tokens
  int64_t decode_len = 0;  // tokens
};

// The workload's `sequences` requests in arrival order. Lengths are the
// workload's prompt_len / decode_len unless lengths is "uniform" or "file".
// Throws ConfigError (file, line, key) for a bad arrivals file: not JSON, a
// key missing or negative, arrival times out of order, fewer requests than
// sequences, a request longer than `context_length` tokens (prompt and output
// together; 0: not checked: the model's ModelSpec::context_length).
std::vector<Request> make_requests(const WorkloadSpec& w, const std::filesystem::path& base_dir,
                                   int64_t context_length = 0);

// Gaps of a Gamma renewal process with mean 1 / rate and coefficient of
// variation cv (cv = 1: exponential), drawn from `state` (tests).
double gamma_gap(double rate, double cv, uint64_t& state);

}  // namespace moebench
