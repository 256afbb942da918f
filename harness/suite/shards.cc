// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "harness/suite/shards.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/results/provenance.h"
#include "core/results/run_dir.h"
#include "core/util/error.h"
#include "core/util/json_text.h"
#include "core/util/paths.h"
#include "core/util/strings.h"
#include "harness/run/platform_provenance.h"
#include "harness/suite/merge_checks.h"
#include "harness/suite/suite_runner.h"

namespace moebench {

namespace fs = std::filesystem;

ShardSpec parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  auto whole = [&](const std::string& s, int64_t& v) {
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), ::isdigit)) return false;
    v = std::stoll(s);
    return true;
  };
  ShardSpec s;
  if (slash == std::string::npos || !whole(text.substr(0, slash), s.index) ||
      !whole(text.substr(slash + 1), s.count) || s.count < 1 || s.count > 100000 ||
      s.index >= s.count) {
    throw Error(fmt::format(
        "--shard: expected I/N with N from 1 to 100000 and I from 0 to N - 1 (a Slurm array's "
        "$SLURM_ARRAY_TASK_ID/N with --array=0-(N-1)), found '{}'",
        text));
  }
  return s;
}

double case_work_estimate(const Case& c) {
  const double tokens = double(std::max<int64_t>(1, c.workload.sequences)) *
                        double(std::max<int64_t>(1, c.workload.prompt_len + c.workload.decode_len));
  return std::max(1.0, tokens * double(std::max<int64_t>(1, c.model.moe_layers())));
}

std::vector<int64_t> assign_shards(const std::vector<double>& work,
                                   const std::vector<std::string>& keys, int64_t count) {
  const size_t n = work.size();
  // Groups: the cases of one simulation key together, every other case alone.
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> group_of_key;
  for (size_t i = 0; i < n; ++i) {
    if (!keys[i].empty()) {
      auto [it, fresh] = group_of_key.emplace(keys[i], groups.size());
      if (fresh) groups.emplace_back();
      groups[it->second].push_back(i);
    } else {
      groups.push_back({i});
    }
  }
  // A group simulates once: its work is its first case's.
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return work[groups[a].front()] > work[groups[b].front()];
  });
  std::vector<double> load(size_t(count), 0.0);
  std::vector<int64_t> shard(n, 0);
  for (size_t g : order) {
    const size_t s = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    load[s] += work[groups[g].front()];
    for (size_t i : groups[g]) shard[i] = int64_t(s);
  }
  return shard;
}

namespace {

std::string text_of(const nlohmann::ordered_json& j) {
  return j.is_string() ? j.get<std::string>() : json_text(j);
}

const nlohmann::ordered_json& at_path(const nlohmann::ordered_json& m, const std::string& path) {
  static const nlohmann::ordered_json null_value;
  const nlohmann::ordered_json* p = &m;
  for (const auto& part : split(path, '.')) {
    if (!p->is_object() || !p->contains(part)) return null_value;
    p = &(*p)[part];
  }
  return *p;
}

// A merge that fails once it has created its folder (a full disk, say)
// leaves nothing behind: the folder it created is removed, or, when it was
// given an empty one, what it wrote in it (8 case files and a lock were
// once left after an error).
struct RemoveUnlessKept {
  fs::path dir;
  bool existed = false;
  bool keep = false;
  ~RemoveUnlessKept() {
    if (keep) return;
    std::error_code ec;
    if (!existed) {
      fs::remove_all(dir, ec);
      return;
    }
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::error_code rec;
      fs::remove_all(e.path(), rec);
    }
  }
};

// A shard's run folder as read: its manifest and finished cases, checked.
struct ShardInput {
  fs::path dir;
  nlohmann::ordered_json manifest;
  std::map<std::string, nlohmann::ordered_json> cases;
};

