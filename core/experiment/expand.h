// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// What a composite suite (composite.cc) uses of the expansion of one
// experiment file (experiment.cc). Not for use outside core/experiment/.

#include <filesystem>

#include "core/config/value.h"
#include "core/experiment/experiment.h"

namespace moebench {

// A [suite] table parsed into `out` (its keys checked).
void parse_suite(const cfg::Value& s, SuiteSpec& out);
// Refuses a suite name that is not a safe folder name, at its key.
void check_suite_name(const cfg::Value& root, const std::string& name);
// One experiment file (no include) expanded into its cases, at most
// max_cases of them; relative paths resolve against base_dir.
Experiment expand(const cfg::Value& root, const std::filesystem::path& file,
                  const std::filesystem::path& base_dir, const ConfigPaths& paths,
                  const ComponentCatalog* catalog, uint64_t max_cases);

}  // namespace moebench
