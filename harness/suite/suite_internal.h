// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// What run_suite's parts share inside harness/suite (suite_runner.cc,
// case_pool.cc and verdict_summary.cc); not an interface for other folders.

#include <string>
#include <vector>

#include "core/experiment/experiment.h"

namespace moebench {

// The cases this call runs: the suite's, those --filter keeps, this --shard's.
struct Selection {
  Experiment ex;
  std::vector<const Case*> cases;
  std::vector<std::string> suite_case_ids;  // --shard: every case of the (filtered) suite
};

// Whether a SIGINT or SIGTERM has stopped the run (suite_runner.cc's handler).
bool interrupted();
// A case's sweep coordinates for its rows: "workload.seed=1; ...".
std::string axes_text(const Case& c);
// The preset files a case came from, for its rows: "strategies/all-cpu
// <file> sha256 <first 12>; ..." (the manifest has the whole hashes).
std::string presets_text(const Case& c);
// Seconds as m:ss or h:mm:ss ("?" for a negative or non-finite time).
std::string fmt_duration(double s);
// A paper suite's figures with their verdicts (analysis/report.py --only,
// run directly, no shell) and the next command (verdict_summary.cc).
struct SuiteOptions;
void print_verdict_summary(const SuiteOptions& opt, const Experiment& ex,
                           const std::vector<const Case*>& cases);

}  // namespace moebench