// Every folder given, once each, a shard's run with the keys and types a
// run writes (before any is read: an edited file once gave "internal
// error: [json.exception.type_error.302]").
std::vector<ShardInput> read_shards(const MergeOptions& opt) {
  std::vector<ShardInput> in;
  std::set<fs::path> seen_dirs;
  for (const auto& d : opt.inputs) {
    std::error_code ec;
    const fs::path canon = fs::weakly_canonical(d, ec);
    if (!seen_dirs.insert(ec ? d : canon).second) {
      throw Error(
          fmt::format("--merge: {}: expected each shard folder once, found it twice", d.string()));
    }
    RunDirectory rd(d);
    if (!rd.has_manifest()) {
      throw Error(fmt::format("--merge: {}: expected a run folder (with manifest.json), found {}",
                              d.string(), file_kind(d)));
    }
    ShardInput x{d, rd.read_manifest(), rd.finished_cases()};
    if (x.manifest.is_object() && !x.manifest.contains("shard")) {
      throw Error(fmt::format(
          "--merge: {}: expected the run folder of a shard (run_suite --shard I/N), found a run "
          "without one",
          d.string()));
    }
    try {
      check_shard_manifest(x.manifest, d / "manifest.json");
      for (const auto& [id, c] : x.cases) check_stored_case(id, c, d / "cases" / (id + ".json"));
    } catch (const Error& e) {
      throw Error(fmt::format("--merge: {}; nothing was written", e.what()));
    }
    in.push_back(std::move(x));
  }
  return in;
}

// The shards must be slices of one run of one suite at one commit.
void check_shards_agree(const std::vector<ShardInput>& in) {
  const char* agree[] = {
      "suite.name",  "suite.file_sha256",     "suite.backend",        "experiment_hash",  "filter",
      "shard.count", "provenance.git_commit", "provenance.git_dirty", "shard.suite_cases"};
  for (size_t i = 1; i < in.size(); ++i) {
    for (const char* key : agree) {
      const auto& a = at_path(in[0].manifest, key);
      const auto& b = at_path(in[i].manifest, key);
      if (a != b) {
        const bool list = a.is_array() || b.is_array();
        throw Error(fmt::format(
            "--merge: expected every shard to agree on manifest key '{}' (shards of one run of one "
            "suite at one commit), found {} in {} and {} in {}",
            key, list ? fmt::format("a list of {} cases", a.size()) : text_of(a),
            in[0].dir.string(), list ? fmt::format("a list of {} cases", b.size()) : text_of(b),
            in[i].dir.string()));
      }
    }
  }
}

// The shards by index, each once and complete (unless --partial); the
// indices of 0..count-1 not given.
std::map<int64_t, fs::path> index_shards(const std::vector<ShardInput>& in, const MergeOptions& opt,
                                         int64_t count, std::vector<int64_t>* absent) {
  std::map<int64_t, fs::path> by_index;
  for (const auto& x : in) {
    const int64_t idx = x.manifest["shard"].value("index", int64_t(-1));
    auto [it, fresh] = by_index.emplace(idx, x.dir);
    if (!fresh) {
      throw Error(
          fmt::format("--merge: expected each shard once, found shard {}/{} in both {} and {}", idx,
                      count, it->second.string(), x.dir.string()));
    }
    const std::string status = x.manifest.value("status", "");
    if (status != "complete" && !opt.partial) {
      throw Error(fmt::format(
          "--merge: {}: expected a complete shard run, found status '{}' (resume it with "
          "run_suite <suite> --shard {}/{} --resume --out {}, or merge with --partial)",
          x.dir.string(), status, idx, count, x.dir.string()));
    }
  }
  for (int64_t i = 0; i < count; ++i) {
    if (!by_index.count(i)) absent->push_back(i);
  }
  return by_index;
}

// The suite's cases across the shards: where each was found, those found
// twice, those in no shard.
struct ShardCases {
  std::vector<std::string> suite_cases;
  std::map<std::string, const nlohmann::ordered_json*> found;  // case id -> stored case
  std::map<std::string, std::vector<std::string>> dup;
  std::vector<std::string> missing;
};

std::string listed(const std::vector<std::string>& ids) {
  const size_t shown = std::min<size_t>(ids.size(), 20);
  return fmt::format("{}{}", fmt::join(ids.begin(), ids.begin() + std::ptrdiff_t(shown), ", "),
                     ids.size() > shown ? fmt::format(" and {} more", ids.size() - shown) : "");
}

