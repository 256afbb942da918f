#include "core/util/memory.h"

#include <gtest/gtest.h>

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
    EXPECT_NE(msg.find("GiB (the memory available), found 4294967296.00 GiB needed"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace moebench
