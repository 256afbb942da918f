// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The search path of presets and the presets themselves: a section's
// `preset` resolved (a preset may extend another), recorded with its file's
// SHA-256, and the model, hardware and strategy loaded by name
// (core/experiment/experiment.h). The expansion of an experiment file into
// cases is experiment.cc.
#include <cstdlib>
#include <mutex>
#include <set>

#include "core/config/validate.h"
#include "core/experiment/experiment.h"
#include "core/experiment/preset_log.h"
#include "core/util/atomic_file.h"
#include "core/util/sha256.h"
#include "core/util/strings.h"

#ifndef MOEBENCH_SOURCE_DIR
#define MOEBENCH_SOURCE_DIR "."
#endif

namespace moebench {
namespace fs = std::filesystem;
using cfg::Value;

// ---------------------------------------------------------------- ConfigPaths

ConfigPaths ConfigPaths::defaults() {
  ConfigPaths p;
  // Generated presets (moebench calibrate's profiles under results/) come
  // first, so they are found without touching the tracked configs/.
  if (const char* extra = std::getenv("MOEBENCH_CONFIG_PATH"); extra && *extra) {
    const std::string v(extra);
    size_t start = 0;
    while (start <= v.size()) {
      const size_t end = std::min(v.find(':', start), v.size());
      const std::string entry = v.substr(start, end - start);
      if (!entry.empty()) {
        std::error_code ec;
        if (!fs::is_directory(entry, ec)) {
          throw Error(
              fmt::format("MOEBENCH_CONFIG_PATH: expected directories holding hardware/, model/, "
                          "... preset folders "
                          "(separated by ':'), found {} at '{}'",
                          file_kind(entry), entry));
        }
        p.roots.push_back(fs::path(entry));
      }
      start = end + 1;
    }
  }
  for (const fs::path& r : tracked_roots()) p.roots.push_back(r);
  return p;
}

std::vector<fs::path> ConfigPaths::tracked_roots() {
  std::vector<fs::path> roots;
  if (const char* home = std::getenv("MOEBENCH_HOME"); home && *home) {
    roots.push_back(fs::path(home) / "configs");
  }
  roots.push_back(fs::path(MOEBENCH_SOURCE_DIR) / "configs");
  roots.push_back(fs::path("configs"));
  return roots;
}

std::optional<fs::path> ConfigPaths::find(const std::string& kind, const std::string& name) const {
  for (const auto& r : roots) {
    const fs::path f = r / kind / (name + ".toml");
    std::error_code ec;
    if (fs::is_regular_file(f, ec)) return f;
  }
  return std::nullopt;
}

std::vector<std::string> ConfigPaths::list(const std::string& kind) const {
  std::set<std::string> names;
  for (const auto& r : roots) {
    std::error_code ec;
    const fs::path d = r / kind;
    if (!fs::is_directory(d, ec)) continue;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      if (e.path().extension() == ".toml") names.insert(e.path().stem().string());
    }
  }
  return {names.begin(), names.end()};
}
// ---------------------------------------------------------------- presets

