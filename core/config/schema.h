// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Typed field tables for configuration structs.
//
// A Schema<T> lists the fields of a config struct T once: name, type, range,
// unit, a one-line doc string, and the member it fills. That single table
// drives everything that touches the struct: parsing a cfg::Value (rejecting
// unknown keys with a suggestion, wrong types and out-of-range values with
// the exact position), writing the resolved value as JSON for manifests and
// result rows, and `moebench config describe`. There are no hand-kept
// parallel lists of fields to drift apart.
//
// Parsing starts from the struct's current contents, so defaults live in the
// struct's member initialisers and a preset plus overrides is simply two
// parse passes (or one pass over a merged tree).

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config/value.h"
#include "core/util/error.h"
#include "core/util/strings.h"

namespace moebench::cfg {

struct IntRange {
  int64_t lo = std::numeric_limits<int64_t>::min();
  int64_t hi = std::numeric_limits<int64_t>::max();
  bool contains(int64_t v) const { return v >= lo && v <= hi; }
  std::string describe() const;  // "an integer in [1, 8]", "an integer >= 0", "an integer"
};

struct NumRange {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool hi_open = false;
  bool contains(double v) const;
  std::string describe() const;  // "a number in (0, 1]", "a number >= 0", "a finite number"
};

// Convenience ranges.
inline IntRange at_least(int64_t lo) {
  return IntRange{lo};
}
inline IntRange between(int64_t lo, int64_t hi) {
  return IntRange{lo, hi};
}
inline NumRange non_negative() {
  return NumRange{0.0};
}
inline NumRange positive() {
  return NumRange{0.0, std::numeric_limits<double>::infinity(), true};
}
inline NumRange fraction() {
  return NumRange{0.0, 1.0};
}
inline NumRange open_closed_unit() {
  return NumRange{0.0, 1.0, true, false};
}

// One documented field, as `moebench config describe` prints it.
struct FieldDoc {
  std::string key;   // dotted path inside the section
  std::string type;  // "an integer in [1, 8]"
  std::string unit;  // "" when dimensionless
  std::string doc;
  std::string default_json;
};

// What every schema can say about itself without knowing T.
class SchemaInfo {
 public:
  virtual ~SchemaInfo() = default;
  virtual const std::string& section() const = 0;
  virtual bool has_field(std::string_view name) const = 0;
  // True for fields whose value is itself a list (so an array there is a
  // value, not a sweep axis).
  virtual bool is_list_field(std::string_view name) const = 0;
  // The schema of a nested table field, or nullptr.
  virtual const SchemaInfo* nested(std::string_view name) const = 0;
  virtual std::vector<std::string> field_names() const = 0;
  virtual std::vector<FieldDoc> docs(const std::string& prefix = "") const = 0;
};

// Raises the standard "unknown key" error for `entry` of the table `prefix`.
[[noreturn]] void throw_unknown_key(const Value::Entry& entry, const std::string& prefix,
                                    const std::vector<std::string>& known);

template <class T>
class Schema : public SchemaInfo {
 public:
  explicit Schema(std::string section) : section_(std::move(section)) {}

  const std::string& section() const override { return section_; }

  Schema& integer(std::string name, int64_t T::*m, std::string doc, IntRange r = {},
                  std::string unit = "") {
    Field f = base(std::move(name), std::move(doc), std::move(unit), r.describe());
    f.parse = [m, r, type = f.type](T& out, const Value& v, const std::string& key) {
      if (!v.is_int()) throw ConfigError(v.where(), key, type, v.describe());
      if (!r.contains(v.as_int()))
        throw ConfigError(v.where(), key, type, std::to_string(v.as_int()));
      out.*m = v.as_int();
    };
    f.to_json = [m](const T& t) { return nlohmann::ordered_json(t.*m); };
    return add(std::move(f));
  }

