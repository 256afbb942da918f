// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/paths.h"

#include <sys/stat.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/testing/temp_dir.h"
#include "core/util/atomic_file.h"
#include "core/util/cancel.h"
#include "core/util/detmath.h"
#include "core/util/error.h"

namespace moebench {
namespace {

std::string child_error(const std::string& name) {
  try {
    child_path("results", name, "suite.name");
    return "<ok>";
  } catch (const Error& e) {
    return e.what();
  }
}

// `[suite] name = ".."` wrote into the results root's parent, and a
// composite suite's "../../../../root/X" and "/tmp/X" wrote there.
TEST(Paths, ANameThatWouldLeaveItsFolderIsRefused) {
  for (const std::string& bad : std::vector<std::string>{
           "..", ".", "../../../../root/X", "/tmp/X", "a/b", "a\\b", ".hidden", "",
           std::string("a\x01"
                       "b"),
           std::string(200, 'a'), "tab\there", "spa ce", "caf\xc3\xa9"}) {
    EXPECT_FALSE(name_problem(bad).empty()) << bad;
    const std::string e = child_error(bad);
    EXPECT_EQ(e.rfind("suite.name: expected a name of 1 to 128 letters, digits", 0), 0u) << e;
  }
  EXPECT_NE(child_error("..").find("found '..': it names the folder itself or its parent"),
            std::string::npos);
  EXPECT_NE(child_error("/tmp/X").find("found '/tmp/X': it holds a path separator ('/')"),
            std::string::npos);
  // A control character is shown escaped, not sent to the terminal.
  EXPECT_NE(child_error(std::string("a\x1b[2Jb")).find("'a\\x1b[2Jb'"), std::string::npos)
      << child_error("a\x1b[2Jb");
  for (const std::string& good : std::vector<std::string>{"smoke", "dali-table4", "hybrimoe_fig7.8",
                                                          "a", std::string(128, 'z')}) {
    EXPECT_EQ(name_problem(good), "") << good;
    EXPECT_EQ(child_path("results", good, "suite.name"), std::filesystem::path("results") / good);
  }
}

// `trace stats` on a FIFO blocked forever; a folder, a FIFO and
// /dev/zero were all "no file". Each reader now says what it found, without
// opening it.
TEST(Paths, WhatIsNotARegularFileIsNamedAndNeverOpened) {
  testing::TempDir dir;
  const auto fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(file_kind(fifo), "a FIFO (named pipe)");
  EXPECT_EQ(file_kind(dir.path()), "a directory");
  EXPECT_EQ(file_kind("/dev/zero"), "a character device");
  EXPECT_EQ(file_kind(dir / "none"), "no such file");
  EXPECT_EQ(file_kind(dir.write("f.txt", "x")), "a regular file");
  std::filesystem::create_symlink(dir / "gone", dir / "dangling");
  EXPECT_EQ(file_kind(dir / "dangling"), "a symbolic link to nothing");
  // read_file returns at once (a blocking open of the FIFO would hang the test).
  try {
    read_file(fifo);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              fifo.string() + ": expected a readable file, found a FIFO (named pipe)");
  }
  EXPECT_THROW(read_file("/dev/zero"), Error);
  EXPECT_THROW(require_regular_file(dir.path()), Error);
  EXPECT_EQ(read_file(dir / "f.txt"), "x");
}

// Found by make fuzz: det::exp of a NaN converted NaN to int, undefined
// behaviour; it is total now.
TEST(DetMath, ExpIsTotalOverNanAndInfinities) {
  EXPECT_TRUE(std::isnan(det::exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(det::exp(-std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(det::exp(-std::numeric_limits<float>::infinity()), det::exp(-1000.0f));
  EXPECT_LT(det::exp(-std::numeric_limits<float>::infinity()), 1e-37f);
  EXPECT_EQ(det::exp(std::numeric_limits<float>::infinity()), det::exp(1000.0f));
  EXPECT_GT(det::exp(std::numeric_limits<float>::infinity()), 1e38f);
  EXPECT_NEAR(det::exp(1.0f), 2.7182818f, 1e-6f);
  EXPECT_EQ(det::exp(0.0f), 1.0f);
}

TEST(Cancel, TheFlagIsSetClearedAndThrown) {
  clear_cancel();
  EXPECT_FALSE(cancel_requested());
  EXPECT_NO_THROW(throw_if_cancelled());
  request_cancel();
  EXPECT_TRUE(cancel_requested());
  EXPECT_THROW(throw_if_cancelled(), Cancelled);
  clear_cancel();
  EXPECT_NO_THROW(throw_if_cancelled());
}

}  // namespace
}  // namespace moebench
