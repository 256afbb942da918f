// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Result rows and the two writers (runs.jsonl, runs.csv) that share one
// column list, so the files can never disagree about what a row holds.
//
// Row layout: identity columns (suite, run, case, repetition, status, ...),
// then metric columns (the metric field table, units in every name), then
// every resolved parameter as a dotted key ("model.top_k",
// "strategy.cache.params.alpha").

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moebench {

struct Column {
  std::string name;  // units in the name: ttft_ms, h2d_bytes, expert_hit_rate_frac
  std::string doc;
};

struct RunRecord {
  nlohmann::ordered_json fields =
      nlohmann::ordered_json::object();  // column -> value (null allowed)
};

// The identity columns every row starts with.
const std::vector<Column>& identity_columns();

// {"a": {"b": 1}} -> {"a.b": 1}. Arrays are kept as values.
nlohmann::ordered_json flatten(const nlohmann::ordered_json& j, const std::string& prefix = "");

// `fixed` columns first (in order), then every other key of `rows` in order
// of first appearance.
std::vector<std::string> column_order(const std::vector<Column>& fixed,
                                      const std::vector<RunRecord>& rows);

// One JSON object per line, keys in `columns` order, missing values null.
std::string to_jsonl(const std::vector<std::string>& columns, const std::vector<RunRecord>& rows);
// RFC 4180 CSV with a header row; null is an empty field, arrays/objects are
// JSON text, numbers are written exactly as in the JSONL file.
std::string to_csv(const std::vector<std::string>& columns, const std::vector<RunRecord>& rows);

}  // namespace moebench
