// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers for cross-field checks that run after a schema parse.

#include <string>

#include "core/config/value.h"

namespace moebench::cfg {

// Where `key` is written in `table` (its value), else where the table starts.
Where where_of_key(const Value& table, const std::string& key);

// Throws ConfigError("<prefix>.<key>", expected, found) at the key's position
// in `table` unless `ok`.
void require_key(const Value& table, const std::string& prefix, const std::string& key, bool ok,
                 const std::string& expected, const std::string& found);

}  // namespace moebench::cfg
