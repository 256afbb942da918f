// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// A configuration tree that remembers where every key and value came from.
//
// moebench reads TOML with toml++, then converts the document into this tree
// because every later step (merging a preset with inline overrides, expanding
// sweep axes, validating against a schema) must still be able to say
// "file:line:col: key 'model.top_k': expected ..., found ..." about the
// original text. toml++ drops source positions when nodes are copied, so
// merging toml++ tables directly would lose them.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/util/error.h"

namespace moebench::cfg {

enum class Kind { kBool, kInt, kFloat, kString, kArray, kTable };

class Value {
 public:
  struct Entry;  // a key of a table, with its own position, and its value

  Value();  // an empty table
  static Value boolean(bool b, Where w = {});
  static Value integer(int64_t i, Where w = {});
  static Value number(double d, Where w = {});
  static Value string(std::string s, Where w = {});
  static Value array(std::vector<Value> items, Where w = {});
  static Value table(Where w = {});

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_table() const { return kind_ == Kind::kTable; }

  // REQUIRES: the matching kind (is_number() for as_number()).
  bool as_bool() const { return std::get<bool>(scalar_); }
  int64_t as_int() const { return std::get<int64_t>(scalar_); }
  double as_number() const;
  const std::string& as_string() const { return std::get<std::string>(scalar_); }

  // Arrays. REQUIRES: is_array().
  const std::vector<Value>& items() const { return items_; }
  std::vector<Value>& items() { return items_; }

  // Tables keep their keys in file order. REQUIRES: is_table().
  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<Entry>& entries() { return entries_; }
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  const Entry* find_entry(std::string_view key) const;
  // Replaces the value of `key` (keeping its position in the key order) or appends it.
  void set(std::string key, Value v, Where key_where = {});
  bool erase(std::string_view key);

  // Where the value itself starts (for a table: its [header] or '{').
  const Where& where() const { return where_; }
  void set_where(Where w) { where_ = std::move(w); }

  // "integer", "floating-point number", "string", "boolean", "array", "table".
  std::string type_name() const;
  // How an error message shows this value: `integer -5`, `string "fp8"`,
  // `array of 3 items`, `table`.
  std::string describe() const;

  nlohmann::ordered_json to_json() const;
  static Value from_json(const nlohmann::json& j, const Where& where);

 private:
  Kind kind_ = Kind::kTable;
  std::variant<std::monostate, bool, int64_t, double, std::string> scalar_;
  std::vector<Value> items_;
  std::vector<Entry> entries_;
  Where where_;
};

struct Value::Entry {
  std::string key;
  Where key_where;  // where the key is written
  Value value;
};

// The deepest nesting of tables and arrays a config may have (a dotted key
// a.b.c counts one level per part); deeper input is a ConfigError.
inline constexpr int kMaxNesting = 64;

// Parses a TOML file. A missing file or a syntax error is a ConfigError
// naming the file (and line/column for syntax errors).
Value load_toml_file(const std::filesystem::path& path);
// Parses TOML text; `source_name` is used in positions and messages.
Value parse_toml(std::string_view text, const std::string& source_name);

// Deep merge: every key of `overlay` replaces the same key of `base`, except
// that two tables merge key by key. Positions travel with the values, so an
// error about an overridden key points at the override.
void merge_into(Value& base, const Value& overlay);

// Joins a dotted key path: join_key("model", "top_k") == "model.top_k".
std::string join_key(std::string_view prefix, std::string_view key);

}  // namespace moebench::cfg
