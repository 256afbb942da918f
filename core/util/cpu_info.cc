// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/cpu_info.h"

#include <cpuid.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "core/util/strings.h"

namespace moebench {
namespace {

uint64_t xgetbv0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t(edx) << 32) | eax;
}

// Linux requires a process to ask for the AMX tile data state before use.
bool request_amx_permission() {
#if defined(__linux__)
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

std::string brand_string() {
  uint32_t regs[12];
  unsigned int max_ext = __get_cpuid_max(0x80000000, nullptr);
  if (max_ext < 0x80000004) return "unknown";
  for (unsigned int i = 0; i < 3; ++i) {
    __get_cpuid(0x80000002 + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
  }
  char buf[49];
  std::memcpy(buf, regs, 48);
  buf[48] = 0;
  return trim(buf);
}

CpuInfo detect() {
  CpuInfo c;
  {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      if (starts_with(line, "model name")) {
        const auto pos = line.find(':');
        if (pos != std::string::npos) c.model = trim(line.substr(pos + 1));
        break;
      }
    }
  }
  if (c.model.empty()) c.model = brand_string();
  cpu_set_t set;
  CPU_ZERO(&set);
  c.logical_cpus = sched_getaffinity(0, sizeof(set), &set) == 0
                       ? CPU_COUNT(&set)
                       : int(sysconf(_SC_NPROCESSORS_ONLN));

  unsigned int eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return c;
  const bool osxsave = ecx & (1u << 27);
  c.fma = ecx & (1u << 12);
  const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool os_avx = (xcr0 & 0x6) == 0x6;
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;
  const bool os_amx = (xcr0 & (3ull << 17)) == (3ull << 17);
  if (__get_cpuid_max(0, nullptr) < 7) return c;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  c.avx2 = os_avx && (ebx & (1u << 5));
  c.fma = c.fma && os_avx;
  c.avx512f = os_avx512 && (ebx & (1u << 16));
  c.avx512bw = os_avx512 && (ebx & (1u << 30));
  c.avx512vl = os_avx512 && (ebx & (1u << 31));
  c.avx512_vnni = os_avx512 && (ecx & (1u << 11));
  const bool amx_tile = edx & (1u << 24);
  const bool amx_bf16 = edx & (1u << 22);
  const bool amx_int8 = edx & (1u << 25);
  unsigned int a1, b1, c1, d1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  c.avx512_bf16 = os_avx512 && (a1 & (1u << 5));
  if (amx_tile && os_amx && request_amx_permission()) {
    c.amx_tile = true;
    c.amx_bf16 = amx_bf16;
    c.amx_int8 = amx_int8;
  }
  return c;
}

}  // namespace

std::vector<std::string> CpuInfo::flag_names() const {
  std::vector<std::string> out;
  const std::pair<bool, const char*> flags[] = {{avx2, "avx2"},
                                                {fma, "fma"},
                                                {avx512f, "avx512f"},
                                                {avx512bw, "avx512bw"},
                                                {avx512vl, "avx512vl"},
                                                {avx512_vnni, "avx512_vnni"},
                                                {avx512_bf16, "avx512_bf16"},
                                                {amx_tile, "amx_tile"},
                                                {amx_bf16, "amx_bf16"},
                                                {amx_int8, "amx_int8"}};
  for (const auto& [on, name] : flags) {
    if (on) out.emplace_back(name);
  }
  return out;
}

const CpuInfo& cpu_info() {
  static const CpuInfo info = detect();
  return info;
}

}  // namespace moebench
