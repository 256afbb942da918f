// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "harness/suite/case_pool.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "core/engine/engine.h"
#include "core/engine/metrics.h"
#include "core/results/provenance.h"
#include "core/util/atomic_file.h"
#include "core/util/strings.h"
#include "harness/run/run_case.h"

namespace moebench {

std::vector<RunRecord> CasePool::rows() const {
  std::vector<RunRecord> rows;
  for (const Case* c : sel_.cases) {
    auto it = done_.find(c->id);
    if (it == done_.end()) continue;
    for (const auto& r : it->second["rows"]) {
      RunRecord rec;
      rec.fields = r;
      rows.push_back(std::move(rec));
    }
  }
  return rows;
}

void CasePool::record_write_failure(const std::string& what, const std::string& error) {
  write_failures_.push_back(what + ": " + error);
  if (!write_failed_.exchange(true)) {
    fmt::print(stderr,
               "run_suite: {}: could not be written: {}; no further case is started (the cases "
               "already written are kept)\n",
               what, error);
  }
}

// The next case for this worker (false: none left, or stopping); whether it
// copies another case's finished simulation or simulates for the cases
// that share its key.
bool CasePool::take(size_t* i, const SharedSimulation** copy, bool* owner) {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    if (stopping()) return false;
    bool from_deferred = false;
    if (next_todo_ < todo_.size()) {
      *i = next_todo_++;
    } else if (!deferred_.empty()) {
      *i = deferred_.front();
      deferred_.pop_front();
      from_deferred = true;
    } else {
      return false;
    }
    *copy = nullptr;
    *owner = false;
    if (keys_[*i].empty()) return true;
    auto it = sims_.find(keys_[*i]);
    if (it != sims_.end() && it->second.running) {
      if (!from_deferred) {
        deferred_.push_back(*i);  // take another case meanwhile
        continue;
      }
      while (it->second.running && !stopping())
        sims_cv_.wait_for(lk, std::chrono::milliseconds(100));
      if (stopping()) return false;
    }
    if (it == sims_.end()) {
      sims_[keys_[*i]].from = todo_[*i]->id;
      *owner = true;
    } else if (it->second.ok) {
      *copy = &it->second;
    }  // else: the first one failed; this case runs on its own
    return true;
  }
}

// The case's warm-up and measured repetitions; Cancelled (SIGINT, SIGTERM)
// passes through.
Attempt CasePool::simulate(const Case& c) {
  Attempt a;
  try {
    EngineOptions eo;
    for (int64_t rep = 0; rep < c.warmup + c.repetitions; ++rep) {
      eo.timeline = (opt_.timeline || c.timeline) && rep == c.warmup;
      const auto r0 = std::chrono::steady_clock::now();
      CaseRun r = run_case(c, registry_, paths_, eo);
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
      if (const std::string bad = r.result.metrics.headline_problem(); !bad.empty()) {
        throw Error(fmt::format(
            "the case's result has no headline metrics: {} (expected finite TTFT, TBT and "
            "tokens/s)",
            bad));
      }
      if (rep < c.warmup) continue;
      if (rep == c.warmup) a.warnings = r.result.warnings;
      a.reps.push_back({r.result.metrics.to_json(), wall});
      if (eo.timeline) {
        a.timeline = chrome_trace_json(r.result.timeline, sel_.ex.suite.name + " / " + c.id,
                                       r.result.measured);
      }
    }
  } catch (const Cancelled&) {
    throw;
  } catch (const std::bad_alloc&) {
    a.error =
        "out of memory while running the case (std::bad_alloc): the case needs more memory "
        "than this "
        "machine has free; use fewer or shorter sequences or a smaller model";
  } catch (const std::exception& e) {
    a.error = e.what();
  }
  return a;
}

// The case's record: a row per repetition (or one row with its error), the
// case's identity, its metrics and its flattened configuration.
nlohmann::ordered_json CasePool::record(const Case& c, const Attempt& a,
                                        const SharedSimulation* copy, double wall) const {
  nlohmann::ordered_json stored;
  stored["case_id"] = c.id;
  stored["index"] = c.index;
  stored["rows"] = nlohmann::ordered_json::array();
  auto base_row = [&](int64_t rep) {
    RunRecord row;
    auto& f = row.fields;
    f["suite"] = sel_.ex.suite.name;
    f["run_id"] = run_id_;
    f["case_id"] = c.id;
    f["case_index"] = c.index;
    f["repetition"] = rep;
    f["status"] = a.error.empty() ? "ok" : "error";
    f["error"] =
        a.error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(a.error);
    f["warnings"] = a.warnings.empty() ? nlohmann::ordered_json(nullptr)
                                       : nlohmann::ordered_json(join(a.warnings, "; "));
    f["backend"] = c.backend;
    f["model"] = c.model.name;
    f["hardware"] = c.hardware.name;
    f["strategy"] = c.strategy.name;
    f["axes"] = axes_text(c);
    f["parts"] = join(c.parts, ";");
    f["preset_files"] = presets_text(c);
    f["utc_time"] = utc_now_iso();
    return row;
  };
  if (a.error.empty()) {
    for (size_t r = 0; r < a.reps.size(); ++r) {
      RunRecord row = base_row(int64_t(r));
      row.fields["wall_time_s"] = a.reps[r].second;
      row.fields["result_of"] =
          copy ? nlohmann::ordered_json(copy->from) : nlohmann::ordered_json(nullptr);
      for (auto it = a.reps[r].first.begin(); it != a.reps[r].first.end(); ++it)
        row.fields[it.key()] = it.value();
      const auto flat = flatten(c.config);
      for (auto it = flat.begin(); it != flat.end(); ++it) row.fields[it.key()] = it.value();
      stored["rows"].push_back(row.fields);
    }
  } else {
    RunRecord row = base_row(0);
    row.fields["wall_time_s"] = wall;
    row.fields["result_of"] = nullptr;
    const auto flat = flatten(c.config);
    for (auto it = flat.begin(); it != flat.end(); ++it) row.fields[it.key()] = it.value();
    stored["rows"].push_back(row.fields);
  }
  stored["status"] = a.error.empty() ? "ok" : "error";
  return stored;
}

