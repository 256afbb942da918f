// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The requests of a workload (docs/SERVING.md): one per sequence, with its
// arrival time and, where the workload says so, its own prompt and decode
// lengths. Arrivals: all at 0 ("batch"), a Poisson process, a Gamma renewal
// process with a stated coefficient of variation, or the times of a requests
// file (core/experiment/requests_file.h), taken relative to its first
// request. Seeded from the workload seed: the same requests every run.
// Built when the experiment is expanded (to check them) and when a case runs.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "core/config/workload_spec.h"
#include "core/experiment/requests_file.h"

namespace moebench {

struct Request {
  double arrival_s = 0;    // seconds from the run's start, non-decreasing
  int64_t prompt_len = 0;  // tokens
  int64_t decode_len = 0;  // decode steps after the prefill
};

// The workload's `sequences` requests in arrival order. Lengths are the
// workload's prompt_len / decode_len unless lengths is "uniform" or "file".
// `file`: the workload's requests file, read (needed when arrival or lengths
// is "file"). Throws ConfigError at workload.rate (or arrival_cv) when the
// drawn arrivals spread over more than kMaxArrivalSpanS, and at
// workload.sequences when the file holds fewer requests.
std::vector<Request> make_requests(const WorkloadSpec& w, const RequestsFile* file = nullptr);

// The workload's requests file, read again when a case runs: the bytes the
// experiment's expansion read (workload.arrivals_sha256), or an Error saying
// that the file changed since.
RequestsFile reread_requests_file(const WorkloadSpec& w, const std::filesystem::path& base_dir,
                                  int64_t context_length);

// Gaps of a Gamma renewal process with mean 1 / rate and coefficient of
// variation cv (cv = 1: exponential; cv in [kMinArrivalCv, kMaxArrivalCv]),
// drawn from `state` (tests).
double gamma_gap(double rate, double cv, uint64_t& state);

}  // namespace moebench
