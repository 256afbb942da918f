// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "harness/suite/merge_checks.h"

#include <fmt/format.h>

#include "core/experiment/experiment.h"
#include "core/results/records.h"
#include "core/util/atomic_file.h"
#include "core/util/error.h"
#include "core/util/sha256.h"
#include "core/util/strings.h"
#include "harness/suite/suite_runner.h"

namespace moebench {
namespace fs = std::filesystem;
using J = nlohmann::ordered_json;

namespace {

enum class Kind { kString, kInteger, kBoolean, kObject, kArray };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kString:
      return "a string";
    case Kind::kInteger:
      return "an integer";
    case Kind::kBoolean:
      return "true or false";
    case Kind::kObject:
      return "an object";
    case Kind::kArray:
      return "an array";
  }
  return "?";
}

bool is(const J& v, Kind k) {
  switch (k) {
    case Kind::kString:
      return v.is_string();
    case Kind::kInteger:
      return v.is_number_integer();
    case Kind::kBoolean:
      return v.is_boolean();
    case Kind::kObject:
      return v.is_object();
    case Kind::kArray:
      return v.is_array();
  }
  return false;
}

// The value at `path` ("a.b") of `root`, checked to be of kind `k`.
const J& need(const J& root, const std::string& path, Kind k, const fs::path& file) {
  const J* p = &root;
  for (const std::string& part : split(path, '.')) {
    if (!p->is_object() || !p->contains(part)) {
      throw Error(
          fmt::format("{}: key '{}': expected {}, found none (not a run_suite file, or "
                      "edited?)",
                      file.string(), path, kind_name(k)));
    }
    p = &(*p)[part];
  }
  if (!is(*p, k)) {
    throw Error(fmt::format("{}: key '{}': expected {}, found {} {}", file.string(), path,
                            kind_name(k), p->type_name(), p->dump().substr(0, 80)));
  }
  return *p;
}

}  // namespace

void check_shard_manifest(const J& m, const fs::path& file) {
  if (!m.is_object()) {
    throw Error(fmt::format("{}: expected a JSON object, found {}", file.string(), m.type_name()));
  }
  for (const char* key : {"suite.name", "suite.file", "suite.file_sha256", "suite.backend",
                          "experiment_hash", "filter", "status", "run_id"})
    need(m, key, Kind::kString, file);
  need(m, "schema_version", Kind::kInteger, file);
  need(m, "provenance", Kind::kObject, file);
  for (const char* key : {"shard.index", "shard.count"}) need(m, key, Kind::kInteger, file);
  const J& ids = need(m, "shard.suite_cases", Kind::kArray, file);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i].is_string()) {
      throw Error(
          fmt::format("{}: key 'shard.suite_cases[{}]': expected a string (a case id), "
                      "found {} {}",
                      file.string(), i, ids[i].type_name(), ids[i].dump().substr(0, 80)));
    }
  }
  const J& cases = need(m, "cases", Kind::kArray, file);
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string at = fmt::format("cases[{}]", i);
    if (!cases[i].is_object()) {
      throw Error(fmt::format("{}: key '{}': expected an object, found {}", file.string(), at,
                              cases[i].type_name()));
    }
    J wrapped;
    wrapped[at] = cases[i];
    need(wrapped, at + ".case_id", Kind::kString, file);
    need(wrapped, at + ".config", Kind::kObject, file);
  }
}

void check_stored_case(const std::string& id, const J& c, const fs::path& file) {
  if (!c.is_object()) {
    throw Error(fmt::format("{}: expected a JSON object, found {}", file.string(), c.type_name()));
  }
  if (need(c, "case_id", Kind::kString, file).get<std::string>() != id) {
    throw Error(fmt::format("{}: key 'case_id': expected '{}' (the file's name), found '{}'",
                            file.string(), id, c["case_id"].get<std::string>()));
  }
  need(c, "status", Kind::kString, file);
  const J& rows = need(c, "rows", Kind::kArray, file);
  if (rows.empty()) {
    throw Error(
        fmt::format("{}: key 'rows': expected at least one row, found none", file.string()));
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string at = fmt::format("rows[{}]", i);
    if (!rows[i].is_object()) {
      throw Error(fmt::format("{}: key '{}': expected an object, found {}", file.string(), at,
                              rows[i].type_name()));
    }
    if (!rows[i].contains("case_id") || rows[i]["case_id"] != id) {
      throw Error(fmt::format("{}: key '{}.case_id': expected '{}', found {}", file.string(), at,
                              id,
                              rows[i].contains("case_id") ? rows[i]["case_id"].dump() : "none"));
    }
  }
}

