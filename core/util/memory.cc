// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/util/error.h"

namespace moebench {

namespace {

uint64_t system_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream ss(line.substr(13));
      uint64_t kb = 0;
      if (ss >> kb) return kb * 1024;
    }
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : UINT64_MAX;
}

}  // namespace

uint64_t available_memory_bytes() {
  uint64_t avail = system_available_bytes();
  // MOEBENCH_MEMORY_LIMIT_MB lowers the budget (the fuzz targets run under
  // libFuzzer's RSS limit, far below the machine's memory).
  if (const char* lim = std::getenv("MOEBENCH_MEMORY_LIMIT_MB"); lim && *lim) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(lim, &end, 10);
    if (end && *end == '\0' && mb > 0) avail = std::min<uint64_t>(avail, uint64_t(mb) << 20);
  }
  return avail;
}

void check_allocation(uint64_t bytes, const std::string& what) {
  const uint64_t avail = available_memory_bytes();
  if (bytes > avail) {
    throw Error(fmt::format(
        "{}: expected at most {:.2f} GiB (the memory available), found {:.2f} GiB needed", what,
        double(avail) / (1ull << 30), double(bytes) / (1ull << 30)));
  }
}

}  // namespace moebench