// Every case of the suite once: the case list, the experiment hash and
// every stored row checked against the suite file the manifests name,
// recomputed (not trusted from them); a case of another suite refused.
ShardCases collect_cases(const std::vector<ShardInput>& in, const Registry& registry) {
  const auto& m0 = in[0].manifest;
  ShardCases sc;
  sc.suite_cases = m0["shard"]["suite_cases"].get<std::vector<std::string>>();
  std::map<std::string, std::pair<const nlohmann::ordered_json*, fs::path>> found_in;
  for (const auto& x : in) {
    for (const auto& [id, c] : x.cases) {
      auto [it, fresh] = sc.found.emplace(id, &c);
      if (!fresh) sc.dup[id].push_back(x.dir.string());
      found_in.emplace(id, std::make_pair(&c, x.dir));
    }
  }
  check_against_suite(m0, in[0].dir / "manifest.json", found_in, registry);
  for (const auto& id : sc.suite_cases) {
    if (!sc.found.count(id)) sc.missing.push_back(id);
  }
  std::set<std::string> known(sc.suite_cases.begin(), sc.suite_cases.end());
  std::vector<std::string> foreign;
  for (const auto& [id, c] : sc.found) {
    if (!known.count(id)) foreign.push_back(id);
  }
  if (!foreign.empty()) {
    throw Error(fmt::format("--merge: expected only the suite's cases, found {} other case{}: {}",
                            foreign.size(), foreign.size() == 1 ? "" : "s",
                            fmt::join(foreign, ", ")));
  }
  return sc;
}

// Without --partial: a case in no shard or in two is refused, naming them.
void refuse_incomplete(const ShardCases& sc, const std::vector<int64_t>& absent_shards,
                       int64_t count) {
  if (sc.missing.empty() && sc.dup.empty()) return;
  std::string what;
  if (!absent_shards.empty()) {
    what += fmt::format("shard{} {} of {} not given; ", absent_shards.size() == 1 ? "" : "s",
                        fmt::join(absent_shards, ", "), count);
  }
  if (!sc.missing.empty()) {
    what += fmt::format("{} case{} in no shard: {}; ", sc.missing.size(),
                        sc.missing.size() == 1 ? "" : "s", listed(sc.missing));
  }
  if (!sc.dup.empty()) {
    std::vector<std::string> d;
    for (const auto& [id, dirs] : sc.dup) d.push_back(fmt::format("{} (also in {})", id, dirs[0]));
    what += fmt::format("{} case{} in two shards: {}; ", sc.dup.size(),
                        sc.dup.size() == 1 ? "" : "s", listed(d));
  }
  throw Error(fmt::format(
      "--merge: expected every one of the suite's {} cases exactly once, found: {}nothing was "
      "written (--partial keeps what there is)",
      sc.suite_cases.size(), what));
}

// The merged folder (--out, or one named after the run where the suite's
// runs are): new or empty, locked.
fs::path merge_dir(const MergeOptions& opt, const nlohmann::ordered_json& m0) {
  const std::string suite = m0["suite"].value("name", "");
  const std::string hash = m0.value("experiment_hash", "");
  fs::path dir = opt.out;
  if (dir.empty()) {
    dir = child_path(opt.results_root, suite, "suite.name") /
          fmt::format("{}-{}-merged", utc_now_stamp(), hash.substr(0, 8));
  }
  if (const std::string why = RunDirectory::not_a_run_folder(dir); !why.empty()) {
    throw Error(fmt::format(
        "--merge --out {}: expected a new or empty folder, found {}; nothing was written",
        dir.string(), why));
  }
  return dir;
}

// The merged run's manifest before its cases: provenance, suite, and
// which shard folder each part came from.
nlohmann::ordered_json merged_manifest(const MergeOptions& opt, const std::vector<ShardInput>& in,
                                       const std::map<int64_t, fs::path>& by_index,
                                       const fs::path& dir) {
  const auto& m0 = in[0].manifest;
  nlohmann::ordered_json manifest;
  manifest["schema_version"] = m0.value("schema_version", 1);
  manifest["provenance"] = collect_provenance(opt.argv, platform_provenance_probes()).to_json();
  manifest["suite"] = m0["suite"];
  manifest["run_id"] = dir.filename().string();
  manifest["experiment_hash"] = m0.value("experiment_hash", "");
  manifest["filter"] = m0["filter"];
  manifest["merged_from"] = nlohmann::ordered_json::array();
  for (const auto& [idx, d] : by_index) {
    for (const auto& x : in) {
      if (x.dir != d) continue;
      manifest["merged_from"].push_back({{"shard", idx},
                                         {"dir", d.string()},
                                         {"run_id", x.manifest.value("run_id", "")},
                                         {"status", x.manifest.value("status", "")},
                                         {"hostname", at_path(x.manifest, "provenance.hostname")},
                                         {"started_utc", x.manifest.value("started_utc", "")},
                                         {"finished_utc", x.manifest.value("finished_utc", "")}});
    }
  }
  return manifest;
}

