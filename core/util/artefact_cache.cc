// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/artefact_cache.h"

#include <cerrno>
#include <cstdlib>
#include <mutex>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace moebench {

namespace {
std::mutex g_mu;
bool g_set = false;
std::filesystem::path g_dir;
}  // namespace

std::filesystem::path artefact_cache_dir() {
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_set) return g_dir;
  }
  if (const char* c = std::getenv("MOEBENCH_CACHE"); c && *c) return c;
  return {};
}

ScopedArtefactCache::ScopedArtefactCache(std::filesystem::path dir) {
  std::lock_guard<std::mutex> lk(g_mu);
  had_ = g_set;
  previous_ = g_dir;
  g_set = true;
  g_dir = std::move(dir);
}

ScopedArtefactCache::~ScopedArtefactCache() {
  std::lock_guard<std::mutex> lk(g_mu);
  g_set = had_;
  g_dir = previous_;
}

ArtefactLock::ArtefactLock(const std::filesystem::path& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return;
  int rc;
  do {
    rc = ::flock(fd_, LOCK_EX);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

ArtefactLock::~ArtefactLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace moebench
