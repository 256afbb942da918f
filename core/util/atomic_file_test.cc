// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/atomic_file.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

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
  // A user's file that only looks like a temporary is not touched.
  std::ofstream(dir / "draft.tmp.999999.0") << "a user's draft";
  EXPECT_EQ(remove_stale_temporaries(dir.path(), [](const std::string& n) { return n == "x"; }), 0);
  EXPECT_GE(
      remove_stale_temporaries(dir.path(), [](const std::string& n) { return n == "result.json"; }),
      1);
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 2);
  EXPECT_EQ(read_file(dir / "draft.tmp.999999.0"), "a user's draft");
}

// The atomic rename replaces whatever is at the path: a FIFO, a folder or a
// link (as root, a device) would become a regular file. Only a regular file
// is replaced; the others are refused by name and left as they were.
TEST(AtomicFile, RefusesToReplaceAnythingButARegularFile) {
  testing::TempDir dir;
  const auto fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto folder = dir / "folder";
  std::filesystem::create_directory(folder);
  write_file_atomic(dir / "target", "kept");
  const auto link = dir / "link";
  std::filesystem::create_symlink(dir / "target", link);
  const std::pair<std::filesystem::path, std::string> cases[] = {
      {fifo, "a FIFO (named pipe)"},
      {folder, "a directory"},
      {link, "a symbolic link (to a regular file)"},
      {"/dev/null", "a character device"}};
  for (const auto& [p, kind] : cases) {
    try {
      write_file_atomic(p, "new");
      ADD_FAILURE() << p << " was replaced";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("expected a new file or a regular file to replace, "
                                           "found " +
                                           kind),
                std::string::npos)
          << e.what();
    }
  }
  struct stat sb {};
  ASSERT_EQ(::lstat(fifo.c_str(), &sb), 0);
  EXPECT_TRUE(S_ISFIFO(sb.st_mode));
  ASSERT_EQ(::lstat(link.c_str(), &sb), 0);
  EXPECT_TRUE(S_ISLNK(sb.st_mode));
  EXPECT_EQ(read_file(dir / "target"), "kept");
  ASSERT_EQ(::stat("/dev/null", &sb), 0);
  EXPECT_TRUE(S_ISCHR(sb.st_mode));
  int files = 0;  // no temporary left behind
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 4);
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
