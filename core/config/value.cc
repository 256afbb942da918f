// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/config/value.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "core/util/atomic_file.h"
#include "core/util/paths.h"

namespace moebench::cfg {

Value::Value() : kind_(Kind::kTable) {}

Value Value::boolean(bool b, Where w) {
  Value v;
  v.kind_ = Kind::kBool;
  v.scalar_ = b;
  v.where_ = std::move(w);
  return v;
}
Value Value::integer(int64_t i, Where w) {
  Value v;
  v.kind_ = Kind::kInt;
  v.scalar_ = i;
  v.where_ = std::move(w);
  return v;
}
Value Value::number(double d, Where w) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.scalar_ = d;
  v.where_ = std::move(w);
  return v;
}
Value Value::string(std::string s, Where w) {
  Value v;
  v.kind_ = Kind::kString;
  v.scalar_ = std::move(s);
  v.where_ = std::move(w);
  return v;
}
Value Value::array(std::vector<Value> items, Where w) {
  Value v;
  v.kind_ = Kind::kArray;
  v.items_ = std::move(items);
  v.where_ = std::move(w);
  return v;
}
Value Value::table(Where w) {
  Value v;
  v.where_ = std::move(w);
  return v;
}

double Value::as_number() const {
  return is_int() ? static_cast<double>(as_int()) : std::get<double>(scalar_);
}

const Value* Value::find(std::string_view key) const {
  for (const auto& e : entries_) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

Value* Value::find(std::string_view key) {
  for (auto& e : entries_) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

const Value::Entry* Value::find_entry(std::string_view key) const {
  for (const auto& e : entries_) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

void Value::set(std::string key, Value v, Where key_where) {
  for (auto& e : entries_) {
    if (e.key == key) {
      e.value = std::move(v);
      if (!key_where.file.empty()) e.key_where = std::move(key_where);
      return;
    }
  }
  if (key_where.file.empty()) key_where = v.where();
  entries_.push_back(Entry{std::move(key), std::move(key_where), std::move(v)});
}

bool Value::erase(std::string_view key) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key == key) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kBool:
      return "boolean";
    case Kind::kInt:
      return "integer";
    case Kind::kFloat:
      return "floating-point number";
    case Kind::kString:
      return "string";
    case Kind::kArray:
      return "array";
    case Kind::kTable:
      return "table";
  }
  return "?";
}

std::string Value::describe() const {
  switch (kind_) {
    case Kind::kBool:
      return fmt::format("boolean {}", as_bool() ? "true" : "false");
    case Kind::kInt:
      return fmt::format("integer {}", as_int());
    case Kind::kFloat:
      return fmt::format("number {}", std::get<double>(scalar_));
    case Kind::kString:
      return fmt::format("string \"{}\"", as_string());
    case Kind::kArray:
      return fmt::format("array of {} item{}", items_.size(), items_.size() == 1 ? "" : "s");
    case Kind::kTable:
      return "table";
  }
  return "?";
}

nlohmann::ordered_json Value::to_json() const {
  switch (kind_) {
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int();
    case Kind::kFloat:
      return std::get<double>(scalar_);
    case Kind::kString:
      return as_string();
    case Kind::kArray: {
      auto j = nlohmann::ordered_json::array();
      for (const auto& v : items_) j.push_back(v.to_json());
      return j;
    }
    case Kind::kTable: {
      auto j = nlohmann::ordered_json::object();
      for (const auto& e : entries_) j[e.key] = e.value.to_json();
      return j;
    }
  }
  return nullptr;
}

Value Value::from_json(const nlohmann::json& j, const Where& where) {
  if (j.is_boolean()) return boolean(j.get<bool>(), where);
  if (j.is_number_integer()) return integer(j.get<int64_t>(), where);
  if (j.is_number()) return number(j.get<double>(), where);
  if (j.is_string()) return string(j.get<std::string>(), where);
  if (j.is_array()) {
    std::vector<Value> items;
    for (const auto& x : j) items.push_back(from_json(x, where));
    return array(std::move(items), where);
  }
  Value t = table(where);
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      t.set(it.key(), from_json(it.value(), where), where);
  }
  return t;
}

namespace {

Where where_of(const toml::source_region& r, const std::string& file) {
  return Where{file, static_cast<int>(r.begin.line), static_cast<int>(r.begin.column)};
}

Value convert(const toml::node& n, const std::string& file, const std::string& key, int depth) {
  const Where w = where_of(n.source(), file);
  // Every later pass over a Value recurses. check_nesting_before_parse's
  // bound is conservative, so this exact check is a second line of defence.
  if (depth > kMaxNesting) {
    throw ConfigError(w, key,
                      fmt::format("at most {} levels of nested tables and arrays", kMaxNesting),
                      "deeper nesting");
  }
  switch (n.type()) {
    case toml::node_type::boolean:
      return Value::boolean(*n.value<bool>(), w);
    case toml::node_type::integer:
      return Value::integer(*n.value<int64_t>(), w);
    case toml::node_type::floating_point:
      return Value::number(*n.value<double>(), w);
    case toml::node_type::string:
      return Value::string(*n.value<std::string>(), w);
    case toml::node_type::array: {
      std::vector<Value> items;
      for (const auto& x : *n.as_array()) items.push_back(convert(x, file, key, depth + 1));
      return Value::array(std::move(items), w);
    }
    case toml::node_type::table: {
      Value t = Value::table(w);
      for (const auto& [k, v] : *n.as_table()) {
        t.entries().push_back(
            Value::Entry{std::string(k.str()), where_of(k.source(), file),
                         convert(v, file, join_key(key, std::string(k.str())), depth + 1)});
      }
      return t;
    }
    default:
      // Dates and times have no meaning in moebench configs.
      throw ConfigError(w, "", "a boolean, number, string, array or table",
                        "a TOML date/time value");
  }
}

}  // namespace

