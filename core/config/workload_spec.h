// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// WorkloadSpec: which tokens flow through the model. Either a routing trace
// file or the seeded synthetic generator; plus the sequence lengths and the
// batch. Every strategy in a suite sees exactly the same workload.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/schema.h"

namespace moebench {

// The longest span of a served workload's arrivals, first request to last
// (drawn or read from a file), in seconds (11.6 days): simulated time is a
// double of nanoseconds, exact to well under a nanosecond over that span.
inline constexpr double kMaxArrivalSpanS = 1e6;
// The range of workload.arrival_cv over which the Gamma sampler draws gaps of
// the stated mean and variation (core/experiment/requests_test.cc checks both ends).
inline constexpr double kMinArrivalCv = 0.01;
inline constexpr double kMaxArrivalCv = 20.0;

struct WorkloadSpec {
  // The default scheduler: fixed batches, every sequence there at the start.
  static constexpr const char* kDefaultScheduler = "static";

  std::string kind = "synthetic";  // "synthetic" | "trace"
  std::string generator = "auto";  // synthetic preset; "auto" = the model family's
  std::string trace;               // trace file (kind = "trace"), relative to the experiment file
  std::string
      calibration_trace;  // kind = "trace": calibration workload for components that need one
  int64_t seed = 1;
  int64_t sequences = 1;              // sequences in the run
  int64_t prompt_len = 64;            // prefill tokens per sequence
  int64_t decode_len = 64;            // generated tokens per sequence
  int64_t batch_size = 1;             // sequences decoded together
  int64_t h_trace = 256;              // gate-input width of generated traces
  int64_t calibration_sequences = 8;  // for predictors/profiles; drawn with a different seed
  // The calibration sequences' shape; -1 (unset) = the run's prompt_len / decode_len. A suite that
  // sweeps the prompt length pins it, so a predictor trained offline is trained once, not per
  // length.
  int64_t calibration_prompt_len = -1;
  int64_t calibration_decode_len = -1;
  std::string dataset;  // label only (e.g. the paper's dataset name)
  // Serving (docs/SERVING.md). "batch": every sequence is there at
  // time 0 (the papers' fixed batches); otherwise each sequence is a request
  // that arrives at its time and the continuous scheduler serves it.
  std::string arrival = "batch";  // batch | poisson | gamma | file
  double rate = 1.0;              // requests per second (poisson, gamma)
  double arrival_cv = 2.0;        // gamma: coefficient of variation of the gaps
  std::string arrivals;  // arrival = "file": JSONL of requests (relative to the experiment)
  std::string lengths = "fixed";  // fixed | uniform | file
  int64_t prompt_len_max = -1;    // lengths = "uniform": prompt lengths in [prompt_len, max]
  int64_t decode_len_max = -1;    // lengths = "uniform": decode lengths in [decode_len, max]
  // A scheduler of core/scheduler/ by name; the default runs the papers'
  // fixed batches. The experiment checks the name and the keys below against
  // the scheduler (which of them it reads).
  std::string scheduler = kDefaultScheduler;
  int64_t max_batch_tokens = 2048;  // continuous: tokens per step at most
  bool chunked_prefill = false;     // continuous: prompts in chunks beside decode tokens
  std::string slo = "local-pc";     // the SLO goodput is counted against (docs/SERVING.md)
  // Not keys: the SHA-256 of the bytes of the files the workload reads, set
  // when the experiment is expanded and recorded, so that the case id
  // changes with the files' contents (a file changed between a run and its
  // --resume makes other cases).
  std::string arrivals_sha256;
  std::string trace_sha256;
  std::string calibration_trace_sha256;

  // Whether the run serves requests: they arrive over time, or a scheduler
  // other than the default's fixed batches forms the steps (its name, the
  // arrival and the serving keys are then recorded in the case).
  bool serving() const { return arrival != "batch" || scheduler != kDefaultScheduler; }
  // Whether each sequence is a request of its own (arrival time or lengths):
  // served, or a fixed batch of uniform or file lengths.
  bool per_request() const { return serving() || lengths != "fixed"; }

  void validate(const cfg::Value& src, const std::string& prefix) const;
  void validate_serving(const cfg::Value& src, const std::string& prefix) const;
  static const cfg::Schema<WorkloadSpec>& schema();
  // The resolved keys as results record them: a trace workload omits the
  // synthetic generator's keys (they did not apply).
  nlohmann::ordered_json to_json() const;
  // Keys that only the synthetic generator reads.
  static const std::vector<const char*>& synthetic_only_keys();
};

}  // namespace moebench
