// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/config/schema.h"

namespace moebench::cfg {

std::string IntRange::describe() const {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (lo == kMin && hi == kMax) return "an integer";
  if (hi == kMax) return fmt::format("an integer >= {}", lo);
  if (lo == kMin) return fmt::format("an integer <= {}", hi);
  return fmt::format("an integer in [{}, {}]", lo, hi);
}

bool NumRange::contains(double v) const {
  if (!std::isfinite(v)) return false;
  if (lo_open ? !(v > lo) : !(v >= lo)) return false;
  if (hi_open ? !(v < hi) : !(v <= hi)) return false;
  return true;
}

std::string NumRange::describe() const {
  const bool has_lo = std::isfinite(lo);
  const bool has_hi = std::isfinite(hi);
  if (!has_lo && !has_hi) return "a finite number";
  if (!has_hi) return fmt::format("a number {} {}", lo_open ? ">" : ">=", lo);
  if (!has_lo) return fmt::format("a number {} {}", hi_open ? "<" : "<=", hi);
  return fmt::format("a number in {}{}, {}{}", lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]");
}

void throw_unknown_key(const Value::Entry& entry, const std::string& prefix,
                       const std::vector<std::string>& known) {
  // At the top level there is no table to name: list the known keys instead.
  const std::string expected =
      prefix.empty() ? fmt::format("a known top-level key or table ({})", join(known, ", "))
                     : fmt::format("a known key of [{}]", prefix);
  throw ConfigError(entry.key_where, join_key(prefix, entry.key), expected,
                    fmt::format("unknown key '{}'", entry.key), closest_name(entry.key, known));
}

}  // namespace moebench::cfg
