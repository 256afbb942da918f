// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/strings.h"

#include <gtest/gtest.h>

namespace moebench {
namespace {

TEST(Strings, EditDistanceCountsInsertDeleteSubstituteAndSwap) {
  EXPECT_EQ(edit_distance("", ""), 0);
  EXPECT_EQ(edit_distance("abc", "abc"), 0);
  EXPECT_EQ(edit_distance("abc", "abd"), 1);
  EXPECT_EQ(edit_distance("abc", "ab"), 1);
  EXPECT_EQ(edit_distance("ab", "abc"), 1);
  EXPECT_EQ(edit_distance("abc", "acb"), 1);  // adjacent swap
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
}

TEST(Strings, ClosestNameSuggestsPlausibleTyposOnly) {
  const std::vector<std::string> names = {"mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b"};
  EXPECT_EQ(closest_name("mixtrl-8x7b", names), "mixtral-8x7b");
  EXPECT_EQ(closest_name("deepseek-v2", names), "deepseek-v3");
  EXPECT_EQ(closest_name("llama", names), "");
  EXPECT_EQ(closest_name("x", std::vector<std::string>{}), "");
}

TEST(Strings, JoinSplitTrim) {
  const std::vector<std::string> v = {"a", "b"};
  EXPECT_EQ(join(v), "a, b");
  EXPECT_EQ(join(v, "|", true), "'a'|'b'");
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(trim("  x y \n"), "x y");
  EXPECT_TRUE(starts_with("abc", "ab"));
  EXPECT_FALSE(ends_with("abc", "ab"));
}

}  // namespace
}  // namespace moebench
