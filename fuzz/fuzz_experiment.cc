// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Fuzz target: the experiment-file loader (TOML text -> expanded, resolved
// cases). Bad input must end in a moebench::Error (a positioned ConfigError
// for the user); anything else (another exception, a crash, a sanitizer
// report, a hang) is a bug. Presets are read from MOEBENCH_HOME/configs.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/experiment/experiment.h"
#include "core/util/error.h"
#include "fuzz/scratch.h"
#include "harness/run/run_case.h"
#include "tools/catalog.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moebench;
  static const ConfigPaths paths = ConfigPaths::defaults();
  // An empty directory, removed when the process exits: `include` and
  // `file` keys resolve against it.
  static const fuzz::ScratchPath scratch("moebench-fuzz-experiment");
  static const std::filesystem::path& base = []() -> const std::filesystem::path& {
    std::filesystem::create_directories(scratch.path);
    return scratch.path;
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    // A lower case cap than run_suite's 100000 keeps one execution short;
    // the cap's own check is the same code.
    const Experiment ex =
        load_experiment_text(text, "<fuzz>", base, paths, &tools::component_catalog(), 1000);
    // What run_suite --dry-run and `config validate` check next: each case's
    // components and footprint (a model at every bound once ran minutes
    // before failing to fit).
    for (const Case& c : ex.cases) {
      try {
        preflight_case(c, tools::component_catalog());
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
    // The expected outcome of bad input: a clear error.
  }
  return 0;
}
