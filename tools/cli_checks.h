// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Command-line value checks with messages that say what was expected and
// what was found: CLI11's own (CLI::Range, CLI::PositiveNumber) answer "abc"
// with "not in range 1 to 256" and a bound of DBL_MAX with its 309 digits.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

namespace moebench::cli {

inline constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();

// A whole number in [lo, hi] ("expected a whole number from 1 to 256, found 'abc'").
inline CLI::Validator whole(int64_t lo, int64_t hi = kNoMax) {
  const std::string want = hi == kNoMax ? fmt::format("a whole number >= {}", lo)
                                        : fmt::format("a whole number from {} to {}", lo, hi);
  return CLI::Validator(
      [lo, hi, want](std::string& s) -> std::string {
        int64_t v = 0;
        const char* end = s.data() + s.size();
        const auto r = std::from_chars(s.data(), end, v);
        if (r.ec == std::errc::result_out_of_range)
          return fmt::format("expected {}, found '{}' (too large)", want, s);
        if (r.ec != std::errc() || r.ptr != end)
          return fmt::format("expected {}, found '{}' (not a whole number)", want, s);
        if (v < lo || v > hi) return fmt::format("expected {}, found {}", want, v);
        return "";
      },
      want);
}

// A finite number in [lo, hi] (lo excluded when `lo_open`).
inline CLI::Validator real(double lo, double hi = std::numeric_limits<double>::infinity(),
                           bool lo_open = false) {
  const std::string low = fmt::format("{} {}", lo_open ? ">" : ">=", lo);
  const std::string want = std::isinf(hi) ? fmt::format("a number {}", low)
                                          : fmt::format("a number from {}{} to {}", lo,
                                                        lo_open ? " (excluded)" : "", hi);
  return CLI::Validator(
      [lo, hi, lo_open, want](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size())
          return fmt::format("expected {}, found '{}' (not a number)", want, s);
        if (!std::isfinite(v) || (lo_open ? !(v > lo) : !(v >= lo)) || !(v <= hi)) {
          return fmt::format("expected {}, found {}", want, s);
        }
        return "";
      },
      want);
}

}  // namespace moebench::cli
