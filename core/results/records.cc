// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/results/records.h"
#include "core/util/json_text.h"

#include <unordered_set>

namespace moebench {

const std::vector<Column>& identity_columns() {
  static const std::vector<Column> c = {
      {"suite", "Suite name."},
      {"run_id", "Run directory name (UTC start time and suite content hash)."},
      {"case_id", "Hash of the case's fully resolved configuration."},
      {"case_index", "Position of the case in the suite's expansion order."},
      {"repetition", "Repetition number (warm-up repetitions are not recorded)."},
      {"status", "\"ok\", or \"error\" with the message in `error`."},
      {"error", "Error message of a failed case."},
      {"warnings",
       "Conditions a case ran under that change what it measures (e.g. a trace with fewer router "
       "probabilities than a component asked for), '; '-separated; empty when none."},
      {"backend", "\"sim\" (simulated clock) or \"real\" (measured)."},
      {"model", "Model preset name."},
      {"hardware", "Hardware profile name."},
      {"strategy", "Strategy name."},
      {"axes", "Sweep coordinates of this case, \"key=value; ...\"."},
      {"parts",
       "Experiment files (suite names) that define this case, ';'-separated (composite suites)."},
      {"preset_files",
       "The preset files the case's model, hardware and strategy came from, \"kind/name file "
       "sha256 <first 12>\", '; '-separated (the manifest has whole hashes)."},
      {"utc_time", "When the repetition finished (ISO 8601, UTC)."},
      {"wall_time_s", "Host wall-clock time the repetition took to run."},
      {"result_of",
       "Empty when this case was simulated; otherwise the id of the case of this run whose "
       "simulation is identical (the same model, workload, strategy and effective hardware; "
       "simulation_key) and whose numbers, host times included, the row copies."},
  };
  return c;
}

namespace {
void flatten_into(const nlohmann::ordered_json& j, const std::string& prefix,
                  nlohmann::ordered_json& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      flatten_into(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
  } else {
    out[prefix] = j;
  }
}

std::string csv_field(const nlohmann::ordered_json& v) {
  std::string s;
  if (v.is_null()) return s;
  if (v.is_string()) {
    s = v.get<std::string>();
  } else {
    s = json_text(v);
  }
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  q += '"';
  return q;
}
}  // namespace

nlohmann::ordered_json flatten(const nlohmann::ordered_json& j, const std::string& prefix) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  flatten_into(j, prefix, out);
  return out;
}

std::vector<std::string> column_order(const std::vector<Column>& fixed,
                                      const std::vector<RunRecord>& rows) {
  std::vector<std::string> cols;
  std::unordered_set<std::string> seen;
  for (const auto& c : fixed) {
    if (seen.insert(c.name).second) cols.push_back(c.name);
  }
  for (const auto& r : rows) {
    for (auto it = r.fields.begin(); it != r.fields.end(); ++it) {
      if (seen.insert(it.key()).second) cols.push_back(it.key());
    }
  }
  return cols;
}

std::string to_jsonl(const std::vector<std::string>& columns, const std::vector<RunRecord>& rows) {
  std::string out;
  for (const auto& r : rows) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (const auto& c : columns) {
      auto it = r.fields.find(c);
      o[c] = it == r.fields.end() ? nlohmann::ordered_json(nullptr) : *it;
    }
    out += json_text(o);
    out += '\n';
  }
  return out;
}

std::string to_csv(const std::vector<std::string>& columns, const std::vector<RunRecord>& rows) {
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i) out += ',';
    out += csv_field(columns[i]);
  }
  out += '\n';
  for (const auto& r : rows) {
    for (size_t i = 0; i < columns.size(); ++i) {
      if (i) out += ',';
      auto it = r.fields.find(columns[i]);
      if (it != r.fields.end()) out += csv_field(*it);
    }
    out += '\n';
  }
  return out;
}

}  // namespace moebench
