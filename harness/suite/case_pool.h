// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// CasePool: the cases a run_suite call has left to run, on worker threads
// (harness/suite/suite_runner.cc starts it; docs/USAGE.md, "Results").

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results/run_dir.h"
#include "harness/suite/suite_internal.h"
#include "harness/suite/suite_runner.h"

namespace moebench {
namespace fs = std::filesystem;

// One case's attempt: its repetitions' metrics and wall times, its
// timeline, its warnings, or the error it ended with.
struct Attempt {
  std::vector<std::pair<nlohmann::ordered_json, double>> reps;
  std::string timeline;
  std::vector<std::string> warnings;
  std::string error;
};

// Identical simulations (the same simulation_key: the as-published and
// mechanism comparisons of a strategy no fitted entry applies to, a case
// two figures share with different labels) are simulated once; the other
// cases' rows copy the numbers and name the case they come from
// (`result_of`). Real cases and cases writing a timeline always run.
struct SharedSimulation {
  bool running = true;  // being simulated now, by the case `from`
  bool ok = false;      // finished without an error: its rows may be copied
  std::string from;
  std::vector<std::pair<nlohmann::ordered_json, double>> reps;
  std::vector<std::string> warnings;
};

// The cases left to run, on `jobs` worker threads: each takes the next case
// (or one whose shared simulation has ended), runs or copies it, and commits
// its record under the lock; runs.jsonl and runs.csv are a view of the
// committed records, refreshed every kRunsRefresh.
class CasePool {
 public:
  CasePool(const SuiteOptions& opt, const Registry& registry, const ConfigPaths& paths,
           const Selection& sel, RunDirectory& run, const fs::path& dir, std::string run_id,
           SuiteOutcome& out)
      : opt_(opt),
        registry_(registry),
        paths_(paths),
        sel_(sel),
        run_(run),
        dir_(dir),
        run_id_(std::move(run_id)),
        out_(out),
        done_(run.finished_cases()) {
    for (const Case* c : sel.cases) {
      if (done_.count(c->id))
        ++out_.skipped;
      else
        todo_.push_back(c);
    }
    keys_.resize(todo_.size());
    for (size_t i = 0; i < todo_.size(); ++i) {
      const Case& c = *todo_[i];
      if (c.backend == "sim" && !opt.timeline && !c.timeline) keys_[i] = simulation_key(c);
    }
  }
  void run(int jobs);
  // The committed records' rows, in the suite's case order.
  std::vector<RunRecord> rows() const;
  const std::map<std::string, nlohmann::ordered_json>& done() const { return done_; }
  const std::vector<std::string>& write_failures() const { return write_failures_; }
  // Under mu_, or after the workers ended.
  void record_write_failure(const std::string& what, const std::string& error);

 private:
  static constexpr std::chrono::seconds kRunsRefresh{20};
  bool stopping() const { return interrupted() || write_failed_.load(); }
  bool take(size_t* i, const SharedSimulation** copy, bool* owner);
  Attempt simulate(const Case& c);
  nlohmann::ordered_json record(const Case& c, const Attempt& a, const SharedSimulation* copy,
                                double wall) const;
  void commit(const Case& c, const nlohmann::ordered_json& stored, const Attempt& a,
              const SharedSimulation* copy, double wall);
  void report(const Case& c, const Attempt& a, const SharedSimulation* copy, double wall);
  void worker();

  const SuiteOptions& opt_;
  const Registry& registry_;
  const ConfigPaths& paths_;
  const Selection& sel_;
  RunDirectory& run_;
  const fs::path& dir_;
  const std::string run_id_;
  SuiteOutcome& out_;
  std::map<std::string, nlohmann::ordered_json> done_;  // under mu_
  std::vector<const Case*> todo_;
  std::vector<std::string> keys_;  // todo_'s simulation keys ("" : runs on its own)
  std::mutex mu_;
  std::atomic<int64_t> finished_{0};
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_runs_write_ = t0_;
  std::set<std::string> warned_;  // each warning printed once per run (under mu_)
  // A result that could not be written (a full disk, a file system gone
  // read-only): the case is not committed (--resume runs it), the run stops
  // taking cases and ends "partial". Under mu_.
  std::vector<std::string> write_failures_;
  std::atomic<bool> write_failed_{false};
  std::map<std::string, SharedSimulation> sims_;  // under mu_
  std::condition_variable sims_cv_;
  std::deque<size_t> deferred_;  // cases whose simulation another worker is running (under mu_)
  size_t next_todo_ = 0;         // under mu_
};

}  // namespace moebench