  Schema& number(std::string name, double T::*m, std::string doc, NumRange r = {},
                 std::string unit = "") {
    Field f = base(std::move(name), std::move(doc), std::move(unit), r.describe());
    f.parse = [m, r, type = f.type](T& out, const Value& v, const std::string& key) {
      if (!v.is_number()) throw ConfigError(v.where(), key, type, v.describe());
      const double x = v.as_number();
      if (!r.contains(x)) throw ConfigError(v.where(), key, type, fmt::format("{}", x));
      out.*m = x;
    };
    f.to_json = [m](const T& t) { return nlohmann::ordered_json(t.*m); };
    return add(std::move(f));
  }

  Schema& boolean(std::string name, bool T::*m, std::string doc) {
    Field f = base(std::move(name), std::move(doc), "", "a boolean (true or false)");
    f.parse = [m, type = f.type](T& out, const Value& v, const std::string& key) {
      if (!v.is_bool()) throw ConfigError(v.where(), key, type, v.describe());
      out.*m = v.as_bool();
    };
    f.to_json = [m](const T& t) { return nlohmann::ordered_json(t.*m); };
    return add(std::move(f));
  }

  Schema& string(std::string name, std::string T::*m, std::string doc) {
    Field f = base(std::move(name), std::move(doc), "", "a string");
    f.parse = [m, type = f.type](T& out, const Value& v, const std::string& key) {
      if (!v.is_string()) throw ConfigError(v.where(), key, type, v.describe());
      out.*m = v.as_string();
    };
    f.to_json = [m](const T& t) { return nlohmann::ordered_json(t.*m); };
    return add(std::move(f));
  }

  // A string restricted to a fixed set of names.
  Schema& choice(std::string name, std::string T::*m, std::vector<std::string> allowed,
                 std::string doc) {
    Field f = base(std::move(name), std::move(doc), "", "one of " + join(allowed, ", ", true));
    f.parse = [m, allowed, type = f.type](T& out, const Value& v, const std::string& key) {
      if (!v.is_string()) throw ConfigError(v.where(), key, type, v.describe());
      for (const auto& a : allowed) {
        if (a == v.as_string()) {
          out.*m = a;
          return;
        }
      }
      throw ConfigError(v.where(), key, type, "'" + v.as_string() + "'",
                        closest_name(v.as_string(), allowed));
    };
    f.to_json = [m](const T& t) { return nlohmann::ordered_json(t.*m); };
    return add(std::move(f));
  }

  // An enum spelled as a string in TOML.
  template <class E>
  Schema& enumeration(std::string name, E T::*m, std::vector<std::pair<std::string, E>> values,
                      std::string doc) {
    std::vector<std::string> names;
    for (const auto& [n, e] : values) names.push_back(n);
    Field f = base(std::move(name), std::move(doc), "", "one of " + join(names, ", ", true));
    f.parse = [m, values, names, type = f.type](T& out, const Value& v, const std::string& key) {
      if (!v.is_string()) throw ConfigError(v.where(), key, type, v.describe());
      for (const auto& [n, e] : values) {
        if (n == v.as_string()) {
          out.*m = e;
          return;
        }
      }
      throw ConfigError(v.where(), key, type, "'" + v.as_string() + "'",
                        closest_name(v.as_string(), names));
    };
    f.to_json = [m, values](const T& t) {
      for (const auto& [n, e] : values) {
        if (e == t.*m) return nlohmann::ordered_json(n);
      }
      return nlohmann::ordered_json(nullptr);
    };
    return add(std::move(f));
  }

  Schema& int_list(std::string name, std::vector<int64_t> T::*m, std::string doc, IntRange r = {},
                   std::string unit = "") {
    Field f = base(std::move(name), std::move(doc), std::move(unit),
                   "an array of " + plural(r.describe()));
    f.is_list = true;
    f.parse = [m, r, type = f.type](T& out, const Value& v, const std::string& key) {
      if (!v.is_array()) throw ConfigError(v.where(), key, type, v.describe());
      std::vector<int64_t> xs;
      for (size_t i = 0; i < v.items().size(); ++i) {
        const Value& x = v.items()[i];
        const std::string k = fmt::format("{}[{}]", key, i);
        if (!x.is_int()) throw ConfigError(x.where(), k, r.describe(), x.describe());
        if (!r.contains(x.as_int()))
          throw ConfigError(x.where(), k, r.describe(), std::to_string(x.as_int()));
        xs.push_back(x.as_int());
      }
      out.*m = std::move(xs);
    };
    f.to_json = [m](const T& t) { return nlohmann::ordered_json(t.*m); };
    return add(std::move(f));
  }

