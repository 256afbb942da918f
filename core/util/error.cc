// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/error.h"

#include <fmt/format.h>

namespace moebench {

std::string Where::str() const {
  if (file.empty()) return "<unknown>";
  if (line <= 0) return file;
  if (column <= 0) return fmt::format("{}:{}", file, line);
  return fmt::format("{}:{}:{}", file, line, column);
}

std::string ConfigError::format(const Where& where, const std::string& key,
                                const std::string& expected, const std::string& found,
                                const std::string& hint) {
  std::string msg = where.str() + ": ";
  if (!key.empty()) msg += fmt::format("key '{}': ", key);
  msg += fmt::format("expected {}, found {}", expected, found);
  if (!hint.empty()) msg += fmt::format("; did you mean '{}'?", hint);
  return msg;
}

ConfigError::ConfigError(Where where, std::string key, std::string expected, std::string found,
                         std::string hint)
    : Error(format(where, key, expected, found, hint)),
      where_(std::move(where)),
      key_(std::move(key)),
      expected_(std::move(expected)),
      found_(std::move(found)),
      hint_(std::move(hint)) {}

}  // namespace moebench
