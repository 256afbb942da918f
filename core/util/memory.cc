// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

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

// The first number in `path`, or UINT64_MAX ("max", unreadable, missing).
uint64_t read_number(const std::string& path) {
  std::ifstream in(path);
  uint64_t v = 0;
  if (!(in >> v)) return UINT64_MAX;
  return v;
}

// A key's value in a memory.stat file (0 when absent).
uint64_t stat_value(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

// What the process's memory cgroup still allows: the limit less what it uses
// (its reclaimable inactive file cache not counted), for cgroup v2 and v1,
// the tightest over the cgroup and its parents. MemAvailable is the host's:
// under a container or systemd limit a run that passed it was killed.
uint64_t cgroup_available_bytes() {
  uint64_t best = UINT64_MAX;
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const auto c1 = line.find(':'), c2 = line.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
    std::string path = line.substr(c2 + 1);
    const bool v2 = controllers.empty();
    if (!v2 && controllers != "memory") continue;
    const std::vector<std::string> roots =
        v2 ? std::vector<std::string>{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}
           : std::vector<std::string>{"/sys/fs/cgroup/memory"};
    for (const std::string& root : roots) {
      for (std::string p = path;; p = p.substr(0, p.rfind('/'))) {
        const std::string dir = root + (p == "/" ? "" : p);
        const uint64_t limit = read_number(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
        const uint64_t used =
            read_number(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
        if (limit != UINT64_MAX && used != UINT64_MAX && limit < (uint64_t(1) << 60)) {
          const uint64_t cache =
              stat_value(dir + "/memory.stat", v2 ? "inactive_file" : "total_inactive_file");
          const uint64_t held = used > cache ? used - cache : 0;
          best = std::min(best, limit > held ? limit - held : 0);
        }
        if (p.empty() || p == "/") break;
      }
    }
  }
  return best;
}

// What an address-space or data-size limit (ulimit -v, prlimit --as) leaves:
// the limit less the process's current virtual or data size.
uint64_t rlimit_available_bytes() {
  uint64_t best = UINT64_MAX;
  std::ifstream in("/proc/self/status");
  std::string line;
  uint64_t vm_size = 0, vm_data = 0;
  while (std::getline(in, line)) {
    std::istringstream ss(line.substr(line.find(':') + 1));
    uint64_t kb = 0;
    if (line.rfind("VmSize:", 0) == 0 && ss >> kb) vm_size = kb * 1024;
    if (line.rfind("VmData:", 0) == 0 && ss >> kb) vm_data = kb * 1024;
  }
  for (const auto& [res, used] : {std::pair{RLIMIT_AS, vm_size}, std::pair{RLIMIT_DATA, vm_data}}) {
    rlimit r{};
    if (::getrlimit(res, &r) != 0 || r.rlim_cur == RLIM_INFINITY) continue;
    best = std::min<uint64_t>(best, r.rlim_cur > used ? r.rlim_cur - used : 0);
  }
  return best;
}

}  // namespace

uint64_t available_memory_bytes() {
  uint64_t avail =
      std::min({system_available_bytes(), cgroup_available_bytes(), rlimit_available_bytes()});
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
