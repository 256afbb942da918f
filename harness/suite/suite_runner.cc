// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "harness/suite/suite_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <cstdlib>

#include <unistd.h>

#include <fmt/format.h>

#include "core/engine/metrics.h"
#include "core/results/provenance.h"
#include "core/results/run_dir.h"
#include "core/util/artefact_cache.h"
#include "core/util/atomic_file.h"
#include "core/util/cancel.h"
#include "core/util/paths.h"
#include "core/util/sha256.h"
#include "harness/run/platform_provenance.h"
#include "harness/run/run_case.h"
#include "harness/suite/case_pool.h"
#include "harness/suite/suite_internal.h"

namespace moebench {
namespace fs = std::filesystem;

namespace {

constexpr int kSchemaVersion = 1;

// Whether a run's manifest is of the same shard as `s` (both unsharded, or
// the same I/N).
bool shard_matches(const nlohmann::ordered_json& m, const ShardSpec& s) {
  if (!m.contains("shard")) return !s.active();
  return s.active() && m["shard"].value("index", int64_t(-1)) == s.index &&
         m["shard"].value("count", int64_t(0)) == s.count;
}

std::string shard_text(const ShardSpec& s) {
  return s.active() ? fmt::format("shard {}/{}", s.index, s.count) : "the whole suite (no --shard)";
}

std::string shard_text_of(const nlohmann::ordered_json& m) {
  if (!m.contains("shard")) return "the whole suite (no --shard)";
  return fmt::format("shard {}/{}", m["shard"].value("index", int64_t(-1)),
                     m["shard"].value("count", int64_t(0)));
}

std::atomic<bool> g_interrupted{false};

// The first SIGINT/SIGTERM stops the run: cases in flight stop at their next
// check (core/util/cancel.h) and write nothing, finished ones are kept. A
// second signal ends the process at once (what is committed stays valid).
void on_signal(int sig) {
  if (g_interrupted.exchange(true)) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  request_cancel();
}

// A manifest that says "running" belongs either to a live run_suite (two
// processes must not write one run directory) or to one that was killed
// without a chance to write its status; only the second may be resumed.
void refuse_if_still_running(const nlohmann::ordered_json& m, const std::string& this_host,
                             const fs::path& dir) {
  if (m.value("status", "") != "running" || !m.contains("pid")) return;
  const int64_t pid = m.value("pid", int64_t(0));
  std::string host;
  if (m.contains("provenance")) host = m["provenance"].value("hostname", "");
  if (pid <= 0 || pid == ::getpid() || host != this_host) return;
  std::string cmdline;
  try {
    cmdline = read_file(fmt::format("/proc/{}/cmdline", pid));
  } catch (const Error&) {
    return;  // no such process: the run was killed
  }
  if (cmdline.find("run_suite") == std::string::npos) return;
  throw Error(fmt::format(
      "{}: expected an unfinished run to resume, found one still running (run_suite pid {} on "
      "{}); wait for it or stop it first",
      dir.string(), pid, host));
}

}  // namespace

bool interrupted() {
  return g_interrupted.load();
}

std::string axes_text(const Case& c) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : c.axes) parts.push_back(k + "=" + v);
  return join(parts, "; ");
}

// The preset files a case came from, for its rows: "strategies/all-cpu
// <file> sha256 <first 12>; ..." (the manifest has the whole hashes).
std::string presets_text(const Case& c) {
  std::vector<std::string> parts;
  for (const PresetFile& p : c.presets) {
    parts.push_back(
        fmt::format("{}/{} {} sha256 {}", p.kind, p.name, p.path, p.sha256.substr(0, 12)));
  }
  return join(parts, "; ");
}

std::string experiment_hash(const Experiment& ex) {
  Sha256 h;
  for (const auto& c : ex.cases) {
    h.update(c.id);
    for (const auto& p : c.parts) h.update("|" + p);
  }
  h.update(ex.suite.name);
  return h.hex_digest().substr(0, 16);
}

