// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Where trained artefacts (SMoE's linear predictor, trained on a case's
// calibration workload) are kept between cases and runs. Training is
// deterministic, so the cache changes no result, only time.
//
// run_suite sets it to <results root>/.cache for its run (ScopedArtefactCache),
// so nothing it writes lands outside the results folder it names, unless
// $MOEBENCH_CACHE names another folder; elsewhere $MOEBENCH_CACHE names it,
// and without either nothing is cached.

#include <filesystem>

namespace moebench {

// The cache folder now ("" = no cache).
std::filesystem::path artefact_cache_dir();

// Sets the cache folder for its lifetime (then restores the previous one).
class ScopedArtefactCache {
 public:
  explicit ScopedArtefactCache(std::filesystem::path dir);
  ~ScopedArtefactCache();
  ScopedArtefactCache(const ScopedArtefactCache&) = delete;
  ScopedArtefactCache& operator=(const ScopedArtefactCache&) = delete;

 private:
  std::filesystem::path previous_;
  bool had_ = false;
};

// An exclusive lock on `path` (created if missing) for its lifetime, between
// processes and threads alike (flock): two cases that need the same artefact
// train it once, the second waiting and then loading it. If the lock file
// cannot be made, it locks nothing (that only costs a second training).
class ArtefactLock {
 public:
  explicit ArtefactLock(const std::filesystem::path& path);
  ~ArtefactLock();
  ArtefactLock(const ArtefactLock&) = delete;
  ArtefactLock& operator=(const ArtefactLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace moebench
