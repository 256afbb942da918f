// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Sweeps beyond one machine: `run_suite --shard I/N` runs a
// deterministic 1/N slice of a suite's cases, `run_suite --merge DIR...`
// joins the shards' run folders into one run folder that reads as if the
// suite had run unsharded (make report and ci/check_regression read it as
// any run). docs/USAGE.md, "Sweeps on a Slurm cluster".
//
// Assignment: cases that share a simulation (the same simulation_key: the
// two comparisons of a strategy no fitted entry applies to) form one group,
// so a shard never simulates what another shard copies; groups are placed
// longest first (by their estimated work, ties by the first case's index)
// on the shard with the least estimated work so far (ties to the lowest
// shard). The estimate is the simulated work of a case: sequences x
// (prompt + decode tokens) x MoE layers; it does not know that some
// strategies decide more slowly than others (HybriMoE's scheduling
// simulation), so shards balance the work the workloads give, not the
// strategies' decision time. Real-backend cases and cases with a timeline
// are their own groups. The assignment depends only on the case list, so
// every shard of an array computes the same one.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/experiment/experiment.h"
#include "core/policy/registry.h"

namespace moebench {

struct ShardSpec {
  int64_t index = -1;  // 0 .. count - 1
  int64_t count = 0;   // 0: not sharded
  bool active() const { return count > 0; }
};

// Parses "I/N" (0 <= I < N, 1 <= N <= 100000). Throws moebench::Error naming
// the option, what was expected and what was found.
ShardSpec parse_shard(const std::string& text);

// The estimated work of one case (see above), at least 1.
double case_work_estimate(const Case& c);

// For each case (in the order given) the shard it belongs to; `keys[i]` is
// case i's simulation key ("" where it shares nothing).
std::vector<int64_t> assign_shards(const std::vector<double>& work,
                                   const std::vector<std::string>& keys, int64_t count);

struct MergeOptions {
  std::vector<std::filesystem::path> inputs;  // the shards' run folders
  std::filesystem::path results_root = "results";
  std::filesystem::path out;  // default: <results>/<suite>/<UTC time>-<hash>-merged
  bool partial = false;       // keep a result with missing cases (status "partial")
  bool quiet = false;
  std::vector<std::string> argv;
};

struct MergeOutcome {
  std::filesystem::path run_dir;
  int64_t cases = 0, missing = 0, duplicates = 0, failed = 0;
  int exit_code = 0;
};

// Merges shard run folders. Refuses (moebench::Error, nothing written) when
// a folder is not a shard run, when their manifests disagree (suite, its
// hash, the experiment hash, the backend, the commit, the filter, the shard
// count), when a shard index appears twice, or, without `partial`, when a
// case is missing or in two shards (each named by id).
// Before writing, every manifest and stored case is checked for the keys and
// types a run writes, and against the suite file the manifests name,
// recomputed (harness/suite/merge_checks.h). A merge that fails after it
// created its folder removes it.
MergeOutcome merge_shards(const MergeOptions& opt, const Registry& registry);

}  // namespace moebench