namespace {

// Whether `path` is `root` or inside it (both made absolute, `..` resolved).
bool under(const fs::path& path, const fs::path& root) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  const fs::path r = fs::weakly_canonical(fs::absolute(root, ec), ec);
  auto [ri, pi] = std::mismatch(r.begin(), r.end(), p.begin(), p.end());
  return ri == r.end() || (std::next(ri) == r.end() && ri->empty());
}

}  // namespace

std::string fmt_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = int64_t(s + 0.5);
  return t >= 3600 ? fmt::format("{}:{:02d}:{:02d}", t / 3600, (t / 60) % 60, t % 60)
                   : fmt::format("{}:{:02d}", t / 60, t % 60);
}

std::vector<Column> result_columns() {
  std::vector<Column> c = identity_columns();
  const auto m = RunMetrics::columns();
  c.insert(c.end(), m.begin(), m.end());
  return c;
}

bool case_matches(const Case& c, const std::string& filter) {
  if (filter.empty()) return true;
  const auto flat = flatten(c.config);
  for (const std::string& term : split(filter, ',')) {
    const std::string t = trim(term);
    if (t.empty()) continue;
    const auto eq = t.find('='), tilde = t.find('~');
    const bool contains = tilde != std::string::npos && (eq == std::string::npos || tilde < eq);
    const size_t op = contains ? tilde : eq;
    if (op == std::string::npos || op == 0) {
      throw Error(fmt::format(
          "--filter: expected terms like key=value or key~text separated by commas, found '{}'",
          t));
    }
    const std::string key = trim(t.substr(0, op)), want = trim(t.substr(op + 1));
    std::string have;
    bool found = false;
    if (auto it = flat.find(key); it != flat.end()) {
      have = it->is_string() ? it->get<std::string>() : it->dump();
      found = true;
    }
    for (const auto& [k, v] : c.axes) {
      if (k == key) {
        have = v;
        found = true;
      }
    }
    // key=a|b|c matches any of the alternatives (key~a|b: contains any).
    const std::vector<std::string> alts = split(want, '|');
    const auto matches = [&](const std::string& v) {
      for (const std::string& a : alts)
        if (contains ? v.find(a) != std::string::npos : v == a) return true;
      return false;
    };
    if (key == "part") {
      // Matches when any of the case's parts matches.
      bool any = false;
      for (const auto& p : c.parts) any = any || matches(p);
      if (!any) return false;
      continue;
    }
    if (!found) {
      std::vector<std::string> keys;
      for (auto it = flat.begin(); it != flat.end(); ++it) keys.push_back(it.key());
      throw Error(fmt::format(
          "--filter: expected a configuration key (e.g. strategy.name, model.name, "
          "workload.prompt_len), found '{}'{}",
          key,
          closest_name(key, keys).empty() ? ""
                                          : "; did you mean '" + closest_name(key, keys) + "'?"));
    }
    if (!matches(have)) return false;
  }
  return true;
}