  Schema& number_list(std::string name, std::vector<double> T::*m, std::string doc, NumRange r = {},
                      std::string unit = "") {
    Field f = base(std::move(name), std::move(doc), std::move(unit),
                   "an array of " + plural(r.describe()));
    f.is_list = true;
    f.parse = [m, r, type = f.type](T& out, const Value& v, const std::string& key) {
      if (!v.is_array()) throw ConfigError(v.where(), key, type, v.describe());
      std::vector<double> xs;
      for (size_t i = 0; i < v.items().size(); ++i) {
        const Value& x = v.items()[i];
        const std::string k = fmt::format("{}[{}]", key, i);
        if (!x.is_number()) throw ConfigError(x.where(), k, r.describe(), x.describe());
        if (!r.contains(x.as_number()))
          throw ConfigError(x.where(), k, r.describe(), fmt::format("{}", x.as_number()));
        xs.push_back(x.as_number());
      }
      out.*m = std::move(xs);
    };
    f.to_json = [m](const T& t) { return nlohmann::ordered_json(t.*m); };
    return add(std::move(f));
  }

  Schema& string_list(std::string name, std::vector<std::string> T::*m, std::string doc) {
    Field f = base(std::move(name), std::move(doc), "", "an array of strings");
    f.is_list = true;
    f.parse = [m, type = f.type](T& out, const Value& v, const std::string& key) {
      if (!v.is_array()) throw ConfigError(v.where(), key, type, v.describe());
      std::vector<std::string> xs;
      for (size_t i = 0; i < v.items().size(); ++i) {
        const Value& x = v.items()[i];
        if (!x.is_string())
          throw ConfigError(x.where(), fmt::format("{}[{}]", key, i), "a string", x.describe());
        xs.push_back(x.as_string());
      }
      out.*m = std::move(xs);
    };
    f.to_json = [m](const T& t) { return nlohmann::ordered_json(t.*m); };
    return add(std::move(f));
  }

  // A nested table parsed with its own schema. `sub` must outlive this schema.
  template <class S>
  Schema& table(std::string name, S T::*m, const Schema<S>& sub, std::string doc) {
    Field f = base(std::move(name), std::move(doc), "", "a table");
    f.sub = &sub;
    f.parse = [m, &sub](T& out, const Value& v, const std::string& key) {
      if (!v.is_table()) throw ConfigError(v.where(), key, "a table", v.describe());
      sub.parse(v, out.*m, key);
    };
    f.to_json = [m, &sub](const T& t) { return sub.to_json(t.*m); };
    return add(std::move(f));
  }

  // An array of tables ([[name]] in TOML), each parsed with `sub`.
  template <class S>
  Schema& table_list(std::string name, std::vector<S> T::*m, const Schema<S>& sub,
                     std::string doc) {
    Field f = base(std::move(name), std::move(doc), "", "an array of tables");
    f.is_list = true;
    f.sub = &sub;
    f.parse = [m, &sub](T& out, const Value& v, const std::string& key) {
      if (!v.is_array()) throw ConfigError(v.where(), key, "an array of tables", v.describe());
      std::vector<S> xs;
      for (size_t i = 0; i < v.items().size(); ++i) {
        const Value& x = v.items()[i];
        const std::string k = fmt::format("{}[{}]", key, i);
        if (!x.is_table()) throw ConfigError(x.where(), k, "a table", x.describe());
        S s{};
        sub.parse(x, s, k);
        xs.push_back(std::move(s));
      }
      out.*m = std::move(xs);
    };
    f.to_json = [m, &sub](const T& t) {
      auto j = nlohmann::ordered_json::array();
      for (const auto& s : t.*m) j.push_back(sub.to_json(s));
      return j;
    };
    return add(std::move(f));
  }

