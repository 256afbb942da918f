// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/convert/jsonl_line.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/trace/safetensors.h"
#include "core/util/error.h"
#include "core/util/strings.h"
#include "workloads/convert/jsonl_convert.h"

namespace moebench::jsonl {

const std::map<std::string, std::vector<std::string>>& default_keys() {
  static const std::map<std::string, std::vector<std::string>> k = {
      {"seq", {"seq", "sequence"}}, {"token", {"token"}},     {"layer", {"layer"}},
      {"experts", {"experts"}},     {"weights", {"weights"}}, {"probs", {"probs"}},
      {"logits", {"logits"}},       {"prompt", {"prompt"}}};
  return k;
}

Line::Line(const std::map<std::string, std::string>& fields) {
  for (const auto& [field, key] : fields) {
    if (!keys_.count(field)) {
      throw Error(fmt::format("--field {}={}: expected a field among {}, found '{}'", field, key,
                              join(convert_field_names(), ", "), field));
    }
    if (key.empty())
      throw Error(
          fmt::format("--field {}=: expected the log's key name, found an empty one", field));
    keys_[field] = {key};
  }
}

void Line::bad(const std::string& key, const std::string& expected,
               const std::string& found) const {
  throw Error(fmt::format("{}:{}: {}expected {}, found {}", file_, line_,
                          key.empty() ? "" : "key '" + key + "': ", expected,
                          found.substr(0, 200)));
}

std::pair<const Json*, std::string> Line::find(const Json& j, const std::string& field) const {
  for (const auto& key : keys_.at(field)) {
    if (auto it = j.find(key); it != j.end()) return {&*it, key};
  }
  return {nullptr, keys_.at(field).front()};
}

int64_t Line::get_int(const Json& j, const std::string& field, int64_t lo, int64_t hi) const {
  auto [v, key] = find(j, field);
  if (!v)
    bad(key,
        fmt::format("an integer (field '{}'; map another key with --field {}=KEY)", field, field),
        "no value");
  if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() >= hi) {
    bad(key, fmt::format("an integer in [{}, {})", lo, hi), v->dump());
  }
  return v->get<int64_t>();
}

std::vector<float> Line::numbers(const Json* v, const std::string& key, bool non_negative) const {
  std::vector<float> out;
  if (!v->is_array()) bad(key, "an array of numbers", v->dump());
  for (const auto& x : *v) {
    if (!x.is_number() || !std::isfinite(x.get<double>()) ||
        (non_negative && x.get<double>() < 0)) {
      bad(key, non_negative ? "finite non-negative numbers" : "finite numbers", x.dump());
    }
    // Stored as 32-bit floats: 1e39 would become inf, which the trace
    // reader refuses (the error is the log's line, not a token's index).
    if (!std::isfinite(float(x.get<double>()))) {
      bad(key, "numbers a 32-bit float holds (magnitude below 3.4e38)", x.dump());
    }
    out.push_back(float(x.get<double>()));
  }
  return out;
}

// Probabilities in [0, 1] as stored (half precision: 1.0004 is 1, 1.001
// is not), every value the trace reader would refuse refused at its line.
void Line::check_probs(const std::vector<float>& p, const std::string& key, const Json* v) const {
  for (float x : p) {
    if (st::float_to_half(x) > 0x3c00u)
      bad(key, "probabilities in [0, 1]", fmt::format("{} in {}", x, v->dump()));
  }
}

// At least one positive combine weight as stored: all 0 (or 1e-46, which
// a float rounds to 0) is a layer that contributes nothing.
void Line::check_weights(const std::vector<float>& w, const std::string& key, const Json* v) const {
  if (std::none_of(w.begin(), w.end(), [](float x) { return x > 0.0f; })) {
    bad(key,
        "at least one positive combine weight among the top-k (as a 32-bit float: values "
        "below 1.4e-45 are 0)",
        v ? v->dump() : std::string("all zero"));
  }
}

}  // namespace moebench::jsonl