std::string summary_table(const std::vector<RunRecord>& rows) {
  struct Col {
    const char* title;
    const char* key;
    int prec;
  };
  const Col cols[] = {{"TTFT ms", "ttft_mean_ms", 1},
                      {"TBT ms", "tbt_mean_ms", 2},
                      {"prefill tok/s", "prefill_tokens_per_s", 1},
                      {"decode tok/s", "decode_tokens_per_s", 2},
                      {"hit (dec)", "decode_hit_rate_token_frac", 3},
                      {"GPU frac", "gpu_expert_token_frac", 3}};
  std::vector<std::vector<std::string>> table;
  // A composite suite's rows say which part (figure or table) they belong to.
  const bool parts = std::any_of(rows.begin(), rows.end(), [](const RunRecord& r) {
    return r.fields.value("parts", "") != r.fields.value("suite", "");
  });
  std::vector<std::string> head = {"#", "strategy", "model", "hardware", "axes"};
  if (parts) head.insert(head.begin() + 1, "part");
  for (const auto& c : cols) head.push_back(c.title);
  table.push_back(head);
  // Repetitions of a case: the table shows mean +- sample standard deviation.
  std::map<std::string, std::vector<const RunRecord*>> reps;
  for (const auto& r : rows) reps[r.fields.value("case_id", "")].push_back(&r);
  auto cell = [&](const std::string& id, const char* key, int prec) -> std::string {
    std::vector<double> x;
    for (const RunRecord* r : reps[id]) {
      auto it = r->fields.find(key);
      if (it != r->fields.end() && it->is_number()) x.push_back(it->get<double>());
    }
    if (x.empty()) return "-";
    double m = 0;
    for (double v : x) m += v;
    m /= double(x.size());
    if (x.size() == 1) return fmt::format("{:.{}f}", m, prec);
    double ss = 0;
    for (double v : x) ss += (v - m) * (v - m);
    return fmt::format("{:.{}f}±{:.{}f}", m, prec, std::sqrt(ss / double(x.size() - 1)), prec);
  };
  std::map<std::string, bool> seen;
  for (const auto& r : rows) {
    const std::string id = r.fields.value("case_id", "");
    if (seen[id]) continue;  // one line per case
    seen[id] = true;
    std::vector<std::string> line = {std::to_string(r.fields.value("case_index", 0)),
                                     r.fields.value("strategy", ""), r.fields.value("model", ""),
                                     r.fields.value("hardware", ""), r.fields.value("axes", "")};
    if (parts) line.insert(line.begin() + 1, r.fields.value("parts", ""));
    if (r.fields.value("status", "") != "ok") {
      line.push_back("error: " + r.fields.value("error", "").substr(0, 60));
      table.push_back(line);
      continue;
    }
    for (const auto& c : cols) line.push_back(cell(id, c.key, c.prec));
    table.push_back(line);
  }
  std::vector<size_t> width(head.size(), 0);
  for (const auto& line : table) {
    for (size_t i = 0; i < line.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], line[i].size());
  }
  std::string out;
  for (size_t r = 0; r < table.size(); ++r) {
    const size_t first_metric = parts ? 6 : 5;
    for (size_t i = 0; i < table[r].size(); ++i) {
      const bool num = i >= first_metric || i == 0;
      out += i ? "  " : "";
      out += num && r > 0 ? fmt::format("{:>{}}", table[r][i], width[i])
                          : fmt::format("{:<{}}", table[r][i], width[i]);
    }
    out += "\n";
    if (r == 0) {
      for (size_t i = 0; i < width.size(); ++i) out += (i ? "  " : "") + std::string(width[i], '-');
      out += "\n";
    }
  }
  return out;
}