// The cases in suite order into the merged run (each with its
// configuration from its shard), its rows, the manifest's cases and seeds.
std::vector<RunRecord> write_merged_cases(RunDirectory& run, const std::vector<ShardInput>& in,
                                          const ShardCases& sc, nlohmann::ordered_json& manifest,
                                          MergeOutcome& out) {
  std::map<std::string, nlohmann::ordered_json> case_entry;
  for (const auto& x : in) {
    for (const auto& c : x.manifest["cases"]) case_entry.emplace(c.value("case_id", ""), c);
  }
  manifest["cases"] = nlohmann::ordered_json::array();
  std::set<int64_t> seeds;
  std::vector<RunRecord> rows;
  for (const auto& id : sc.suite_cases) {
    auto e = case_entry.find(id);
    if (e != case_entry.end()) {
      manifest["cases"].push_back(e->second);
      if (e->second.contains("config")) {
        const auto& seed = at_path(e->second["config"], "workload.seed");
        if (seed.is_number_integer()) seeds.insert(seed.get<int64_t>());
      }
    }
    auto f = sc.found.find(id);
    if (f == sc.found.end()) continue;
    run.write_case(id, *f->second);
    out.failed += f->second->value("status", "") != "ok";
    for (const auto& r : (*f->second)["rows"]) {
      RunRecord rec;
      rec.fields = r;
      rows.push_back(std::move(rec));
    }
  }
  manifest["seeds"] = nlohmann::ordered_json::array();
  for (int64_t s : seeds) manifest["seeds"].push_back(s);
  return rows;
}

}  // namespace

MergeOutcome merge_shards(const MergeOptions& opt, const Registry& registry) {
  if (opt.inputs.empty()) {
    throw Error("--merge: expected the run folders of a suite's shards, found none");
  }
  const std::vector<ShardInput> in = read_shards(opt);
  check_shards_agree(in);
  const auto& m0 = in[0].manifest;
  const int64_t count = m0["shard"].value("count", int64_t(0));
  std::vector<int64_t> absent_shards;
  const std::map<int64_t, fs::path> by_index = index_shards(in, opt, count, &absent_shards);
  const ShardCases sc = collect_cases(in, registry);
  if (!opt.partial) refuse_incomplete(sc, absent_shards, count);

  const fs::path dir = merge_dir(opt, m0);
  std::error_code dir_ec;
  const bool existed = fs::exists(dir, dir_ec);
  RunDirectory run(dir);
  run.lock(fmt::format("run_suite --merge pid {}", ::getpid()));
  if (run.has_manifest()) {
    throw Error(
        fmt::format("--merge: {}: expected a new or empty folder, found a run", dir.string()));
  }
  RemoveUnlessKept cleanup{dir, existed};  // only once the folder is this merge's
  run.prepare();
  nlohmann::ordered_json manifest = merged_manifest(opt, in, by_index, dir);
  MergeOutcome out;
  const std::vector<RunRecord> rows = write_merged_cases(run, in, sc, manifest, out);
  const bool partial = !sc.missing.empty() || !sc.dup.empty();
  manifest["status"] = partial ? "partial" : "complete";
  if (partial) {
    manifest["missing_cases"] = sc.missing;
    manifest["absent_shards"] = absent_shards;
  }
  manifest["finished_utc"] = utc_now_iso();
  manifest["counts"] = {{"cases", sc.suite_cases.size()},
                        {"finished", sc.suite_cases.size() - sc.missing.size()},
                        {"failed", out.failed}};
  run.write_runs(result_columns(), rows);
  run.write_manifest(manifest);
  cleanup.keep = true;

  out.run_dir = dir;
  out.cases = int64_t(sc.suite_cases.size());
  out.missing = int64_t(sc.missing.size());
  out.duplicates = int64_t(sc.dup.size());
  if (!opt.quiet) {
    if (!rows.empty()) fmt::print("{}", summary_table(rows));
    fmt::print(
        "\nmerged: {} ({} shard folder{}, {} of {} cases{}{})\n", dir.string(), in.size(),
        in.size() == 1 ? "" : "s", sc.suite_cases.size() - sc.missing.size(), sc.suite_cases.size(),
        out.failed ? fmt::format(", {} failed", out.failed) : "",
        partial ? fmt::format("; PARTIAL: {} missing ({})", sc.missing.size(), listed(sc.missing))
                : "");
  }
  out.exit_code = partial ? 1 : out.failed > 0 ? 1 : 0;
  return out;
}

}  // namespace moebench