// toml++ recurses once per nesting level when it builds and frees a table,
// so a header or dotted key a few hundred thousand parts deep overflows the
// stack inside toml::parse before convert() can refuse it. This lexical pass
// bounds the nesting first, conservatively: each open bracket counts one level
// plus the most dots of any dotted key (or value) written at that level, and
// a table header's dots count for the keys under it. Strings and comments are
// skipped; a float's single dot counts, so the bound is never too low.
void check_nesting_before_parse(std::string_view text, const std::string& source_name) {
  std::vector<int> level{0};  // per open bracket: most dots of a chain in it
  int header = 0;             // dots of the current [table] header
  int chain = 0;              // dots in the dotted run being read
  bool in_header = false;
  bool only_brackets = true;  // the line so far holds only blanks and '['
  int line = 1;
  size_t line_start = 0;
  auto depth = [&] {
    int d = header;
    for (size_t i = 0; i < level.size(); ++i)
      d += (i ? 1 : 0) + std::max(level[i], chain * (i + 1 == level.size()));
    return d;
  };
  auto fail = [&](size_t pos) {
    throw ConfigError(Where{source_name, line, static_cast<int>(pos - line_start) + 1}, "",
                      fmt::format("at most {} levels of nested tables and arrays", kMaxNesting),
                      "deeper nesting (counted before parsing)");
  };
  auto end_chain = [&] {
    level.back() = std::max(level.back(), chain);
    chain = 0;
  };
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '\n') {
      end_chain();
      ++line;
      line_start = i + 1;
      only_brackets = true;
      continue;
    }
    if (c != '[' && c != ' ' && c != '\t') only_brackets = false;
    if (c == '#') {
      while (i + 1 < n && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      const bool multi = text.substr(i, 3) == std::string(3, c);
      const std::string_view close = multi ? text.substr(i, 3) : text.substr(i, 1);
      size_t j = i + close.size();
      while (j < n) {
        if (c == '"' && text[j] == '\\') {
          ++j;  // the escaped character is skipped below, newline or not
        } else if (!multi && text[j] == '\n') {
          break;
        } else if (text.substr(j, close.size()) == close) {
          break;
        }
        if (j < n && text[j] == '\n') {
          ++line;
          line_start = j + 1;
        }
        ++j;
      }
      // An unterminated one-line string ends at its newline (toml++ reports it).
      i = (j < n && text[j] == '\n') ? j - 1 : std::min(n, j + close.size()) - 1;
      continue;  // a quoted key part continues the dotted run
    }
    if (c == '.') {
      ++chain;
      if (depth() > kMaxNesting) fail(i);
      continue;
    }
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == ' ' ||
        c == '\t')
      continue;
    end_chain();
    if (c == '[' || c == '{') {
      // A '[' that opens a line is a table header: its dots replace the last header's.
      if (c == '[' && level.size() == 1 && only_brackets) {
        header = 0;
        in_header = true;
        continue;
      }
      level.push_back(0);
      if (depth() > kMaxNesting) fail(i);
    } else if (c == ']' && in_header) {
      header = std::max(header, level.back());
      level.back() = 0;
      if (i + 1 < n && text[i + 1] == ']') ++i;
      in_header = false;
    } else if ((c == ']' || c == '}') && level.size() > 1) {
      level.pop_back();
    }
  }
}

Value parse_toml(std::string_view text, const std::string& source_name) {
  check_nesting_before_parse(text, source_name);
  try {
    toml::table tbl = toml::parse(text, source_name);
    Value v = convert(tbl, source_name, "", 0);
    v.set_where(Where{source_name, 1, 1});
    return v;
  } catch (const toml::parse_error& e) {
    throw ConfigError(where_of(e.source(), source_name), "", "valid TOML",
                      fmt::format("a syntax error ({})", e.description()));
  }
}

Value load_toml_file(const std::filesystem::path& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error& e) {
    const std::string kind = file_kind(path);
    throw ConfigError(Where{path.string()}, "", "a readable TOML file (a regular file)",
                      kind == "a regular file" ? std::string(e.what()) : kind);
  }
  return parse_toml(text, path.string());
}

void merge_into(Value& base, const Value& overlay) {
  if (!base.is_table() || !overlay.is_table()) {
    base = overlay;
    return;
  }
  for (const auto& e : overlay.entries()) {
    Value* existing = base.find(e.key);
    if (existing && existing->is_table() && e.value.is_table()) {
      merge_into(*existing, e.value);
    } else {
      base.set(e.key, e.value, e.key_where);
    }
  }
}

std::string join_key(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  return fmt::format("{}.{}", prefix, key);
}

}  // namespace moebench::cfg
