// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/atomic_file.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/testing/temp_dir.h"
#include "core/util/error.h"

namespace moebench {
namespace {

TEST(AtomicFile, WritesAndReplaces) {
  testing::TempDir dir;
  const auto p = dir / "sub" / "f.txt";
  write_file_atomic(p, "hello");
  EXPECT_EQ(read_file(p), "hello");
  write_file_atomic(p, "world!");
  EXPECT_EQ(read_file(p), "world!");
  // No temporaries left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir / "sub")) ++files;
  EXPECT_EQ(files, 1);
}

TEST(AtomicFile, UncommittedWriterLeavesNothing) {
  testing::TempDir dir;
  const auto p = dir / "f.bin";
  {
    AtomicFileWriter w(p);
    w.write("partial");
  }
  EXPECT_FALSE(std::filesystem::exists(p));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(AtomicFile, PwriteOverwritesReservedHeader) {
  testing::TempDir dir;
  const auto p = dir / "f.bin";
  AtomicFileWriter w(p);
  w.write("XXXXbody");
  w.pwrite(0, "head", 4);
  w.commit();
  EXPECT_EQ(read_file(p), "headbody");
}

// A writer killed with SIGKILL in the middle of a large write must leave the
// previous complete file at the destination, never a prefix of the new one.
TEST(AtomicFile, KillDuringWriteKeepsOldFile) {
  testing::TempDir dir;
  const auto p = dir / "result.json";
  write_file_atomic(p, "old complete content");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    AtomicFileWriter w(p);
    const std::string chunk(1 << 20, 'n');
    w.write(chunk);
    (void)!::write(ready[1], "r", 1);  // tell the parent we are mid-write
    for (;;) w.write(chunk);           // keep writing until killed
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(read_file(p), "old complete content");
  // The killed writer's temporary is cleaned up by the next run.
  EXPECT_GE(remove_stale_temporaries(dir.path()), 1);
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1);
}

TEST(AtomicFile, ReadMissingFileIsUserError) {
  testing::TempDir dir;
  try {
    read_file(dir / "nope.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "nope.txt").string() + ": expected a readable file, found no such file");
  }
}

}  // namespace
}  // namespace moebench
