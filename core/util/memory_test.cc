// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/memory.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "core/testing/child.h"
#include "core/util/error.h"

namespace moebench {
namespace {

TEST(Memory, AllocationAboveTheAvailableMemoryIsAClearError) {
  EXPECT_GT(available_memory_bytes(), 0u);
  EXPECT_NO_THROW(check_allocation(1024, "a small table"));
  try {
    check_allocation(uint64_t(1) << 62, "a huge table");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("a huge table: expected at most ", 0), 0u) << msg;
    EXPECT_NE(msg.find("GiB (the memory available), found 4294967296.00 GiB needed"),
              std::string::npos)
        << msg;
  }
}

TEST(Memory, TheEnvironmentCanLowerTheBudget) {
  const uint64_t machine = available_memory_bytes();
  ::setenv("MOEBENCH_MEMORY_LIMIT_MB", "1", 1);
  EXPECT_EQ(available_memory_bytes(), std::min<uint64_t>(machine, uint64_t(1) << 20));
  EXPECT_THROW(check_allocation(uint64_t(2) << 20, "two MiB"), Error);
  ::unsetenv("MOEBENCH_MEMORY_LIMIT_MB");
  EXPECT_NO_THROW(check_allocation(uint64_t(2) << 20, "two MiB"));
}

// Under an address-space limit (ulimit -v) the check counted the host's
// free memory and the run was killed. The limit is counted (in a child: it
// binds the whole process).
TEST(Memory, AnAddressSpaceLimitIsCounted) {
  EXPECT_EQ(testing::exit_code_in_child([] {
              if (!testing::limit_address_space_above_now(256ull << 20)) return 3;
              const uint64_t avail = available_memory_bytes();
              return avail <= (257ull << 20) && avail >= (200ull << 20) ? 0 : 4;
            }),
            0);
}

}  // namespace
}  // namespace moebench