namespace {

Selection select_cases(const SuiteOptions& opt, const Registry& registry,
                       const ConfigPaths& paths) {
  Selection s{load_experiment(opt.file, paths, &registry, opt.max_cases), {}, {}};
  for (const auto& c : s.ex.cases) {
    if (case_matches(c, opt.filter)) s.cases.push_back(&c);
  }
  if (s.cases.empty() && !opt.filter.empty()) {
    throw Error(fmt::format(
        "--filter '{}': expected to match at least one of the {} cases of suite '{}', found none "
        "(run_suite {} --dry-run lists them with their strategy, model and axes)",
        opt.filter, s.ex.cases.size(), s.ex.suite.name, opt.file.string()));
  }
  // --shard I/N: this slice of the (filtered) cases (harness/suite/shards.h).
  if (opt.shard.active()) {
    std::vector<double> work;
    std::vector<std::string> keys;
    for (const Case* c : s.cases) {
      s.suite_case_ids.push_back(c->id);
      work.push_back(case_work_estimate(*c));
      keys.push_back(c->backend == "sim" && !opt.timeline && !c->timeline ? simulation_key(*c)
                                                                          : std::string());
    }
    const auto shard_of = assign_shards(work, keys, opt.shard.count);
    std::vector<const Case*> mine;
    for (size_t i = 0; i < s.cases.size(); ++i) {
      if (shard_of[i] == opt.shard.index) mine.push_back(s.cases[i]);
    }
    s.cases = std::move(mine);
  }
  return s;
}

// --dry-run: the cases and what each would fail on before it runs.
SuiteOutcome dry_run(const SuiteOptions& opt, const Selection& s, const Registry& registry) {
  SuiteOutcome out;
  out.cases = int64_t(s.cases.size());
  if (opt.shard.active()) {
    fmt::print("shard {}/{}: {} of the {} cases\n", opt.shard.index, opt.shard.count,
               s.cases.size(), s.suite_case_ids.size());
  }
  fmt::print("suite '{}': {} case{} ({} before --filter{})\n", s.ex.suite.name, s.cases.size(),
             s.cases.size() == 1 ? "" : "s", s.ex.cases.size(),
             opt.shard.active() ? " and --shard" : "");
  int64_t failing = 0;
  for (const Case* c : s.cases) {
    fmt::print("  [{}] {}  {} / {} / {}  {}\n", c->index, c->id, c->strategy.name, c->model.name,
               c->hardware.name, axes_text(*c));
    // What a case can fail on before it runs (memory fit, components).
    try {
      preflight_case(*c, registry);
    } catch (const Error& e) {
      ++failing;
      fmt::print("      will fail: {}\n", e.what());
    }
  }
  if (failing > 0) {
    fmt::print("{} of {} case{} would fail before running (above)\n", failing, s.cases.size(),
               s.cases.size() == 1 ? "" : "s");
    out.failed = failing;
    out.exit_code = 1;
  }
  return out;
}

// What every case's components need of its workload, before anything runs:
// a suite whose predictor needs gate inputs on a trace without them is
// refused now, not when its case comes up an hour in.
void check_case_needs(const SuiteOptions& opt, const Selection& s, const Registry& registry) {
  std::vector<std::string> bad;
  for (const Case* c : s.cases) {
    std::optional<StrategyInstance> st;
    try {
      st.emplace(StrategyInstance::create(c->strategy, registry));
    } catch (const Error&) {
      continue;  // a component that cannot be created fails its case as before
    }
    try {
      check_needs(*c, *st);
    } catch (const Error& e) {
      bad.push_back(
          fmt::format("[{}] {} / {}: {}", c->index, c->strategy.name, c->model.name, e.what()));
    }
  }
  if (bad.empty()) return;
  const size_t shown = std::min<size_t>(bad.size(), 10);
  throw Error(fmt::format(
      "suite '{}': expected every case's workload to have what its strategy's components need, "
      "found {} of {} "
      "case{} without (nothing was run; `run_suite {} --dry-run` lists every case, --filter "
      "leaves cases "
      "out):\n  {}{}",
      s.ex.suite.name, bad.size(), s.cases.size(), s.cases.size() == 1 ? "" : "s",
      opt.file.string(), fmt::join(bad.begin(), bad.begin() + std::ptrdiff_t(shown), "\n  "),
      bad.size() > shown ? fmt::format("\n  ... and {} more", bad.size() - shown) : std::string()));
}

// The newest run of these cases under the suite's folder that is unfinished
// (--resume without --out), or complete (complete = true), or an empty path.
fs::path newest_run(const fs::path& suite_root, const std::string& hash, const ShardSpec& shard,
                    bool complete = false) {
  std::error_code ec;
  if (!fs::is_directory(suite_root, ec)) return {};
  std::vector<fs::path> candidates;
  for (const auto& e : fs::directory_iterator(suite_root, ec)) {
    if (!e.is_directory()) continue;
    RunDirectory rd(e.path());
    if (!rd.has_manifest()) continue;
    const auto m = rd.read_manifest();
    if (m.value("experiment_hash", "") == hash &&
        (m.value("status", "") == "complete") == complete && shard_matches(m, shard))
      candidates.push_back(e.path());
  }
  std::sort(candidates.begin(), candidates.end());
  return candidates.empty() ? fs::path() : candidates.back();
}

// With --resume and resume_skips_complete (run_suite --points --resume): the
// complete run of these cases when there is one and none unfinished (then
// there is nothing to do), else an empty path.
fs::path complete_and_nothing_to_resume(const SuiteOptions& opt, const Experiment& ex,
                                        const std::string& hash) {
  if (!opt.resume || !opt.resume_skips_complete || !opt.out.empty()) return {};
  const fs::path suite_root = child_path(opt.results_root, ex.suite.name, "suite.name");
  if (!newest_run(suite_root, hash, opt.shard).empty()) return {};
  return newest_run(suite_root, hash, opt.shard, /*complete=*/true);
}

// The run folder, locked until the run ends (a second run_suite into it, of
// another suite, the same one or a second --resume, is refused): --out's,
// the run --resume finds, or a new one under the suite's folder.
std::unique_ptr<RunDirectory> open_run_dir(const SuiteOptions& opt, const Experiment& ex,
                                           const std::string& hash, fs::path* dir) {
  *dir = opt.out;
  // The suite's name is one path component (checked at load too): results
  // never land outside the results root.
  const fs::path suite_root = child_path(opt.results_root, ex.suite.name, "suite.name");
  if (dir->empty() && opt.resume) *dir = newest_run(suite_root, hash, opt.shard);
  const std::string holder =
      fmt::format("run_suite pid {} ({})", ::getpid(), join(opt.argv, " ").substr(0, 300));
  if (!dir->empty()) {
    if (const std::string why = RunDirectory::not_a_run_folder(*dir); !why.empty()) {
      throw Error(fmt::format(
          "--out {}: expected a new or empty folder, or a run folder to --resume, found {}; "
          "nothing was written",
          dir->string(), why));
    }
    auto run = std::make_unique<RunDirectory>(*dir);
    run->lock(holder);
    return run;
  }
  // The root named once, before any folder name is tried in it.
  require_results_root(opt.results_root, "--results");
  require_results_root(suite_root, "--results");
  // A new run folder: the first free name; two runs of one suite started
  // in the same second take different ones.
  const std::string base =
      fmt::format("{}-{}{}", utc_now_stamp(), hash.substr(0, 8),
                  opt.shard.active() ? fmt::format("-shard{}of{}", opt.shard.index, opt.shard.count)
                                     : std::string());
  for (int n = 1;; ++n) {
    *dir = suite_root / (n == 1 ? base : fmt::format("{}-{}", base, n));
    std::error_code ec;
    if (fs::exists(*dir, ec)) continue;
    auto candidate = std::make_unique<RunDirectory>(*dir);
    try {
      candidate->lock(holder);
    } catch (const Error&) {
      if (n < 100) continue;  // taken meanwhile by another run
      throw;
    }
    if (candidate->has_manifest()) continue;
    return candidate;
  }
}

// An existing run in the folder may be resumed only as what it was started
// as: the same cases, the same shard (and not still running: checked with
// the provenance's host, refuse_if_still_running). Its manifest.
nlohmann::ordered_json check_resumable(const SuiteOptions& opt, const RunDirectory& run,
                                       const fs::path& dir, const std::string& hash) {
  if (!run.has_manifest()) return nlohmann::ordered_json::object();
  if (!opt.resume) {
    throw Error(fmt::format(
        "{}: expected an empty run directory (or --resume), found an existing run", dir.string()));
  }
  nlohmann::ordered_json prior = run.read_manifest();
  if (prior.value("experiment_hash", "") != hash) {
    throw Error(fmt::format(
        "{}: expected a run of this suite's cases (experiment hash {}), found a run of different "
        "cases; the suite file or a file it reads (a preset, a trace, an arrivals file) changed "
        "since that run",
        dir.string(), hash));
  }
  // A run started on a --filter's cases finishes on those (a resume with
  // another filter once marked an 18-case run "complete" after 3 of them).
  if (prior.value("filter", "") != opt.filter) {
    const auto shown = [](const std::string& f) {
      return f.empty() ? std::string("no --filter") : "--filter '" + f + "'";
    };
    throw Error(fmt::format(
        "{}: expected {} (the run was started with it: --resume finishes the run it was started "
        "as), found {}",
        dir.string(), shown(prior.value("filter", "")), shown(opt.filter)));
  }
  if (!shard_matches(prior, opt.shard)) {
    throw Error(fmt::format(
        "{}: expected a run of {}, found a run of {}: --resume finishes the run it was started as",
        dir.string(), shard_text(opt.shard), shard_text_of(prior)));
  }
  return prior;
}

// The manifest a run starts with: what ran, where, from which files.
nlohmann::ordered_json start_manifest(const SuiteOptions& opt, const Selection& s,
                                      const std::string& hash, const std::string& run_id,
                                      const Provenance& prov, const nlohmann::ordered_json* prior) {
  const Experiment& ex = s.ex;
  nlohmann::ordered_json manifest;
  manifest["schema_version"] = kSchemaVersion;
  manifest["provenance"] = prov.to_json();
  manifest["suite"] = {{"name", ex.suite.name},
                       {"file", opt.file.string()},
                       {"file_sha256", sha256_hex(read_file(opt.file))},
                       {"description", ex.suite.description},
                       {"reproduces", ex.suite.reproduces},
                       {"backend", ex.suite.backend},
                       {"repetitions", ex.suite.repetitions},
                       {"warmup", ex.suite.warmup}};
  manifest["run_id"] = run_id;
  manifest["experiment_hash"] = hash;
  manifest["filter"] = opt.filter;
  if (opt.shard.active()) {
    // What run_suite --merge checks: one slice of which cases, how they were cut.
    manifest["shard"] = {
        {"index", opt.shard.index},
        {"count", opt.shard.count},
        {"assignment",
         "cases sharing a simulation together; groups longest first onto the least loaded shard by "
         "estimated work = sequences x (prompt + decode) x MoE layers (harness/suite/shards.h)"},
        {"suite_cases", s.suite_case_ids}};
  }
  if (const char* slow = std::getenv("MOEBENCH_TEST_SLOWDOWN"); slow && *slow) {
    manifest["test_slowdown"] = slow;  // test-only: a strategy's CPU made slower on purpose
  }
  // "running" stays in the manifest if the process is killed without a
  // chance to write (kill -9, power loss); pid and host tell --resume and a
  // reader whether that process still exists (docs/USAGE.md, "Reading a result").
  manifest["status"] = "running";
  manifest["pid"] = static_cast<int64_t>(::getpid());
  manifest["started_utc"] = prior ? prior->value("started_utc", prov.utc_time) : prov.utc_time;
  manifest["seeds"] = nlohmann::ordered_json::array();
  manifest["cases"] = nlohmann::ordered_json::array();
  std::set<int64_t> seeds;
  for (const Case* c : s.cases) {
    seeds.insert(c->workload.seed);
    nlohmann::ordered_json presets = nlohmann::ordered_json::array();
    for (const PresetFile& p : c->presets) {
      presets.push_back(
          {{"kind", p.kind}, {"name", p.name}, {"file", p.path}, {"sha256", p.sha256}});
    }
    manifest["cases"].push_back({{"case_id", c->id},
                                 {"index", c->index},
                                 {"parts", c->parts},
                                 {"axes", axes_text(*c)},
                                 {"presets", presets},
                                 {"config", c->config}});
  }
  for (int64_t seed : seeds) manifest["seeds"].push_back(seed);
  return manifest;
}

// Real cases measure wall-clock time with every thread the case asks for:
// two at once would time each other's contention.
int worker_count(const SuiteOptions& opt, const std::vector<const Case*>& cases) {
  const bool real =
      std::any_of(cases.begin(), cases.end(), [](const Case* c) { return c->backend == "real"; });
  if (real && opt.jobs > 1 && !opt.quiet) {
    fmt::print("suite.backend = \"real\": running the cases one at a time (--jobs {} ignored)\n",
               opt.jobs);
  }
  return real ? 1 : std::max(1, opt.jobs);
}

// After the last case: runs.jsonl/runs.csv and the manifest's final status
// and counts. The failed cases' count.
int64_t finish_run(CasePool& pool, RunDirectory& run, nlohmann::ordered_json& manifest,
                   const std::vector<RunRecord>& rows, size_t cases) {
  try {
    run.write_runs(result_columns(), rows);
  } catch (const std::exception& e) {
    pool.record_write_failure("runs.jsonl and runs.csv", e.what());
  }
  int64_t failed_total = 0;
  for (const auto& [id, c] : pool.done()) failed_total += c.value("status", "") != "ok";
  const bool partial = !pool.write_failures().empty();
  manifest["status"] = partial ? "partial" : g_interrupted.load() ? "interrupted" : "complete";
  manifest["finished_utc"] = utc_now_iso();
  manifest["counts"] = {
      {"cases", cases}, {"finished", pool.done().size()}, {"failed", failed_total}};
  if (partial) manifest["write_errors"] = pool.write_failures();
  run.release_reserve();  // its room is the manifest's now
  try {
    run.write_manifest(manifest);
  } catch (const std::exception& e) {
    // The manifest keeps "running" with this (then dead) pid: --resume
    // takes it as a killed run.
    fmt::print(stderr, "run_suite: manifest.json: could not be written: {}\n", e.what());
  }
  return failed_total;
}

// A paper suite (one that names what it reproduces) ends with its verdicts,
// where this run is one the report can judge.
void print_verdicts(const SuiteOptions& opt, const Selection& s, const fs::path& dir) {
  const Experiment& ex = s.ex;
  const bool paper = !ex.suite.reproduces.empty() && !starts_with(ex.suite.reproduces, "none");
  if (!paper) return;
  if (opt.shard.active()) {
    fmt::print(
        "\nverdicts need the whole suite (this run is shard {}/{}): run_suite --merge the "
        "shards' "
        "folders, then make report\n",
        opt.shard.index, opt.shard.count);
  } else if (!opt.out.empty() && !under(dir, opt.results_root / ex.suite.name)) {
    // The report reads the newest run under <results>/<suite>/: this run
    // is not there, and its report must not land outside the folder named.
    fmt::print(
        "\nverdicts not computed: the report reads runs under {}/ and this run is in {} "
        "(run with --results ROOT instead of --out to judge it)\n",
        (opt.results_root / ex.suite.name).string(), dir.string());
  } else if (opt.filter.empty()) {
    print_verdict_summary(opt, ex, s.cases);
  } else {
    fmt::print(
        "\nverdicts need the whole suite (this run used --filter): make report once every part "
        "has run\n");
  }
}

// How to get the rest of an interrupted or partial run; always said, even
// with --quiet.
void print_how_to_finish(const SuiteOptions& opt, const CasePool& pool, size_t cases,
                         const fs::path& dir) {
  // The command that finishes the run: with the presets this run read first
  // (a --points folder's configs/) on the search path, as they were.
  std::string command;
  if (!opt.config_roots.empty()) {
    std::vector<std::string> roots;
    for (const auto& r : opt.config_roots) roots.push_back(r.string());
    if (const char* env = std::getenv("MOEBENCH_CONFIG_PATH"); env && *env) roots.push_back(env);
    command = "MOEBENCH_CONFIG_PATH=" + join(roots, ":") + " ";
  }
  command += fmt::format("run_suite {}", opt.file.string());
  if (opt.shard.active())
    command += fmt::format(" --shard {}/{}", opt.shard.index, opt.shard.count);
  if (!opt.filter.empty()) command += fmt::format(" --filter '{}'", opt.filter);
  command += " --resume --out " + dir.string();
  if (g_interrupted.load()) {
    fmt::print(stderr,
               "run_suite: interrupted: {} of {} cases finished and are kept in {}; the cases that "
               "were running "
               "were stopped and wrote nothing. Resume with:\n  {}\n",
               pool.done().size(), cases, dir.string(), command);
  }
  if (!pool.write_failures().empty()) {
    fmt::print(stderr,
               "run_suite: partial: {} of {} cases are written in {}; a result could not be "
               "written ({}). Free the space (or fix the folder), then finish with:\n  {}\n",
               pool.done().size(), cases, dir.string(), pool.write_failures().front(), command);
  }
}

}  // namespace

