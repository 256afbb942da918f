// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Where a result came from: the build, the source revision, the machine.
// Written first in every manifest.json (llama-bench style: provenance, then
// configuration, then metrics).

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moebench {

struct Provenance {
  std::string moebench_version;
  std::string git_commit;    // source tree at run time ("unknown" without git)
  bool git_dirty = false;    // uncommitted changes in tracked files
  std::string build_commit;  // commit the binary was configured at
  std::string build_type;
  std::string compiler;
  std::string onednn_version;
  bool cuda_compiled = false;
  std::string cuda_compiled_version;
  std::string cuda_runtime_version;
  std::string cuda_driver_version;
  std::string cpu_model;
  std::vector<std::string> cpu_flags;
  int logical_cpus = 0;
  nlohmann::ordered_json gpus;  // array of {index, name, sm, mem_bytes, sm_count}
  std::string gpu_note;
  std::string hostname;
  std::string utc_time;  // ISO 8601, e.g. 2026-11-21T19:30:00Z
  std::string command_line;

  nlohmann::ordered_json to_json() const;
};

// What a layer above the core adds to the provenance (the oneDNN version,
// the CUDA versions and GPUs): the core links neither oneDNN nor CUDA, so
// the harness passes these in (harness/run/platform_provenance.h).
using ProvenanceProbe = std::function<void(Provenance&)>;

// Collects provenance now: the build, the source revision, the CPU, the
// host, the time, then each probe in order. `argv` is recorded as the
// command line. Without probes onednn_version stays empty and no GPU is
// listed (gpu_note says nothing was queried).
Provenance collect_provenance(const std::vector<std::string>& argv,
                              const std::vector<ProvenanceProbe>& probes = {});

// Current UTC time as ISO 8601 ("2026-11-21T19:30:00Z") and as a compact
// run-id stamp ("20261121T193000Z").
std::string utc_now_iso();
std::string utc_now_stamp();

}  // namespace moebench
