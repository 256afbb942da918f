// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// run_suite: expands an experiment file, runs its cases (in parallel where
// asked), and writes results/<suite>/<run-id>/ (see core/results/run_dir.h).
//
// A case's identity is the hash of its resolved configuration, so
// `--resume` after an interruption (even kill -9) skips exactly the cases
// whose results were committed and runs the others; nothing is lost or
// duplicated. A case that fails records its error in its rows and the suite
// goes on; the exit status is non-zero at the end.

#include <filesystem>
#include <string>
#include <vector>

#include "core/experiment/experiment.h"
#include "core/policy/registry.h"
#include "core/results/records.h"
#include "harness/suite/shards.h"

namespace moebench {

struct SuiteOptions {
  std::filesystem::path file;
  std::filesystem::path results_root = "results";
  // Preset folders searched before ConfigPaths::defaults()' (run_suite
  // --points: a point's configs/).
  std::vector<std::filesystem::path> config_roots;
  std::filesystem::path out;  // explicit run directory (optional)
  int jobs = 1;
  bool resume = false;
  // With resume and no out: a run of these cases that is complete, and none
  // unfinished, means there is nothing to do (run_suite --points --resume).
  bool resume_skips_complete = false;
  bool dry_run = false;
  bool timeline = false;      // force Chrome-trace timelines
  std::string filter;         // "key=value,key~text,..." over resolved config keys and axes
  ShardSpec shard;            // --shard I/N: this slice of the (filtered) cases (shards.h)
  bool progress_tty = false;  // draw a progress line (otherwise one line per case)
  bool quiet = false;
  uint64_t max_cases = kMaxCases;  // a larger sweep is refused at load
  std::vector<std::string> argv;
};

struct SuiteOutcome {
  std::filesystem::path run_dir;
  int64_t cases = 0, ran = 0, skipped = 0, failed = 0;
  int exit_code = 0;
};

// Parses a --filter expression and tells whether a case matches it. Throws
// moebench::Error for a malformed expression.
bool case_matches(const Case& c, const std::string& filter);

// A run's experiment hash: its suite's name and every case's id and parts
// (the manifest's experiment_hash; --resume and --merge check it).
std::string experiment_hash(const Experiment& ex);

// The identity and metric columns of result rows.
std::vector<Column> result_columns();

SuiteOutcome run_suite(const SuiteOptions& opt, const Registry& registry);

// The summary table printed at the end of a run (also used by `moebench
// results show`): one row per case, main metrics with units.
std::string summary_table(const std::vector<RunRecord>& rows);

}  // namespace moebench