namespace {

// A stored case's rows against the case the suite file gives: its identity
// and every configuration column (a row whose strategy or settings were
// edited is not the case's result).
void check_rows_against_case(const Case& c, const J& stored, const fs::path& file) {
  const J flat = flatten(c.config);
  for (const J& row : stored["rows"]) {
    const std::pair<const char*, J> identity[] = {{"strategy", J(c.strategy.name)},
                                                  {"model", J(c.model.name)},
                                                  {"hardware", J(c.hardware.name)},
                                                  {"backend", J(c.backend)},
                                                  {"case_index", J(int64_t(c.index))}};
    for (const auto& [key, want] : identity) {
      if (!row.contains(key) || row[key] != want) {
        throw Error(fmt::format(
            "{}: row of case {}: key '{}': expected {} (the suite file's case), found {}",
            file.string(), c.id, key, want.dump(), row.contains(key) ? row[key].dump() : "none"));
      }
    }
    for (auto it = flat.begin(); it != flat.end(); ++it) {
      if (!row.contains(it.key()) || row[it.key()] != it.value()) {
        throw Error(fmt::format(
            "{}: row of case {}: key '{}': expected {} (the suite file's case), found {}",
            file.string(), c.id, it.key(), it.value().dump().substr(0, 80),
            row.contains(it.key()) ? row[it.key()].dump().substr(0, 80) : "none"));
      }
    }
  }
}

}  // namespace

void check_against_suite(const J& m, const fs::path& manifest_file,
                         const std::map<std::string, std::pair<const J*, fs::path>>& found,
                         const Registry& registry) {
  const fs::path suite = m["suite"]["file"].get<std::string>();
  std::string text;
  try {
    text = read_file(suite);
  } catch (const Error& e) {
    throw Error(fmt::format(
        "--merge: {}: key 'suite.file': expected the suite file the shards ran, to recompute its "
        "cases, found: {} (run --merge where the shards' path leads to it)",
        manifest_file.string(), e.what()));
  }
  if (sha256_hex(text) != m["suite"]["file_sha256"].get<std::string>()) {
    throw Error(fmt::format(
        "--merge: {}: key 'suite.file_sha256': expected the hash of {} as the shards ran it, found "
        "that the file changed since; nothing was written",
        manifest_file.string(), suite.string()));
  }
  const Experiment ex = load_experiment(suite, ConfigPaths::defaults(), &registry);
  const std::string filter = m["filter"].get<std::string>();
  std::vector<std::string> ids;
  std::map<std::string, const Case*> by_id;
  for (const Case& c : ex.cases) {
    if (!case_matches(c, filter)) continue;
    ids.push_back(c.id);
    by_id[c.id] = &c;
  }
  const std::vector<std::string> listed = m["shard"]["suite_cases"].get<std::vector<std::string>>();
  if (listed != ids) {
    std::vector<std::string> absent, extra;
    for (const auto& id : ids)
      if (std::find(listed.begin(), listed.end(), id) == listed.end()) absent.push_back(id);
    for (const auto& id : listed)
      if (!by_id.count(id)) extra.push_back(id);
    throw Error(fmt::format(
        "--merge: {}: key 'shard.suite_cases': expected the {} cases of {}{} as this build "
        "expands them, found a list of {}{}{}{}; nothing was written",
        manifest_file.string(), ids.size(), suite.string(),
        filter.empty() ? "" : " (filter '" + filter + "')", listed.size(),
        absent.empty() ? "" : fmt::format(" without {}", join(absent, ", ")),
        extra.empty() ? ""
                      : fmt::format(" with {} that the suite does not have", join(extra, ", ")),
        absent.empty() && extra.empty() ? " in another order" : ""));
  }
  if (experiment_hash(ex) != m["experiment_hash"].get<std::string>()) {
    throw Error(fmt::format(
        "--merge: {}: key 'experiment_hash': expected {} (the suite file's cases), found {}; "
        "nothing was written",
        manifest_file.string(), experiment_hash(ex), m["experiment_hash"].get<std::string>()));
  }
  for (const auto& [id, where] : found) {
    const auto it = by_id.find(id);
    if (it == by_id.end()) continue;  // a foreign case: named by the caller
    check_rows_against_case(*it->second, *where.first, where.second / "cases" / (id + ".json"));
  }
}

}  // namespace moebench
