// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// What run_suite --merge checks before it writes anything: that each
// shard's manifest and stored cases have the keys and JSON types a run
// writes (an edited manifest gave "internal error: [json.exception...]"),
// and that they agree with the suite file the manifests name, recomputed:
// its case list (a case id removed from every shard's list once merged as
// "complete, 7 of 7" for an 8-case suite), its experiment hash, and every
// stored row's identity and configuration. Each failure names the file and
// the key or case.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/policy/registry.h"

namespace moebench {

// Throws moebench::Error "<file>: key '<a.b>': expected <type>, found ..."
// for the first key of a shard run's manifest that is absent or of another type.
void check_shard_manifest(const nlohmann::ordered_json& m, const std::filesystem::path& file);

// The same for a stored case (cases/<id>.json): an object with case_id `id`,
// a status, and rows that are objects naming the same case.
void check_stored_case(const std::string& id, const nlohmann::ordered_json& c,
                       const std::filesystem::path& file);

// Loads the suite file manifest `m` names (suite.file, with the hash
// suite.file_sha256), applies the manifest's filter, and checks the shards'
// case list (shard.suite_cases), the experiment hash, and each stored case
// (`found`: case id -> stored case and the folder it came from) against the
// recomputed cases: rows with the case's identity and configuration.
void check_against_suite(
    const nlohmann::ordered_json& m, const std::filesystem::path& manifest_file,
    const std::map<std::string, std::pair<const nlohmann::ordered_json*, std::filesystem::path>>&
        found,
    const Registry& registry);

}  // namespace moebench
