// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// A composite suite: a [suite] and the experiment files it includes, each
// expanded once however often it is included (experiment.cc expands one),
// their cases merged by id; and load_experiment, which reads either kind.
#include <algorithm>
#include <map>

#include "core/experiment/expand.h"
#include "core/util/paths.h"

namespace moebench {
namespace fs = std::filesystem;
using cfg::Value;

namespace {

// Included files, each read and expanded once however often it is included
// (five 4 KB files each including the next 50 times once meant 50^5 = 312
// million expansions), keyed by their normalised path.
struct IncludeMemo {
  std::map<std::string, Value> roots;        // parsed TOML
  std::map<std::string, uint64_t> below;     // included-file instances below a composite
  std::map<std::string, Experiment> loaded;  // expanded parts and composites
};

constexpr int kMaxIncludeDepth = 4;

fs::path include_path(const Value& x, const fs::path& base) {
  return fs::path(x.as_string()).is_absolute() ? fs::path(x.as_string()) : base / x.as_string();
}

std::string memo_key(const fs::path& p) {
  return fs::absolute(p).lexically_normal().string();
}

const Value& memo_root(const fs::path& part, IncludeMemo& memo) {
  const std::string key = memo_key(part);
  auto it = memo.roots.find(key);
  if (it == memo.roots.end()) it = memo.roots.emplace(key, cfg::load_toml_file(part)).first;
  return it->second;
}

// Included-file instances reachable from `root` (each include of a file
// counts, with everything it includes), saturating at `cap`: counted before
// anything is expanded, from the parsed files alone. Malformed entries are
// skipped here; loading reports them.
uint64_t count_includes(const Value& root, const fs::path& base, int depth, uint64_t cap,
                        IncludeMemo& memo) {
  const Value* inc = root.find("include");
  if (!inc || !inc->is_array() || depth > kMaxIncludeDepth) return 0;
  uint64_t n = 0;
  for (const Value& x : inc->items()) {
    if (!x.is_string()) continue;
    const fs::path part = include_path(x, base);
    std::error_code ec;
    if (!fs::is_regular_file(part, ec)) continue;
    const std::string key = memo_key(part);
    uint64_t sub = 0;
    if (auto it = memo.below.find(key); it != memo.below.end()) {
      sub = it->second;
    } else {
      const Value& proot = memo_root(part, memo);
      fs::path pbase = part.parent_path();
      if (pbase.empty()) pbase = ".";
      memo.below[key] = 0;  // a cycle counts nothing here; the depth limit refuses it on load
      sub = count_includes(proot, pbase, depth + 1, cap, memo);
      memo.below[key] = sub;
    }
    n = std::min(cap, n + 1 + sub);
  }
  return n;
}

Experiment load_composite(const Value& root, const fs::path& file, const fs::path& base,
                          const ConfigPaths& paths, const ComponentCatalog* catalog, int depth,
                          uint64_t max_cases, IncludeMemo& memo) {
  for (const auto& e : root.entries()) {
    if (e.key != "suite" && e.key != "include") {
      throw ConfigError(
          e.key_where, e.key,
          "only [suite] and include in a composite suite (each part has its own model, hardware, "
          "workload and strategies)",
          "key '" + e.key + "'");
    }
  }
  if (depth > kMaxIncludeDepth) {
    throw ConfigError(root.where(), "include",
                      fmt::format("at most {} levels of included suites", kMaxIncludeDepth),
                      "deeper nesting (a file that includes itself?)");
  }
  Experiment ex;
  ex.file = file;
  ex.suite.name = file.stem().string();
  if (const Value* s = root.find("suite")) parse_suite(*s, ex.suite);
  check_suite_name(root, ex.suite.name);
  const Value& inc = *root.find("include");
  if (!inc.is_array() || inc.items().empty()) {
    throw ConfigError(inc.where(), "include", "a non-empty array of experiment files",
                      inc.describe());
  }
  if (depth == 0) {
    // Before anything is expanded: every include of a file counts, with all
    // it includes, against the same cap as cases.
    const uint64_t files = count_includes(root, base, 0, max_cases + 1, memo);
    if (files > max_cases) {
      throw ConfigError(
          inc.where(), "include",
          fmt::format("at most {} included experiment files, counting every include of a file and "
                      "what it includes (run_suite --max-cases raises the limit)",
                      max_cases),
          fmt::format("more than {}", max_cases));
    }
  }
  std::map<std::string, size_t> by_id;
  uint64_t instances = 0;  // cases with every include counted, before duplicates are merged
  for (size_t i = 0; i < inc.items().size(); ++i) {
    const Value& x = inc.items()[i];
    if (!x.is_string()) {
      throw ConfigError(x.where(), fmt::format("include[{}]", i),
                        "an experiment file path (string)", x.describe());
    }
    const fs::path part = include_path(x, base);
    std::error_code ec;
    if (!fs::is_regular_file(part, ec)) {
      throw ConfigError(x.where(), fmt::format("include[{}]", i),
                        "an existing experiment file (a regular file)",
                        file_kind(part) + " at '" + part.string() + "'");
    }
    const std::string key = memo_key(part);
    auto it_loaded = memo.loaded.find(key);
    if (it_loaded == memo.loaded.end()) {
      const Value proot = memo_root(part, memo);  // a copy: the memo may grow while it is in use
      fs::path pbase = part.parent_path();
      if (pbase.empty()) pbase = ".";
      Experiment sub =
          proot.find("include")
              ? load_composite(proot, part, pbase, paths, catalog, depth + 1, max_cases, memo)
              : expand(proot, part, pbase, paths, catalog, max_cases);
      it_loaded = memo.loaded.emplace(key, std::move(sub)).first;
    }
    const Experiment& sub = it_loaded->second;
    instances += sub.cases.size();
    if (instances > max_cases) {
      throw ConfigError(
          x.where(), fmt::format("include[{}]", i),
          fmt::format("at most {} cases in one composite suite, counting every include of a part "
                      "(run_suite --max-cases)",
                      max_cases),
          fmt::format("{} cases up to and including '{}'", instances, part.string()));
    }
    for (const Case& c : sub.cases) {
      auto it = by_id.find(c.id);
      if (it != by_id.end()) {
        auto& parts = ex.cases[it->second].parts;
        for (const auto& p : c.parts) {
          if (std::find(parts.begin(), parts.end(), p) == parts.end()) parts.push_back(p);
        }
        continue;
      }
      Case copy = c;
      copy.index = ex.cases.size();
      by_id[copy.id] = copy.index;
      ex.cases.push_back(std::move(copy));
    }
  }
  return ex;
}

}  // namespace

Experiment load_experiment(const fs::path& file, const ConfigPaths& paths,
                           const ComponentCatalog* catalog, uint64_t max_cases) {
  const Value root = cfg::load_toml_file(file);
  fs::path base = file.parent_path();
  if (base.empty()) base = ".";
  if (root.find("include")) {
    IncludeMemo memo;
    return load_composite(root, file, base, paths, catalog, 0, max_cases, memo);
  }
  return expand(root, file, base, paths, catalog, max_cases);
}

Experiment load_experiment_text(const std::string& text, const std::string& name,
                                const fs::path& base_dir, const ConfigPaths& paths,
                                const ComponentCatalog* catalog, uint64_t max_cases) {
  const Value root = cfg::parse_toml(text, name);
  return expand(root, fs::path(name), base_dir, paths, catalog, max_cases);
}

}  // namespace moebench
