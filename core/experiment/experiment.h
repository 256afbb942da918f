// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Experiment files (suites/*.toml): which model, hardware, workload and
// strategies to run, and over which sweep axes.
//
//   [suite]      name, backend, repetitions, warmup, seed, ...
//   [model]      preset = "mixtral-8x7b"   plus any ModelSpec key as an override
//   [hardware]   preset = "hybrimoe-a6000" plus overrides
//   [workload]   WorkloadSpec keys
//   strategies = ["all-cpu", "gpu-ondemand"]        and/or
//   [[strategy]] preset = "hybrimoe"  plus overrides (residency.*, components)
//
// Any scalar key written as an array becomes a sweep axis; the cartesian
// product of all axes is run (llama-bench style), with the first axis in the
// file outermost and the strategies innermost, so every strategy runs on
// exactly the same model, hardware and workload next to each other.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/hardware_profile.h"
#include "core/config/model_spec.h"
#include "core/config/strategy_spec.h"
#include "core/config/workload_spec.h"

namespace moebench {

// Where presets are looked up: each root holds models/, hardware/, strategies/;
// the first root holding a name wins.
struct ConfigPaths {
  std::vector<std::filesystem::path> roots;

  // The folders of $MOEBENCH_CONFIG_PATH (':'-separated; generated presets
  // such as a calibrated profile under results/), then $MOEBENCH_HOME/configs,
  // then the source tree's configs/, then ./configs. Throws moebench::Error
  // for a MOEBENCH_CONFIG_PATH entry that is not a directory.
  static ConfigPaths defaults();
  // The tracked preset folders of defaults() (all but MOEBENCH_CONFIG_PATH's):
  // $MOEBENCH_HOME/configs, the source tree's configs/, ./configs. No tool
  // writes into them (moebench calibrate refuses an --out there).
  static std::vector<std::filesystem::path> tracked_roots();
  std::optional<std::filesystem::path> find(const std::string& kind, const std::string& name) const;
  // Preset names of a kind, sorted, without duplicates.
  std::vector<std::string> list(const std::string& kind) const;
};

// Which comparison a case belongs to. "as-published": each
// strategy runs on its own implementation (docs/COST_MODEL.md,
// "Implementations"), and an entry a profile fitted on one system's measured
// times applies to that system only. "mechanism": every strategy runs on one
// implementation, named here, so results differ only by what the
// strategies decide. Recorded in the case id and every row (run.comparison).
struct ComparisonSpec {
  std::string mode = "as-published";   // "as-published" | "mechanism"
  std::string stack = "generic";       // mechanism: the one stack every strategy runs on
  std::string cpu_kernel = "generic";  // mechanism: the one CPU kernel family
  std::string system;  // mechanism: entries measured on this system apply ("" = general ones)
  nlohmann::ordered_json to_json() const;
};
inline const std::vector<std::string>& comparison_modes() {
  static const std::vector<std::string> m = {"as-published", "mechanism"};
  return m;
}

struct SuiteSpec {
  std::string name;
  std::string description;
  std::string reproduces;       // e.g. "HybriMoE Table III"
  std::string backend = "sim";  // "sim" | "real"
  int64_t repetitions = 1;
  int64_t warmup = 0;
  int64_t seed = 1;       // default workload seed
  int64_t seeds = 1;      // workload seeds per case: seed, seed + 1, ... (synthetic workloads)
  bool timeline = false;  // write a Chrome-trace timeline per case
  // The real backend (harness/backend/real_cpu_executor.h).
  std::string real_kernel =
      "auto";  // CPU expert kernel name, or "auto" (the own kernel for the dtype)
  double real_weights_gib = 4.0;  // distinct expert weight buffers, at most this many GiB
  int64_t real_threads = 0;       // 0 = the hardware profile's cpu.threads
  // The comparisons every case runs in (`comparison = "mechanism"`, or a list
  // of both: a sweep axis, suite.comparison) and the mechanism's implementation.
  std::vector<std::string> comparisons = {"as-published"};
  std::string mechanism_stack = "generic";
  std::string mechanism_cpu_kernel = "generic";
  std::string mechanism_system;
  static const cfg::Schema<SuiteSpec>& schema();
};

// A preset file a case was resolved from: its kind ("models", "hardware",
// "strategies"), the name or path the experiment gave, the file found (the
// first on the search path: $MOEBENCH_CONFIG_PATH, then the built-in
// configs/) and the SHA-256 of its bytes.
struct PresetFile {
  std::string kind, name, path, sha256;
};

// One point of the sweep, fully resolved.
struct Case {
  std::string id;    // first 16 hex digits of SHA-256 of the resolved config
  size_t index = 0;  // position in expansion order
  ModelSpec model;
  HardwareProfile hardware;
  WorkloadSpec workload;
  StrategySpec strategy;
  std::string backend;
  ComparisonSpec comparison;
  std::string real_kernel = "auto";
  double real_weights_gib = 4.0;
  int64_t real_threads = 0;
  int64_t repetitions = 1;
  int64_t warmup = 0;
  bool timeline = false;
  std::vector<std::pair<std::string, std::string>>
      axes;  // sweep coordinates ("workload.prompt_len", "128")
  // Experiment files that define this case: the suite's own name, or, for a
  // composite suite (include = [...]), every included part that has it.
  std::vector<std::string> parts;
  nlohmann::ordered_json
      config;  // {run: {backend, repetitions, warmup}, model, hardware, workload, strategy}
  std::filesystem::path base_dir;  // directory of the experiment file (relative paths)
  // Every trace file the case reads (resolved path) and its identity when
  // the suite was loaded (core/util/paths.h, file_stamp): a file that
  // changes under the run fails the case instead of giving other results.
  std::map<std::string, std::string> file_stamps;
  // Every preset file the case's model, hardware and strategy came from (a
  // file on $MOEBENCH_CONFIG_PATH may shadow a built-in of the same name):
  // in the manifest and, briefly, in every row.
  std::vector<PresetFile> presets;
};

struct Experiment {
  std::filesystem::path file;
  SuiteSpec suite;
  std::vector<Case> cases;
};

// Loads, expands and resolves an experiment file. Every error is a
// ConfigError with file, line, column and key. A composite file has only
// [suite] and `include = ["part.toml", ...]` (paths relative to it): its
// cases are the parts' cases in order, a case that several parts share
// appearing once with every part in Case::parts.
// `max_cases`: the most cases the file (or composite suite) may expand to;
// a larger sweep is refused with the axes' sizes before any case is built
// (run_suite --max-cases overrides the default).
inline constexpr uint64_t kMaxCases = 100000;

Experiment load_experiment(const std::filesystem::path& file, const ConfigPaths& paths,
                           const ComponentCatalog* catalog, uint64_t max_cases = kMaxCases);
// Same from TOML text (tests, embedded defaults); `name` is used in messages.
Experiment load_experiment_text(const std::string& text, const std::string& name,
                                const std::filesystem::path& base_dir, const ConfigPaths& paths,
                                const ComponentCatalog* catalog, uint64_t max_cases = kMaxCases);

// Resolves one section that may say `preset = "<name>"` (kind is "models",
// "hardware" or "strategies"): the preset file, with the section's other
// keys merged on top. Presets may themselves name a parent preset.
cfg::Value resolve_preset(const std::string& kind, const cfg::Value& section,
                          const std::string& prefix, const ConfigPaths& paths,
                          const std::filesystem::path& base_dir);

// Loads a preset by name (tools, tests).
ModelSpec load_model(const std::string& name_or_path, const ConfigPaths& paths);
HardwareProfile load_hardware(const std::string& name_or_path, const ConfigPaths& paths);
// `hw` as `strategy`'s implementation runs on it for `model`'s expert dtype
// (with_implementation; `used` receives what was applied). The one place
// that maps a strategy onto a profile: case resolution, run_case and
// `moebench config cost` all call it.
HardwareProfile implementation_hardware(const HardwareProfile& hw, const StrategySpec& strategy,
                                        const ModelSpec& model, const ComparisonSpec& comparison,
                                        nlohmann::ordered_json* used = nullptr);
StrategySpec load_strategy(const std::string& name_or_path, const ConfigPaths& paths,
                           const ComponentCatalog* catalog);

// Parses an already-resolved section.
ModelSpec parse_model(const cfg::Value& v, const std::string& prefix);
HardwareProfile parse_hardware(const cfg::Value& v, const std::string& prefix);
// Reads the profile the components plan with (hardware.planning.preset, a
// name or a file relative to base_dir) into h.planning.estimate; refuses one
// with a [planning] of its own or that differs in having a GPU.
void resolve_planning(HardwareProfile& h, const cfg::Value& hw_v, const ConfigPaths& paths,
                      const std::filesystem::path& base_dir);

}  // namespace moebench
