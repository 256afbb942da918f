// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// A per-process scratch path under the temporary directory, removed (with
// whatever is in it) when the process exits: libFuzzer and the ctest replay
// of fuzz/regressions/ both end with exit(). The pid in the name keeps two
// fuzz processes (or two replays run by ctest -j) apart.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace moebench::fuzz {

struct ScratchPath {
  explicit ScratchPath(const std::string& stem, const std::string& suffix = "")
      : path(std::filesystem::temp_directory_path() /
             (stem + "-" + std::to_string(::getpid()) + suffix)) {}
  ~ScratchPath() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path path;
};

}  // namespace moebench::fuzz
