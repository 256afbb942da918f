// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/policy/registry.h"

namespace moebench {

void Registry::insert(Entry e) {
  auto key = std::make_pair(e.family, e.kind);
  if (entries_.count(key))
    throw InternalError("component registered twice: " + e.family + "/" + e.kind);
  entries_.emplace(std::move(key), std::move(e));
}

void Registry::add_names(const std::string& family, std::vector<std::string> names) {
  if (names_.count(family)) throw InternalError("names registered twice: " + family);
  names_.emplace(family, std::move(names));
}

std::vector<std::string> Registry::kinds(const std::string& family) const {
  const auto n = names_.find(family);
  if (n != names_.end()) return n->second;
  std::vector<std::string> out;
  for (const auto& [k, e] : entries_) {
    if (k.first == family) out.push_back(k.second);
  }
  return out;
}

const Registry::Entry& Registry::entry(const std::string& family, const std::string& kind,
                                       const Where& where) const {
  auto it = entries_.find({family, kind});
  if (it == entries_.end()) {
    const auto ks = kinds(family);
    throw ConfigError(where, "strategy." + family,
                      fmt::format("a registered {} ({})", family, join(ks, ", ")), "'" + kind + "'",
                      closest_name(kind, ks));
  }
  return it->second;
}

nlohmann::ordered_json Registry::resolve(const std::string& family, const std::string& kind,
                                         const cfg::Value& params,
                                         const std::string& prefix) const {
  return entry(family, kind, params.where()).resolve(params, prefix);
}

bool Registry::is_list_param(const std::string& family, const std::string& kind,
                             const std::string& key) const {
  auto it = entries_.find({family, kind});
  return it != entries_.end() && it->second.schema->is_list_field(key);
}

std::vector<const Registry::Entry*> Registry::entries() const {
  std::vector<const Entry*> out;
  for (const auto& [k, e] : entries_) out.push_back(&e);
  return out;
}

}  // namespace moebench
