// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The conversion of JSON-lines routing logs (jsonl_convert.h), its first
// part: what one line of a log says, by canonical field. jsonl::Line keeps
// the field-to-key mapping (the defaults and --field) and where the line is
// (file and line number), and checks every value it hands out, so that an
// error names the file, the line and the key.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace moebench::jsonl {

using Json = nlohmann::ordered_json;

// Each canonical field's default keys, in the order they are looked for.
const std::map<std::string, std::vector<std::string>>& default_keys();

class Line {
 public:
  // `fields`: --field NAME=KEY; throws moebench::Error for an unknown field
  // or an empty key.
  explicit Line(const std::map<std::string, std::string>& fields);

  // The line the next values come from.
  void at(const std::string& file, int64_t line) {
    file_ = file;
    line_ = line;
  }
  const std::string& file() const { return file_; }
  int64_t line() const { return line_; }

  // Throws moebench::Error "file:line: key 'key': expected ..., found ...".
  [[noreturn]] void bad(const std::string& key, const std::string& expected,
                        const std::string& found) const;
  // The value of canonical field `field` in `j` and the key it was found
  // under (null and the field's first key when absent).
  std::pair<const Json*, std::string> find(const Json& j, const std::string& field) const;
  // The keys field `field` is looked for under.
  const std::vector<std::string>& keys(const std::string& field) const { return keys_.at(field); }
  // An integer field in [lo, hi).
  int64_t get_int(const Json& j, const std::string& field, int64_t lo, int64_t hi) const;
  // An array of finite numbers a 32-bit float holds (non-negative if asked).
  std::vector<float> numbers(const Json* v, const std::string& key, bool non_negative) const;
  // Probabilities in [0, 1] as the trace stores them (half precision).
  void check_probs(const std::vector<float>& p, const std::string& key, const Json* v) const;
  // At least one positive combine weight as a 32-bit float.
  void check_weights(const std::vector<float>& w, const std::string& key, const Json* v) const;

 private:
  std::map<std::string, std::vector<std::string>> keys_ = default_keys();
  std::string file_;
  int64_t line_ = 0;
};

}  // namespace moebench::jsonl
