// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Memory checks before large allocations: a size computed from user input
// (a trace's metadata, a sweep) is compared with the memory this machine has
// free, so a hostile or mistaken input gets a clear error instead of an
// out-of-memory kill or std::bad_alloc.
#include <cstdint>
#include <string>

namespace moebench {

// The memory this process can still allocate, in bytes: the least of
// MemAvailable from /proc/meminfo (physical memory if that cannot be read),
// what the process's memory cgroup (v1 or v2, and its parents) still allows,
// and what an address-space or data-size rlimit leaves; lowered to
// $MOEBENCH_MEMORY_LIMIT_MB when that is set.
uint64_t available_memory_bytes();

// Throws moebench::Error naming `what` when `bytes` exceeds the available memory.
void check_allocation(uint64_t bytes, const std::string& what);

}  // namespace moebench