namespace {

bool looks_like_path(const std::string& name) {
  return name.find('/') != std::string::npos || ends_with(name, ".toml");
}

std::string singular(const std::string& kind) {
  if (kind == "models") return "model";
  if (kind == "strategies") return "strategy";
  if (kind == "workloads") return "synthetic workload";
  return kind;
}

// A preset on an earlier search-path folder hides one of the same name
// further on (a MOEBENCH_CONFIG_PATH "all-cpu" that is really on-demand
// loading): said once per file pair, when their contents differ.
void warn_if_shadowing(const std::string& kind, const std::string& name, const fs::path& used,
                       const ConfigPaths& paths) {
  static std::mutex mu;
  static std::set<std::string> warned, checked;
  {
    // Once per file a process resolves (a sweep resolves a preset per case).
    std::lock_guard<std::mutex> lk(mu);
    if (!checked.insert(kind + "/" + name + "\n" + used.string()).second) return;
  }
  std::error_code ec;
  const fs::path used_canon = fs::weakly_canonical(used, ec);
  for (const auto& r : paths.roots) {
    const fs::path other = r / kind / (name + ".toml");
    if (!fs::is_regular_file(other, ec) || fs::weakly_canonical(other, ec) == used_canon) continue;
    if (read_file(other) == read_file(used)) continue;
    std::lock_guard<std::mutex> lk(mu);
    if (!warned.insert(used.string() + "\n" + other.string()).second) continue;
    fmt::print(stderr,
               "warning: preset '{}' ({}): using {}, which shadows {} of the same name with other "
               "contents (found first on the search path: run_suite --points, "
               "$MOEBENCH_CONFIG_PATH, then configs/); "
               "the manifest and every row record the file used\n",
               name, kind, used.string(), other.string());
  }
}

// The SHA-256 of a preset file, computed once per file and version (its
// identity: size and modification time) in a process: a sweep resolves its
// presets once per case.
std::string preset_sha256(const fs::path& file) {
  static std::mutex mu;
  static std::map<std::string, std::pair<std::string, std::string>> cache;  // path -> stamp, hash
  const std::string stamp = file_stamp(file);
  {
    std::lock_guard<std::mutex> lk(mu);
    auto it = cache.find(file.string());
    if (it != cache.end() && it->second.first == stamp) return it->second.second;
  }
  const std::string hash = sha256_hex(read_file(file));
  std::lock_guard<std::mutex> lk(mu);
  cache[file.string()] = {stamp, hash};
  return hash;
}

fs::path locate_preset(const std::string& kind, const Value& preset_v, const std::string& key,
                       const ConfigPaths& paths, const fs::path& base_dir) {
  if (!preset_v.is_string()) {
    throw ConfigError(preset_v.where(), key,
                      fmt::format("a {} preset name (string)", singular(kind)),
                      preset_v.describe());
  }
  const std::string& name = preset_v.as_string();
  if (looks_like_path(name)) {
    const fs::path p = fs::path(name).is_absolute() ? fs::path(name) : base_dir / name;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      throw ConfigError(preset_v.where(), key, "an existing preset file (a regular file)",
                        fmt::format("{} at '{}'", file_kind(p), p.string()));
    }
    return p;
  }
  if (auto p = paths.find(kind, name)) {
    warn_if_shadowing(kind, name, *p, paths);
    return *p;
  }
  const auto names = paths.list(kind);
  throw ConfigError(preset_v.where(), key,
                    fmt::format("a {} preset in configs/{}/ ({})", singular(kind), kind,
                                names.empty() ? "none found" : join(names, ", ")),
                    "'" + name + "'", closest_name(name, names));
}

Value resolve_preset_depth(const std::string& kind, const Value& section, const std::string& prefix,
                           const ConfigPaths& paths, const fs::path& base_dir, int depth) {
  const Value* preset_v = section.find("preset");
  if (!preset_v) return section;
  const std::string key = cfg::join_key(prefix, "preset");
  if (depth > 8) {
    throw ConfigError(preset_v->where(), key, "a preset chain of at most 8 files",
                      "a longer chain (a cycle?)");
  }
  const fs::path file = locate_preset(kind, *preset_v, key, paths, base_dir);
  if (t_preset_log)
    t_preset_log->push_back({kind, preset_v->as_string(), file.string(), preset_sha256(file)});
  Value base = cfg::load_toml_file(file);
  base = resolve_preset_depth(kind, base, prefix, paths, file.parent_path(), depth + 1);
  base.erase("preset");
  if (!base.find("name")) {
    base.set("name", Value::string(file.stem().string(), Where{file.string(), 1, 1}));
  }
  Value overrides = section;
  overrides.erase("preset");
  if (kind == "strategies") {
    // A component whose kind changes does not inherit the preset's
    // parameters of the old kind (they would be unknown keys of the new one).
    auto kind_of = [](const Value& v) -> std::string {
      if (v.is_string()) return v.as_string();
      if (v.is_table()) {
        if (const Value* k = v.find("kind"); k && k->is_string()) return k->as_string();
      }
      return "";
    };
    for (const char* fam :
         {"placement", "assigner", "cache", "prefetcher", "predictor", "deferral"}) {
      const Value* o = overrides.find(fam);
      const Value* b = base.find(fam);
      if (o && b && !kind_of(*o).empty() && kind_of(*o) != kind_of(*b)) base.erase(fam);
    }
  }
  cfg::merge_into(base, overrides);
  return base;
}

}  // namespace

