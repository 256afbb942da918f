// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Fuzz target: the experiment-file loader (TOML text -> expanded, resolved
// cases). Bad input must end in a moebench::Error (a positioned ConfigError
// for the user); anything else (another exception, a crash, a sanitizer
// report, a hang) is a bug. Presets are read from MOEBENCH_HOME/configs. The
// served workload keys are seeded by fuzz/corpus/experiment/served-*.toml;
// the requests file they name is the scratch folder's requests.jsonl.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
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
  // A requests file the served workload keys can name (arrivals = "requests.jsonl").
  static const std::filesystem::path& base = []() -> const std::filesystem::path& {
    std::filesystem::create_directories(scratch.path);
    std::ofstream(scratch.path / "requests.jsonl")
        << "{\"arrival_time\": 1733558400.0, \"prompt_len\": 16, \"output_len\": 8}\n"
           "{\"arrival_time\": 1733558400.25, \"prompt_len\": 64, \"output_len\": 2}\n"
           "{\"arrival_time\": 1733558401.5, \"prompt_len\": 3, \"output_len\": 33}\n";
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