// Under the lock: the case's timeline and record written (not committed if
// a write fails: --resume runs it), runs.jsonl/runs.csv refreshed at most
// every kRunsRefresh (rewritten after every case, their writes grew with
// the square of the cases: the DALI suite's two files are 52 MB at its end,
// 1,482 cases), the counts and the progress line.
void CasePool::commit(const Case& c, const nlohmann::ordered_json& stored, const Attempt& a,
                      const SharedSimulation* copy, double wall) {
  std::lock_guard<std::mutex> lk(mu_);
  try {
    if (!a.timeline.empty()) write_file_atomic(dir_ / "timelines" / (c.id + ".json"), a.timeline);
    run_.write_case(c.id, stored);
  } catch (const std::exception& e) {
    record_write_failure(fmt::format("case {} ({})", c.id, c.strategy.name), e.what());
    return;
  }
  done_[c.id] = stored;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_runs_write_ >= kRunsRefresh) {
    try {
      run_.write_runs(result_columns(), rows());
    } catch (const std::exception& e) {
      record_write_failure("runs.jsonl and runs.csv", e.what());
    }
    last_runs_write_ = std::chrono::steady_clock::now();
  }
  report(c, a, copy, wall);
}

// Under the lock: the counts, the case's new warnings, its progress line.
void CasePool::report(const Case& c, const Attempt& a, const SharedSimulation* copy, double wall) {
  const int64_t n = ++finished_;
  if (!a.error.empty()) ++out_.failed;
  for (const auto& w : a.warnings) {
    if (warned_.insert(w).second)
      fmt::print(stderr, "warning: {} (case {}, strategy {}; in the row's warnings)\n", w, c.id,
                 c.strategy.name);
  }
  ++out_.ran;
  if (opt_.quiet) return;
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const double eta = el / double(n) * double(todo_.size() - size_t(n));
  const int64_t total = int64_t(sel_.cases.size()), pos = out_.skipped + n;
  if (opt_.progress_tty) {
    fmt::print("\r[{:>{}}/{}] {:5.1f}%  elapsed {}  ETA {}  {:<40.40}", pos,
               std::to_string(total).size(), total, 100.0 * double(pos) / double(total),
               fmt_duration(el), fmt_duration(eta),
               c.strategy.name + (a.error.empty() ? "" : " (error)"));
    std::fflush(stdout);
  } else {
    fmt::print("[{}/{}] case {} {} {} {} ({:.2f} s){}\n", pos, total, c.index, c.id,
               c.strategy.name, axes_text(c), wall,
               !a.error.empty() ? "  ERROR: " + a.error
               : copy           ? " the same simulation as case " + copy->from
                                : "");
  }
}

void CasePool::worker() {
  size_t i = 0;
  const SharedSimulation* copy = nullptr;  // the simulation this case's rows copy
  bool owner = false;  // this worker simulates keys_[i] for the cases that share it
  while (take(&i, &copy, &owner)) {
    const Case& c = *todo_[i];
    const auto c0 = std::chrono::steady_clock::now();
    Attempt a;
    // The cases waiting on this simulation are released when it ends,
    // stopped or not; its rows are shared only when it succeeded.
    auto release = [&](bool ok) {
      if (!owner) return;
      std::lock_guard<std::mutex> lk(mu_);
      SharedSimulation& s = sims_[keys_[i]];
      s.running = false;
      s.ok = ok;
      if (ok) {
        s.reps = a.reps;
        s.warnings = a.warnings;
      }
      sims_cv_.notify_all();
    };
    if (copy) {
      a.reps = copy->reps;  // finished and never written again: read without the lock
      a.warnings = copy->warnings;
    } else {
      try {
        a = simulate(c);
      } catch (const Cancelled&) {
        release(false);
        return;  // stopped by SIGINT/SIGTERM: nothing written, --resume runs it
      }
    }
    release(a.error.empty() && !a.reps.empty());
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    commit(c, record(c, a, copy, wall), a, copy, wall);
  }
}

void CasePool::run(int jobs) {
  if (!opt_.quiet && out_.skipped)
    fmt::print("resuming {}: {} of {} cases already done\n", dir_.string(), out_.skipped,
               sel_.cases.size());
  std::vector<std::thread> threads;
  // Nothing a case does may end the process: an exception that escaped the
  // worker's own handling stops the run like a failed write.
  for (int j = 0; j < jobs; ++j) {
    threads.emplace_back([&] {
      try {
        worker();
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lk(mu_);
        record_write_failure("a worker thread", e.what());
        sims_cv_.notify_all();
      }
    });
  }
  for (auto& t : threads) t.join();
}
}  // namespace moebench