Value resolve_preset(const std::string& kind, const Value& section, const std::string& prefix,
                     const ConfigPaths& paths, const fs::path& base_dir) {
  if (!section.is_table())
    throw ConfigError(section.where(), prefix, "a table", section.describe());
  return resolve_preset_depth(kind, section, prefix, paths, base_dir, 0);
}

ModelSpec parse_model(const Value& v, const std::string& prefix) {
  ModelSpec m;
  ModelSpec::schema().parse(v, m, prefix);
  m.validate(v, prefix);
  return m;
}

HardwareProfile parse_hardware(const Value& v, const std::string& prefix) {
  HardwareProfile h;
  HardwareProfile::schema().parse(v, h, prefix);
  h.validate(v, prefix);
  return h;
}

namespace {

Value preset_section(const std::string& name_or_path, const std::string& where_name) {
  Value sec = Value::table(Where{where_name});
  sec.set("preset", Value::string(name_or_path, Where{where_name}), Where{where_name});
  return sec;
}

}  // namespace

ModelSpec load_model(const std::string& name_or_path, const ConfigPaths& paths) {
  const Value v = resolve_preset("models", preset_section(name_or_path, "<command line>"), "model",
                                 paths, fs::current_path());
  return parse_model(v, "model");
}

nlohmann::ordered_json ComparisonSpec::to_json() const {
  nlohmann::ordered_json j;
  j["mode"] = mode;
  if (mode == "mechanism") {
    j["stack"] = stack;
    j["cpu_kernel"] = cpu_kernel;
    j["system"] = system;
  }
  return j;
}

HardwareProfile implementation_hardware(const HardwareProfile& hw, const StrategySpec& strategy,
                                        const ModelSpec& model, const ComparisonSpec& comparison,
                                        nlohmann::ordered_json* used) {
  if (comparison.mode == "mechanism") {
    // Every strategy on the one named implementation, whatever its own.
    return with_implementation(hw, comparison.stack, comparison.cpu_kernel,
                               to_string(model.expert_dtype),
                               comparison.system.empty() ? kAnySystem : comparison.system, used);
  }
  return with_implementation(hw, strategy.implementation.stack, strategy.implementation.cpu_kernel,
                             to_string(model.expert_dtype), strategy.system, used);
}

void resolve_planning(HardwareProfile& h, const Value& hw_v, const ConfigPaths& paths,
                      const fs::path& base_dir) {
  if (h.planning.preset.empty()) return;
  const Value* planning = hw_v.find("planning");
  const Value* at = planning && planning->is_table() ? planning->find("preset") : nullptr;
  const Where where = at ? at->where() : hw_v.where();
  Value sec = Value::table(where);
  sec.set("preset", at ? *at : Value::string(h.planning.preset, where), where);
  const Value est_v = resolve_preset("hardware", sec, "hardware.planning", paths, base_dir);
  auto est = std::make_shared<HardwareProfile>(parse_hardware(est_v, "hardware.planning"));
  if (!est->planning.exact()) {
    throw ConfigError(where, "hardware.planning.preset",
                      "a profile whose components plan with its own costs (no [planning])",
                      fmt::format("'{}' with a [planning] of its own", est->name));
  }
  if (est->has_gpu() != h.has_gpu()) {
    throw ConfigError(
        where, "hardware.planning.preset",
        fmt::format("a profile {} a GPU, as '{}'", h.has_gpu() ? "with" : "without", h.name),
        fmt::format("'{}' ({} GPU)", est->name, est->gpu.count));
  }
  h.planning.estimate = std::move(est);
}

HardwareProfile load_hardware(const std::string& name_or_path, const ConfigPaths& paths) {
  const Value v = resolve_preset("hardware", preset_section(name_or_path, "<command line>"),
                                 "hardware", paths, fs::current_path());
  HardwareProfile h = parse_hardware(v, "hardware");
  resolve_planning(h, v, paths, fs::current_path());
  return h;
}

StrategySpec load_strategy(const std::string& name_or_path, const ConfigPaths& paths,
                           const ComponentCatalog* catalog) {
  const Value v = resolve_preset("strategies", preset_section(name_or_path, "<command line>"),
                                 "strategy", paths, fs::current_path());
  return StrategySpec::parse(v, "strategy", catalog);
}

}  // namespace moebench
