// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// What GPUs this process can see, for provenance (manifest.json) and for
// deciding whether GPU tests and the real GPU backend can run.

#include <cstdint>
#include <string>
#include <vector>

namespace moebench {

struct GpuDesc {
  int index = 0;
  std::string name;
  int sm_major = 0, sm_minor = 0;
  int64_t mem_bytes = 0;
  int sm_count = 0;
};

struct GpuQuery {
  bool cuda_compiled = false;     // built with nvcc
  int cuda_compiled_version = 0;  // CUDART_VERSION at build time, e.g. 13000
  int cuda_runtime_version = 0;   // 0 when unavailable
  int cuda_driver_version = 0;    // 0 when no driver
  std::vector<GpuDesc> gpus;      // empty on CPU-only machines
  std::string note;               // why there are no GPUs, when there are none
};

// Never throws; on machines without a GPU or driver returns an empty list and
// a note.
GpuQuery query_gpus();

}  // namespace moebench