  // Marks the most recently added field as required (no default).
  Schema& required() {
    fields_.back().required = true;
    return *this;
  }

  // Keys accepted in the TOML but handled by the caller (e.g. "preset").
  Schema& reserved(std::string name) {
    reserved_.push_back(std::move(name));
    return *this;
  }

  // Parses the table `v` into `out`. `prefix` is the dotted key of the table
  // ("model", "hardware.cpu") used in messages. Keys absent from `v` keep
  // the value already in `out`; a missing required key is an error.
  void parse(const Value& v, T& out, const std::string& prefix) const {
    if (!v.is_table()) throw ConfigError(v.where(), prefix, "a table", v.describe());
    for (const auto& e : v.entries()) {
      if (is_reserved(e.key)) continue;
      const Field* f = find(e.key);
      if (!f) throw_unknown_key(e, prefix.empty() ? section_ : prefix, field_names());
      f->parse(out, e.value, join_key(prefix, e.key));
    }
    for (const auto& f : fields_) {
      if (f.required && !v.find(f.name)) {
        throw ConfigError(v.where(), join_key(prefix, f.name), fmt::format("{} (required)", f.type),
                          "no value");
      }
    }
  }

  nlohmann::ordered_json to_json(const T& t) const {
    auto j = nlohmann::ordered_json::object();
    for (const auto& f : fields_) j[f.name] = f.to_json(t);
    return j;
  }

  bool has_field(std::string_view name) const override { return find(name) != nullptr; }
  bool is_list_field(std::string_view name) const override {
    const Field* f = find(name);
    return f && f->is_list;
  }
  const SchemaInfo* nested(std::string_view name) const override {
    const Field* f = find(name);
    return f ? f->sub : nullptr;
  }
  std::vector<std::string> field_names() const override {
    std::vector<std::string> out;
    for (const auto& f : fields_) out.push_back(f.name);
    return out;
  }
  std::vector<FieldDoc> docs(const std::string& prefix = "") const override {
    std::vector<FieldDoc> out;
    const T defaults{};
    for (const auto& f : fields_) {
      const std::string key = join_key(prefix, f.name);
      if (f.sub && !f.is_list) {
        auto sub = f.sub->docs(key);
        out.insert(out.end(), sub.begin(), sub.end());
        continue;
      }
      out.push_back(FieldDoc{key, f.type, f.unit, f.doc, f.to_json(defaults).dump()});
    }
    return out;
  }

 private:
  struct Field {
    std::string name, doc, unit, type;
    bool required = false;
    bool is_list = false;
    const SchemaInfo* sub = nullptr;
    std::function<void(T&, const Value&, const std::string&)> parse;
    std::function<nlohmann::ordered_json(const T&)> to_json;
  };

  static Field base(std::string name, std::string doc, std::string unit, std::string type) {
    Field f;
    f.name = std::move(name);
    f.doc = std::move(doc);
    f.unit = std::move(unit);
    f.type = std::move(type);
    return f;
  }
  static std::string plural(const std::string& desc) {
    // "an integer in [1, 8]" -> "integers in [1, 8]"; good enough for messages.
    if (starts_with(desc, "an integer")) return "integers" + desc.substr(10);
    if (starts_with(desc, "a number")) return "numbers" + desc.substr(8);
    if (starts_with(desc, "a finite number")) return "finite numbers" + desc.substr(15);
    return desc;
  }
  Schema& add(Field f) {
    fields_.push_back(std::move(f));
    return *this;
  }
  const Field* find(std::string_view name) const {
    for (const auto& f : fields_) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }
  bool is_reserved(std::string_view name) const {
    for (const auto& r : reserved_) {
      if (r == name) return true;
    }
    return false;
  }

  std::string section_;
  std::vector<Field> fields_;
  std::vector<std::string> reserved_;
};

}  // namespace moebench::cfg
