// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// What this CPU can do, read at run time (cpuid + OS state), never assumed
// from the build flags. Used by the manifest and by kernel dispatch.

#include <string>
#include <vector>

namespace moebench {

struct CpuInfo {
  std::string model;     // e.g. "AMD EPYC 9B45" (from /proc/cpuinfo or cpuid brand string)
  int logical_cpus = 0;  // CPUs this process may run on (sched affinity)
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool amx_tile = false;  // AMX is usable only when the OS grants the tile state;
  bool amx_bf16 = false;  // these flags already include that check
  bool amx_int8 = false;

  // Names of the flags above that are set, in a fixed order.
  std::vector<std::string> flag_names() const;
};

// Detects once and caches.
const CpuInfo& cpu_info();

}  // namespace moebench
