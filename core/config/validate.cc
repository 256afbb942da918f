// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/config/validate.h"

namespace moebench::cfg {

Where where_of_key(const Value& table, const std::string& key) {
  if (table.is_table()) {
    if (const Value* v = table.find(key)) return v->where();
  }
  return table.where();
}

void require_key(const Value& table, const std::string& prefix, const std::string& key, bool ok,
                 const std::string& expected, const std::string& found) {
  if (ok) return;
  throw ConfigError(where_of_key(table, key), join_key(prefix, key), expected, found);
}

}  // namespace moebench::cfg