SuiteOutcome run_suite(const SuiteOptions& opt, const Registry& registry) {
  ConfigPaths paths = ConfigPaths::defaults();
  paths.roots.insert(paths.roots.begin(), opt.config_roots.begin(), opt.config_roots.end());
  const Selection sel = select_cases(opt, registry, paths);
  if (opt.dry_run) return dry_run(opt, sel, registry);
  check_case_needs(opt, sel, registry);

  SuiteOutcome out;
  out.cases = int64_t(sel.cases.size());
  const std::string hash = experiment_hash(sel.ex);
  if (const fs::path done = complete_and_nothing_to_resume(opt, sel.ex, hash); !done.empty()) {
    if (!opt.quiet) fmt::print("run_suite: {}: complete; nothing to resume\n", done.string());
    out.run_dir = done;
    return out;
  }
  fs::path dir;
  const std::unique_ptr<RunDirectory> run_ptr = open_run_dir(opt, sel.ex, hash, &dir);
  RunDirectory& run = *run_ptr;
  const bool existed = run.has_manifest();
  const nlohmann::ordered_json prior = check_resumable(opt, run, dir, hash);
  const Provenance prov = collect_provenance(opt.argv, platform_provenance_probes());
  if (existed) refuse_if_still_running(prior, prov.hostname, dir);
  run.prepare();
  out.run_dir = dir;
  nlohmann::ordered_json manifest =
      start_manifest(opt, sel, hash, dir.filename().string(), prov, existed ? &prior : nullptr);
  const uint64_t manifest_bytes = run.write_manifest(manifest);
  // Room for the last manifest, whatever the cases' files take meanwhile: a
  // disk that fills during the run still ends with "partial" on record.
  run.reserve(manifest_bytes + (uint64_t(64) << 10));

  CasePool pool(opt, registry, paths, sel, run, dir, dir.filename().string(), out);
  g_interrupted.store(false);
  clear_cancel();
  {
    // Trained artefacts (SMoE's predictor) are kept inside the results root,
    // like everything run_suite writes, unless $MOEBENCH_CACHE names a folder.
    const char* env_cache = std::getenv("MOEBENCH_CACHE");
    ScopedArtefactCache artefacts(env_cache && *env_cache ? fs::path(env_cache)
                                                          : opt.results_root / ".cache");
    auto handler = std::signal(SIGINT, on_signal);
    auto term_handler = std::signal(SIGTERM, on_signal);
    pool.run(worker_count(opt, sel.cases));
    std::signal(SIGINT, handler);
    std::signal(SIGTERM, term_handler);
  }
  if (opt.progress_tty && !opt.quiet) fmt::print("\n");

  const auto rows = pool.rows();
  const int64_t failed_total = finish_run(pool, run, manifest, rows, sel.cases.size());
  const bool interrupted = g_interrupted.load();
  const bool partial = !pool.write_failures().empty();
  if (!opt.quiet) {
    if (!rows.empty()) fmt::print("\n{}", summary_table(rows));
    fmt::print("\nresults: {} ({} cases, {} run now, {} from an earlier run, {} failed)\n",
               dir.string(), sel.cases.size(), out.ran, out.skipped, failed_total);
  }
  if (!opt.quiet && !interrupted && !partial) print_verdicts(opt, sel, dir);
  print_how_to_finish(opt, pool, sel.cases.size(), dir);
  out.failed = failed_total + int64_t(pool.write_failures().size());
  out.exit_code = interrupted ? 130 : partial || failed_total > 0 ? 1 : 0;
  return out;
}

}  // namespace moebench
