// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/artefact_cache.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

namespace moebench {
namespace {

TEST(ArtefactCache, ScopedFolderIsRestored) {
  const auto before = artefact_cache_dir();
  {
    ScopedArtefactCache c("/tmp/moebench-artefact-cache-test");
    EXPECT_EQ(artefact_cache_dir(), std::filesystem::path("/tmp/moebench-artefact-cache-test"));
  }
  EXPECT_EQ(artefact_cache_dir(), before);
}

// Two cases that need the same artefact: the second waits for the first to
// finish (and then finds its file) instead of training it again.
TEST(ArtefactCache, LockMakesTheSecondHolderWait) {
  const auto path = std::filesystem::temp_directory_path() / "moebench_artefact_lock_test.lock";
  std::atomic<bool> first_done{false};
  std::atomic<bool> second_saw_first_done{false};
  std::atomic<bool> first_holds{false};
  std::thread first([&] {
    ArtefactLock lock(path);
    EXPECT_TRUE(lock.held());
    first_holds = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    first_done = true;
  });
  while (!first_holds) std::this_thread::yield();
  {
    ArtefactLock lock(path);
    EXPECT_TRUE(lock.held());
    second_saw_first_done = first_done.load();
  }
  first.join();
  EXPECT_TRUE(second_saw_first_done);
  std::filesystem::remove(path);
}

TEST(ArtefactCache, LockThatCannotBeMadeLocksNothing) {
  ArtefactLock lock("/nonexistent-folder-for-moebench/x.lock");
  EXPECT_FALSE(lock.held());
}

}  // namespace
}  // namespace moebench
