// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/experiment/experiment.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "core/config/validate.h"
#include "core/experiment/requests.h"
#include "core/trace/trace_workload.h"
#include "core/util/atomic_file.h"
#include "core/util/json_text.h"
#include "core/util/paths.h"
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
  // Generated presets (moebench calibrate's profiles under results/, issue
  // 43) come first, so they are found without touching the tracked configs/.
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

// ---------------------------------------------------------------- SuiteSpec

const cfg::Schema<SuiteSpec>& SuiteSpec::schema() {
  using S = SuiteSpec;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("suite");
    s.string("name", &S::name, "Suite name; results go to results/<name>/ (default: file name).")
        .string("description", &S::description, "What the suite measures.")
        .string("reproduces", &S::reproduces, "Paper figure or table this suite reproduces.")
        .choice("backend", &S::backend, {"sim", "real"},
                "Simulated (deterministic cost model) or real (threads, kernels, CUDA) backend.")
        .integer("repetitions", &S::repetitions, "Measured repetitions per case.",
                 between(1, 10000))
        .integer("warmup", &S::warmup, "Unmeasured warm-up repetitions per case.",
                 between(0, 10000))
        .integer("seed", &S::seed, "Default workload seed for cases that do not set one.",
                 at_least(0))
        .integer(
            "seeds", &S::seeds,
            "Workload seeds per case (seed, seed + 1, ...): every synthetic-workload case whose "
            "[workload] sets "
            "no seed runs once per seed, so verdicts can require an effect to hold across seeds.",
            between(1, 1000))
        .boolean("timeline", &S::timeline, "Write a Chrome-trace timeline (Perfetto) per case.")
        .string("real_kernel", &S::real_kernel,
                "Real backend: CPU expert kernel, a name of `moebench kernels` (the kernel table, "
                "kernels/cpu/kernel_registry.cc; name:N for a switching kernel) or \"auto\": the "
                "fastest measured per token count on a calibrated profile, else the table's "
                "highest-ranked kernel this CPU runs for the dtype (docs/BACKENDS.md).")
        .number("real_weights_gib", &S::real_weights_gib,
                "Real backend: memory for distinct expert weight buffers, GiB; (layer, expert) "
                "pairs are mapped "
                "onto them round-robin (docs/BACKENDS.md).",
                positive())
        .integer("real_threads", &S::real_threads,
                 "Real backend: threads running each expert task (0 = the hardware profile's "
                 "cpu.threads).",
                 between(0, 1024))
        .string_list(
            "comparison", &S::comparisons,
            "\"as-published\" (each strategy on its own implementation; a fitted profile entry "
            "only for "
            "the system it was measured on) or \"mechanism\" (every strategy on one "
            "implementation, "
            "mechanism_*), or a list of both: a sweep axis, suite.comparison (docs/COST_MODEL.md, "
            "\"Two comparisons\").")
        .string("mechanism_stack", &S::mechanism_stack,
                "The stack every strategy runs on in the mechanism comparison (\"generic\": the "
                "profile's own "
                "[gpu] values).")
        .string("mechanism_cpu_kernel", &S::mechanism_cpu_kernel,
                "The CPU kernel family every strategy runs on in the mechanism comparison "
                "(\"generic\": the "
                "profile's own [cpu] values).")
        .string(
            "mechanism_system", &S::mechanism_system,
            "In the mechanism comparison, the system whose measured entries of mechanism_stack and "
            "mechanism_cpu_kernel apply to every strategy (\"\": a general entry where there is "
            "one).");
    return s;
  }();
  return s;
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

// While a case's sections are resolved: the preset files they come from.
thread_local std::vector<PresetFile>* t_preset_log = nullptr;

// Records the preset files resolved while it lives (one case's sections).
class PresetLog {
 public:
  explicit PresetLog(std::vector<PresetFile>* out) : prev_(t_preset_log) { t_preset_log = out; }
  ~PresetLog() { t_preset_log = prev_; }
  PresetLog(const PresetLog&) = delete;
  PresetLog& operator=(const PresetLog&) = delete;

 private:
  std::vector<PresetFile>* prev_;
};

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

// ---------------------------------------------------------------- expansion

namespace {

using Path = std::vector<std::string>;
using IsList = std::function<bool(const Path&)>;

struct AxisDef {
  Path path;  // keys inside the section
  std::vector<Value> values;
  Where where;
  std::string label;  // dotted key shown in results ("workload.prompt_len")
};

bool schema_is_list(const cfg::SchemaInfo* s, const Path& path) {
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    if (!s) return false;
    s = s->nested(path[i]);
  }
  return s && s->is_list_field(path.back());
}

void collect_axes(const Value& table, Path& path, const IsList& is_list, const std::string& label,
                  std::vector<AxisDef>& out) {
  for (const auto& e : table.entries()) {
    path.push_back(e.key);
    const std::string key = cfg::join_key(label, e.key);
    const Value& v = e.value;
    bool axis = false;
    if (v.is_array()) {
      if (!is_list(path)) {
        axis = true;
      } else {
        // A list-valued field: an array of arrays sweeps over lists.
        axis = !v.items().empty() && std::all_of(v.items().begin(), v.items().end(),
                                                 [](const Value& x) { return x.is_array(); });
      }
    }
    if (axis) {
      if (v.items().empty()) {
        throw ConfigError(v.where(), key, "at least one value for this sweep axis",
                          "an empty array");
      }
      out.push_back(AxisDef{path, v.items(), v.where(), key});
    } else if (v.is_table()) {
      collect_axes(v, path, is_list, key, out);
    }
    path.pop_back();
  }
}

void set_path(Value& root, const Path& path, const Value& v) {
  Value* t = &root;
  for (size_t i = 0; i + 1 < path.size(); ++i) t = t->find(path[i]);
  t->set(path.back(), v);
}

std::string show_value(const Value& v) {
  if (v.is_string()) return v.as_string();
  return json_text(v.to_json());
}

// Enumerates the cartesian product of `axes` (first axis outermost).
template <class F>
void for_each_combination(const std::vector<AxisDef>& axes, F&& f) {
  std::vector<size_t> idx(axes.size(), 0);
  while (true) {
    f(idx);
    size_t k = axes.size();
    while (k > 0) {
      --k;
      if (++idx[k] < axes[k].values.size()) break;
      idx[k] = 0;
      if (k == 0) return;
    }
    if (axes.empty()) return;
  }
}

struct Section {
  Value table;
  std::vector<AxisDef> axes;
};

Section section_of(const Value& root, const std::string& name, const cfg::SchemaInfo& schema) {
  Section s;
  if (const Value* v = root.find(name)) {
    if (!v->is_table()) throw ConfigError(v->where(), name, "a table", v->describe());
    s.table = *v;
  } else {
    s.table = Value::table(root.where());
  }
  Path path;
  collect_axes(
      s.table, path, [&](const Path& p) { return schema_is_list(&schema, p); }, name, s.axes);
  return s;
}

struct StrategyEntry {
  Value table;  // as written in the experiment (may hold arrays)
  std::vector<AxisDef> axes;
};

IsList strategy_is_list(const Value& merged, const ComponentCatalog* catalog) {
  return [&merged, catalog](const Path& p) -> bool {
    if (p.empty()) return false;
    if (p[0] == "residency") return p.size() == 2 && ResidencySpec::schema().is_list_field(p[1]);
    const auto& fams = component_families();
    if (std::find(fams.begin(), fams.end(), p[0]) == fams.end()) return false;
    if (p.size() < 2 || p[1] == "kind" || !catalog) return false;
    const Value* comp = merged.find(p[0]);
    if (!comp || !comp->is_table()) return false;
    const Value* kind = comp->find("kind");
    if (!kind) return false;
    const Value& k = kind->is_array() && !kind->items().empty() ? kind->items()[0] : *kind;
    return k.is_string() && catalog->is_list_param(p[0], k.as_string(), p[1]);
  };
}

std::vector<StrategyEntry> strategy_entries(const Value& root, const ConfigPaths& paths,
                                            const fs::path& base_dir,
                                            const ComponentCatalog* catalog) {
  std::vector<StrategyEntry> out;
  // [strategy_defaults]: keys every strategy of the file gets unless it sets
  // them itself (above the preset, below the strategy's own overrides).
  const Value* defaults = root.find("strategy_defaults");
  if (defaults) {
    if (!defaults->is_table()) {
      throw ConfigError(defaults->where(), "strategy_defaults", "a table of strategy keys",
                        defaults->describe());
    }
    for (const char* k : {"preset", "name"}) {
      if (const auto* e = defaults->find_entry(k)) {
        throw ConfigError(e->key_where, std::string("strategy_defaults.") + k,
                          "keys shared by every strategy (not its preset or name)",
                          e->value.describe());
      }
    }
  }
  auto add = [&](Value t, const std::string& label) {
    StrategyEntry e;
    if (defaults) {
      Value merged = *defaults;
      cfg::merge_into(merged, t);
      t = std::move(merged);
    }
    e.table = std::move(t);
    // Which keys are lists depends on the component kinds, which may come
    // from the preset: look at the preset merged with the overrides.
    Value probe = e.table;
    for (auto& entry : probe.entries()) {
      if (entry.key == "preset" && entry.value.is_array()) entry.value = entry.value.items().at(0);
    }
    const Value merged = resolve_preset("strategies", probe, label, paths, base_dir);
    Path path;
    collect_axes(e.table, path, strategy_is_list(merged, catalog), label, e.axes);
    out.push_back(std::move(e));
  };
  for (const auto& e : root.entries()) {
    if (e.key == "strategies") {
      if (!e.value.is_array()) {
        throw ConfigError(e.value.where(), "strategies", "an array of strategy preset names",
                          e.value.describe());
      }
      for (size_t i = 0; i < e.value.items().size(); ++i) {
        const Value& x = e.value.items()[i];
        if (!x.is_string()) {
          throw ConfigError(x.where(), fmt::format("strategies[{}]", i),
                            "a strategy preset name (string)", x.describe());
        }
        Value t = Value::table(x.where());
        t.set("preset", x, x.where());
        add(std::move(t), "strategy");
      }
    } else if (e.key == "strategy") {
      const std::vector<Value> tables =
          e.value.is_array() ? e.value.items() : std::vector<Value>{e.value};
      for (size_t i = 0; i < tables.size(); ++i) {
        if (!tables[i].is_table()) {
          throw ConfigError(tables[i].where(), fmt::format("strategy[{}]", i),
                            "a table ([[strategy]])", tables[i].describe());
        }
        add(tables[i], "strategy");
      }
    }
  }
  if (out.empty()) {
    throw ConfigError(root.where(), "strategies",
                      "at least one strategy (strategies = [...] or [[strategy]] tables)", "none");
  }
  return out;
}

// [suite]: `comparison` may be one mode or a list of them (a sweep axis).
void parse_suite(const Value& s, SuiteSpec& out) {
  if (!s.is_table()) throw ConfigError(s.where(), "suite", "a table", s.describe());
  Value t = s;
  if (const Value* c = s.find("comparison"); c && c->is_string()) {
    t.set("comparison", Value::array({*c}, c->where()), c->where());
  }
  SuiteSpec::schema().parse(t, out, "suite");
  if (const Value* c = t.find("comparison")) {
    const auto& modes = comparison_modes();
    if (out.comparisons.empty()) {
      throw ConfigError(c->where(), "suite.comparison", "at least one of as-published, mechanism",
                        "an empty list");
    }
    for (size_t i = 0; i < out.comparisons.size(); ++i) {
      const std::string& m = out.comparisons[i];
      const Where w = c->is_array() && i < c->items().size() ? c->items()[i].where() : c->where();
      if (std::find(modes.begin(), modes.end(), m) == modes.end()) {
        throw ConfigError(w, "suite.comparison", "as-published or mechanism", "'" + m + "'",
                          closest_name(m, modes));
      }
      if (std::find(out.comparisons.begin(), out.comparisons.begin() + i, m) !=
          out.comparisons.begin() + i) {
        throw ConfigError(w, "suite.comparison", "each comparison once", "'" + m + "' again");
      }
    }
  }
}

// A suite's name becomes results/<name>/: one path component, never a path
// (core/util/paths.h; run_suite joins it with child_path, the same rule).
void check_suite_name(const Value& root, const std::string& name) {
  const std::string problem = name_problem(name);
  if (problem.empty()) return;
  const Value* s = root.find("suite");
  const bool written = s && s->is_table() && s->find("name");
  throw ConfigError(
      cfg::where_of_key(written ? *s : root, "name"), "suite.name",
      name_rule() + (written ? "" : "; the default is the file's name, so set [suite] name"),
      shown_name(name) + ": " + problem);
}

void check_top_level(const Value& root) {
  static const std::vector<std::string> known = {
      "suite", "model", "hardware", "workload", "strategies", "strategy", "strategy_defaults"};
  for (const auto& e : root.entries()) {
    if (std::find(known.begin(), known.end(), e.key) == known.end()) {
      cfg::throw_unknown_key(e, "", known);
    }
  }
}

}  // namespace

namespace {

// Trace files already opened while expanding one experiment file, by path:
// their header and their identity when opened.
struct TraceHeader {
  TraceInfo info;
  std::string path, stamp, sha256;
};
using TraceHeaders = std::map<std::string, TraceHeader>;

const TraceHeader& trace_header(const Value& wl, const std::string& key, const std::string& rel,
                                const fs::path& base_dir, const ModelSpec& m, TraceHeaders& cache) {
  const fs::path path = fs::path(rel).is_absolute() ? fs::path(rel) : base_dir / rel;
  const std::string id = path.lexically_normal().string() + "\n" + m.name;
  if (auto it = cache.find(id); it != cache.end()) return it->second;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw ConfigError(cfg::where_of_key(wl, key), "workload." + key,
                      "an existing trace file (a regular file)",
                      file_kind(path) + " at '" + path.string() + "'");
  }
  std::unique_ptr<TraceSource> src;
  try {
    src = open_trace_file(path);
  } catch (const Error& e) {
    throw ConfigError(cfg::where_of_key(wl, key), "workload." + key, "a valid trace file",
                      e.what());
  }
  check_trace_model(src->info(), m, path.string());
  // The file's bytes join the case's identity: a trace changed between a run
  // and its --resume makes other cases.
  std::string sha;
  try {
    sha = file_sha256(path);
  } catch (const Error& e) {
    throw ConfigError(cfg::where_of_key(wl, key), "workload." + key, "a readable trace file",
                      e.what());
  }
  return cache.emplace(id, TraceHeader{src->info(), path.string(), src->file_stamp(), sha})
      .first->second;
}

// Applies sequences / prompt_len / decode_len to a trace workload (select the
// first N sequences, cap the lengths), checks batch_size against what is
// selected, and records the values that apply: the number of sequences kept
// and the longest prompt and generation kept.
void resolve_trace(WorkloadSpec& w, const Value& wl, const ModelSpec& m, const fs::path& base_dir,
                   TraceHeaders& cache, std::map<std::string, std::string>* stamps) {
  const TraceHeader& h = trace_header(wl, "trace", w.trace, base_dir, m, cache);
  const TraceInfo& in = h.info;
  (*stamps)[h.path] = h.stamp;
  w.trace_sha256 = h.sha256;
  if (!w.calibration_trace.empty()) {
    const TraceHeader& c =
        trace_header(wl, "calibration_trace", w.calibration_trace, base_dir, m, cache);
    (*stamps)[c.path] = c.stamp;
    w.calibration_trace_sha256 = c.sha256;
  }
  TraceSelection sel;
  if (wl.find("sequences")) sel.sequences = w.sequences;
  if (wl.find("prompt_len")) sel.prompt_cap = w.prompt_len;
  if (wl.find("decode_len")) sel.decode_cap = w.decode_len;
  if (const auto p = sel.check(in, w.trace)) {
    throw ConfigError(cfg::where_of_key(wl, p->key), "workload." + p->key, p->expected, p->found);
  }
  const std::vector<SequenceInfo> seqs = sel.apply(in, w.trace);
  for (size_t i = 0; i < seqs.size() && m.context_length > 0; ++i) {
    if (seqs[i].tokens() <= m.context_length) continue;
    throw ConfigError(
        cfg::where_of_key(wl, "trace"), "workload.trace",
        fmt::format("sequences of at most the model's context ({} tokens, prompt and output "
                    "together; model '{}'; cap them with prompt_len and decode_len)",
                    m.context_length, m.name),
        fmt::format("sequence {} of '{}' with {} + {} = {} tokens", i, w.trace, seqs[i].prompt_len,
                    seqs[i].decode_len, seqs[i].tokens()));
  }
  w.sequences = int64_t(seqs.size());
  w.prompt_len = 0;
  w.decode_len = 0;
  for (const SequenceInfo& q : seqs) {
    w.prompt_len = std::max(w.prompt_len, q.prompt_len);
    w.decode_len = std::max(w.decode_len, q.decode_len);
  }
  cfg::require_key(wl, "workload", "decode_len", w.prompt_len + w.decode_len > 0,
                   "a selection with at least one token", "0 tokens kept");
  cfg::require_key(
      wl, "workload", "batch_size", w.batch_size <= w.sequences,
      fmt::format("at most the {} sequences selected from trace '{}'", w.sequences, w.trace),
      std::to_string(w.batch_size));
}

// Requests files already read while expanding one experiment file, by path
// and what was read of them.
using RequestsFiles = std::map<std::string, RequestsFile>;

// A served workload's requests file (workload.arrivals), read and checked at
// load: its SHA-256 joins the case's identity (a file changed between a run
// and its --resume is another run), `sequences` must not pass its lines, and
// with lengths = "file" the longest prompt and decode kept are recorded as
// prompt_len and decode_len (as a trace's are), so that the memory checks and
// cache_fill see the requests' real sizes.
const RequestsFile* resolve_requests(WorkloadSpec& w, const Value& wl, const ModelSpec& m,
                                     const fs::path& base_dir, RequestsFiles& cache) {
  if (w.arrivals.empty()) return nullptr;
  const fs::path path =
      fs::path(w.arrivals).is_absolute() ? fs::path(w.arrivals) : base_dir / w.arrivals;
  const RequestsNeeds needs{w.arrival == "file", w.lengths == "file", m.context_length};
  const std::string id = fmt::format("{}\n{}{}{}", path.lexically_normal().string(), needs.times,
                                     needs.lengths, needs.context_length);
  auto it = cache.find(id);
  if (it == cache.end()) {
    try {
      it = cache.emplace(id, read_requests_file(path, w.arrivals, needs)).first;
    } catch (const ConfigError& e) {
      if (e.where().line > 0) throw;  // a line of the file: named there
      throw ConfigError(cfg::where_of_key(wl, "arrivals"), "workload.arrivals", e.expected(),
                        e.found());
    }
  }
  const RequestsFile& f = it->second;
  if (int64_t(f.requests.size()) < w.sequences) {
    throw ConfigError(cfg::where_of_key(wl, "sequences"), "workload.sequences",
                      fmt::format("at most the {} requests of '{}'", f.requests.size(),
                                  shown_text(w.arrivals, 200)),
                      std::to_string(w.sequences));
  }
  w.arrivals_sha256 = f.sha256;
  if (w.lengths != "file") return &f;
  w.prompt_len = 0;
  w.decode_len = 0;
  for (size_t i = 0; i < size_t(w.sequences); ++i) {
    w.prompt_len = std::max(w.prompt_len, f.requests[i].prompt_len);
    w.decode_len = std::max(w.decode_len, f.requests[i].decode_len);
  }
  return &f;
}

// A workload of requests is drawn at load as it will be when its cases run
// (seeded): arrivals spread past kMaxArrivalSpanS are refused at the key that
// spreads them, so --dry-run and `config validate` say it.
void check_requests(const WorkloadSpec& w, const Value& wl, const RequestsFile* file) {
  if (!w.per_request()) return;
  try {
    make_requests(w, file);
  } catch (const ConfigError& e) {
    const std::string key = e.key().substr(e.key().find('.') + 1);
    throw ConfigError(cfg::where_of_key(wl, key), e.key(), e.expected(), e.found());
  }
}

// A synthetic workload's longest sequence (prompt and output together) must
// fit the model's context; a trace's sequences are checked in resolve_trace,
// a requests file's lines when it is read (make_requests).
void check_context(const ModelSpec& m, const WorkloadSpec& w, const Value& wl) {
  if (m.context_length <= 0 || w.kind == "trace" || w.lengths == "file") return;
  const bool uniform = w.lengths == "uniform";
  const int64_t p = uniform && w.prompt_len_max >= 0 ? w.prompt_len_max : w.prompt_len;
  const int64_t d = uniform && w.decode_len_max >= 0 ? w.decode_len_max : w.decode_len;
  if (p + d <= m.context_length) return;
  std::string key = p > m.context_length ? "prompt_len" : "decode_len";
  if (uniform && w.prompt_len_max >= 0 && key == "prompt_len") key = "prompt_len_max";
  if (uniform && w.decode_len_max >= 0 && key == "decode_len") key = "decode_len_max";
  throw ConfigError(cfg::where_of_key(wl, key), "workload." + key,
                    fmt::format("sequences of at most the model's context ({} tokens, prompt "
                                "and output together; model '{}')",
                                m.context_length, m.name),
                    fmt::format("{} + {} = {} tokens at the longest", p, d, p + d));
}

// The number of cases a file asks for, refused above max_cases before any is
// built: a sweep of a few long axes multiplies to millions of cases (each a
// full configuration in memory) and would exhaust memory instead of failing.
void check_case_count(const Value& root, const std::vector<AxisDef>& outer, int64_t seeds,
                      size_t comparisons, const std::vector<StrategyEntry>& strategies,
                      uint64_t max_cases) {
  constexpr uint64_t kCap = std::numeric_limits<uint64_t>::max() / 2;
  auto mul = [](uint64_t a, uint64_t b) { return (b != 0 && a > kCap / b) ? kCap : a * b; };
  uint64_t outer_n =
      mul(static_cast<uint64_t>(std::max<int64_t>(1, seeds)), std::max<size_t>(1, comparisons));
  std::string shape = seeds > 1 ? fmt::format("{} seeds", seeds) : "";
  if (comparisons > 1)
    shape += fmt::format("{}{} comparisons", shape.empty() ? "" : " x ", comparisons);
  for (const auto& a : outer) {
    outer_n = mul(outer_n, a.values.size());
    shape += fmt::format("{}{} ({})", shape.empty() ? "" : " x ", a.label, a.values.size());
  }
  uint64_t per = 0;
  for (const auto& e : strategies) {
    uint64_t n = 1;
    for (const auto& a : e.axes) n = mul(n, a.values.size());
    per = std::min(kCap, per + n);
  }
  const uint64_t total = mul(outer_n, per);
  if (total > max_cases) {
    throw ConfigError(
        outer.empty() ? root.where() : outer.front().where,
        outer.empty() ? std::string("strategy") : outer.front().label,
        fmt::format("at most {} cases in one experiment file (split the sweep into several "
                    "suites, or raise the limit with run_suite --max-cases)",
                    max_cases),
        fmt::format("{}{} cases: {}{}{} strategy combination(s)", total >= kCap ? "over " : "",
                    total >= kCap ? kCap : total, shape, shape.empty() ? "" : " x ", per));
  }
}

// The file's [suite] table, checked against the rest of the file.
Experiment experiment_header(const Value& root, const fs::path& file) {
  check_top_level(root);
  Experiment ex;
  ex.file = file;
  ex.suite.name = file.stem().string();
  if (const Value* s = root.find("suite")) {
    parse_suite(*s, ex.suite);
  }
  check_suite_name(root, ex.suite.name);
  // The workload seeds are seed, seed + 1, ..., seed + seeds - 1: the last
  // must still be a 64-bit integer (9223372036854775807 with seeds = 3 once
  // wrapped to negative seeds).
  constexpr int64_t kMaxSeed = std::numeric_limits<int64_t>::max();
  if (ex.suite.seed > kMaxSeed - (ex.suite.seeds - 1)) {
    const Value* s = root.find("suite");
    throw ConfigError(
        cfg::where_of_key(s && s->is_table() ? *s : root, "seed"), "suite.seed",
        fmt::format(
            "at most {} with seeds = {} (the last derived seed, seed + seeds - 1, must be at "
            "most {})",
            kMaxSeed - (ex.suite.seeds - 1), ex.suite.seeds, kMaxSeed),
        std::to_string(ex.suite.seed));
  }
  return ex;
}

// A case's configuration as the results record it, and its id: the hash of
// what decides its result.
void identify(Case& c, const ComponentCatalog* catalog) {
  nlohmann::ordered_json cj;
  cj["run"] = {{"backend", c.backend},
               {"repetitions", c.repetitions},
               {"warmup", c.warmup},
               {"comparison", c.comparison.to_json()}};
  if (c.backend == "real") {
    // Only real cases carry these: a simulated case's identity stays as it was.
    cj["run"]["real_kernel"] = c.real_kernel;
    cj["run"]["real_weights_gib"] = c.real_weights_gib;
    cj["run"]["real_threads"] = c.real_threads;
  }
  cj["model"] = c.model.to_json();
  cj["hardware"] = c.hardware.to_json();
  cj["workload"] = c.workload.to_json();
  cj["strategy"] = c.strategy.to_json(catalog);
  // What the strategy's implementation costs on this hardware (the entries
  // applied and the effective numbers).
  implementation_hardware(c.hardware, c.strategy, c.model, c.comparison, &cj["implementation"]);
  // The id hashes what decides the result: strategy.source is a citation, so
  // rewording it does not make a new case.
  nlohmann::ordered_json identity = cj;
  identity["strategy"].erase("source");
  // The model's context length refuses a workload, never changes a result.
  identity["model"].erase("context_length");
  // A testbed's unknowns and region suites describe the evidence around the
  // profile (scripts/testbed-region), not the profile.
  identity["hardware"].erase("unknown");
  identity["hardware"].erase("region_suites");
  c.id = sha256_hex(json_text(identity)).substr(0, 16);
  c.config = std::move(cj);
}

// One point of the file's model, hardware and workload axes, resolved: what
// every strategy there runs on.
struct Setting {
  ModelSpec model;
  HardwareProfile hardware;
  WorkloadSpec workload;
  std::vector<std::pair<std::string, std::string>> axes;  // the point's coordinates
  std::map<std::string, std::string> stamps;              // the files it reads
  std::vector<PresetFile> presets;                        // the model's and hardware's files
};

// The model and hardware of one point, their presets resolved and recorded
// in s.presets.
void resolve_machine(const Value& root, const SuiteSpec& suite, const Value& model_t,
                     const Value& hardware_t, const ConfigPaths& paths, const fs::path& base_dir,
                     Setting& s) {
  PresetLog log(&s.presets);
  const Value model_v = resolve_preset("models", model_t, "model", paths, base_dir);
  const Value hw_v = resolve_preset("hardware", hardware_t, "hardware", paths, base_dir);
  s.model = parse_model(model_v, "model");
  s.hardware = parse_hardware(hw_v, "hardware");
  resolve_planning(s.hardware, hw_v, paths, base_dir);
  if (suite.backend == "real" && s.hardware.has_gpu()) {
    // Refused here, so --dry-run and `config validate` say it too.
    const Value* st = root.find("suite");
    throw ConfigError(
        cfg::where_of_key(st && st->is_table() ? *st : root, "backend"), "suite.backend",
        "\"sim\" for a hardware profile with a GPU (the real backend runs CPU-only profiles; its "
        "GPU lane is not built yet)",
        fmt::format("\"real\" with hardware '{}' ({} GPU: {})", s.hardware.name,
                    s.hardware.gpu.count, s.hardware.gpu.model));
  }
}

// Builds an experiment's cases: every point of the model, hardware and
// workload axes, every workload seed, comparison and strategy combination.
class CaseExpander {
 public:
  CaseExpander(Experiment& ex, const std::vector<StrategyEntry>& strategies,
               const ConfigPaths& paths, const fs::path& base_dir, const ComponentCatalog* catalog)
      : ex_(ex), strategies_(strategies), paths_(paths), base_dir_(base_dir), catalog_(catalog) {}

  // The cases of one point (its sections' tables with the point's values set).
  void point(const Value& root, const Value& model_t, const Value& hardware_t,
             const Value& workload_t,
             const std::vector<std::pair<std::string, std::string>>& axes) {
    Setting base;
    base.axes = axes;
    resolve_machine(root, ex_.suite, model_t, hardware_t, paths_, base_dir_, base);
    WorkloadSpec w0;
    WorkloadSpec::schema().parse(workload_t, w0, "workload");
    w0.validate(workload_t, "workload");
    check_context(base.model, w0, workload_t);
    // One pass per workload seed ([suite] seeds) for a synthetic workload
    // without its own seed; a trace, or a workload with a seed, has one.
    const bool replicate = w0.kind != "trace" && !workload_t.find("seed");
    const int64_t n_seeds = replicate ? ex_.suite.seeds : 1;
    for (int64_t si = 0; si < n_seeds; ++si) {
      Setting s = base;
      s.workload = w0;
      if (w0.kind == "trace") {
        resolve_trace(s.workload, workload_t, s.model, base_dir_, traces_, &s.stamps);
      } else if (replicate) {
        s.workload.seed = ex_.suite.seed + si;
        if (n_seeds > 1) s.axes.emplace_back("workload.seed", std::to_string(s.workload.seed));
      }
      check_requests(s.workload, workload_t,
                     resolve_requests(s.workload, workload_t, s.model, base_dir_, requests_));
      for (const std::string& mode : ex_.suite.comparisons) strategies(s, mode);
    }
  }

 private:
  void strategies(const Setting& s, const std::string& mode) {
    ComparisonSpec cmp;
    cmp.mode = mode;
    if (mode == "mechanism") {
      cmp.stack = ex_.suite.mechanism_stack;
      cmp.cpu_kernel = ex_.suite.mechanism_cpu_kernel;
      cmp.system = ex_.suite.mechanism_system;
    }
    for (const auto& entry : strategies_) {
      for_each_combination(entry.axes, [&](const std::vector<size_t>& sidx) {
        Value st = entry.table;
        auto case_axes = s.axes;
        if (ex_.suite.comparisons.size() > 1) case_axes.emplace_back("suite.comparison", mode);
        for (size_t a = 0; a < entry.axes.size(); ++a) {
          set_path(st, entry.axes[a].path, entry.axes[a].values[sidx[a]]);
          case_axes.emplace_back(entry.axes[a].label, show_value(entry.axes[a].values[sidx[a]]));
        }
        add(s, cmp, st, std::move(case_axes));
      });
    }
  }

  void add(const Setting& s, const ComparisonSpec& cmp, const Value& st,
           std::vector<std::pair<std::string, std::string>> axes) {
    const SuiteSpec& suite = ex_.suite;
    Case c;
    c.presets = s.presets;
    PresetLog strategy_log(&c.presets);
    const Value st_v = resolve_preset("strategies", st, "strategy", paths_, base_dir_);
    c.model = s.model;
    c.hardware = s.hardware;
    c.workload = s.workload;
    c.strategy = StrategySpec::parse(st_v, "strategy", catalog_);
    c.backend = suite.backend;
    c.comparison = cmp;
    c.real_kernel = suite.real_kernel;
    c.real_weights_gib = suite.real_weights_gib;
    c.real_threads = suite.real_threads;
    c.repetitions = suite.repetitions;
    c.warmup = suite.warmup;
    c.timeline = suite.timeline;
    c.axes = std::move(axes);
    c.base_dir = base_dir_;
    c.file_stamps = s.stamps;
    identify(c, catalog_);
    c.index = ex_.cases.size();
    c.parts = {suite.name};
    if (!seen_.insert(c.id).second) {
      throw ConfigError(st_v.where(), "strategy", "distinct cases (every combination must differ)",
                        fmt::format("strategy '{}' twice with the same model, hardware and "
                                    "workload (case {})",
                                    c.strategy.name, c.id));
    }
    ex_.cases.push_back(std::move(c));
  }

  Experiment& ex_;
  const std::vector<StrategyEntry>& strategies_;
  const ConfigPaths& paths_;
  const fs::path& base_dir_;
  const ComponentCatalog* catalog_;
  std::set<std::string> seen_;
  TraceHeaders traces_;     // each trace file is opened and checked once per experiment file
  RequestsFiles requests_;  // each requests file likewise
};

Experiment expand(const Value& root, const fs::path& file, const fs::path& base_dir,
                  const ConfigPaths& paths, const ComponentCatalog* catalog, uint64_t max_cases) {
  Experiment ex = experiment_header(root, file);
  Section model = section_of(root, "model", ModelSpec::schema());
  Section hardware = section_of(root, "hardware", HardwareProfile::schema());
  Section workload = section_of(root, "workload", WorkloadSpec::schema());
  if (!root.find("model")) {
    throw ConfigError(root.where(), "model", "a [model] table (e.g. preset = \"mixtral-8x7b\")",
                      "none");
  }
  if (!root.find("hardware")) {
    throw ConfigError(root.where(), "hardware",
                      "a [hardware] table (e.g. preset = \"hybrimoe-a6000\")", "none");
  }
  const std::vector<StrategyEntry> strategies = strategy_entries(root, paths, base_dir, catalog);

  // Non-strategy axes, ordered by where they are written in the file.
  struct Ref {
    Section* sec;
    size_t i;
  };
  std::vector<Ref> refs;
  for (Section* s : {&model, &hardware, &workload}) {
    for (size_t i = 0; i < s->axes.size(); ++i) refs.push_back({s, i});
  }
  std::stable_sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) {
    const Where& wa = a.sec->axes[a.i].where;
    const Where& wb = b.sec->axes[b.i].where;
    return std::tie(wa.line, wa.column) < std::tie(wb.line, wb.column);
  });
  std::vector<AxisDef> outer;
  for (const auto& r : refs) outer.push_back(r.sec->axes[r.i]);
  check_case_count(root, outer, ex.suite.seeds, ex.suite.comparisons.size(), strategies, max_cases);

  CaseExpander cases(ex, strategies, paths, base_dir, catalog);
  for_each_combination(outer, [&](const std::vector<size_t>& idx) {
    Section* owners[] = {&model, &hardware, &workload};
    Value tables[3] = {model.table, hardware.table, workload.table};
    std::vector<std::pair<std::string, std::string>> axes;
    for (size_t a = 0; a < outer.size(); ++a) {
      for (int s = 0; s < 3; ++s) {
        if (owners[s] == refs[a].sec) set_path(tables[s], outer[a].path, outer[a].values[idx[a]]);
      }
      axes.emplace_back(outer[a].label, show_value(outer[a].values[idx[a]]));
    }
    cases.point(root, tables[0], tables[1], tables[2], axes);
  });
  return ex;
}

}  // namespace

namespace {

// Included files, each read and expanded once however often it is included
// (five 4 KB files each including the next 50 times once meant 50^5 = 312
// million expansions), keyed by their normalised path.
struct IncludeMemo {
  std::map<std::string, Value> roots;        // parsed TOML
  std::map<std::string, uint64_t> below;     // included-file instances below a composite
  std::map<std::string, Experiment> loaded;  // expanded parts and composites
};

constexpr int kMaxIncludeDepth = 4;

fs::path include_path(const Value& x, const fs::path& base) {
  return fs::path(x.as_string()).is_absolute() ? fs::path(x.as_string()) : base / x.as_string();
}

std::string memo_key(const fs::path& p) {
  return fs::absolute(p).lexically_normal().string();
}

const Value& memo_root(const fs::path& part, IncludeMemo& memo) {
  const std::string key = memo_key(part);
  auto it = memo.roots.find(key);
  if (it == memo.roots.end()) it = memo.roots.emplace(key, cfg::load_toml_file(part)).first;
  return it->second;
}

// Included-file instances reachable from `root` (each include of a file
// counts, with everything it includes), saturating at `cap`: counted before
// anything is expanded, from the parsed files alone. Malformed entries are
// skipped here; loading reports them.
uint64_t count_includes(const Value& root, const fs::path& base, int depth, uint64_t cap,
                        IncludeMemo& memo) {
  const Value* inc = root.find("include");
  if (!inc || !inc->is_array() || depth > kMaxIncludeDepth) return 0;
  uint64_t n = 0;
  for (const Value& x : inc->items()) {
    if (!x.is_string()) continue;
    const fs::path part = include_path(x, base);
    std::error_code ec;
    if (!fs::is_regular_file(part, ec)) continue;
    const std::string key = memo_key(part);
    uint64_t sub = 0;
    if (auto it = memo.below.find(key); it != memo.below.end()) {
      sub = it->second;
    } else {
      const Value& proot = memo_root(part, memo);
      fs::path pbase = part.parent_path();
      if (pbase.empty()) pbase = ".";
      memo.below[key] = 0;  // a cycle counts nothing here; the depth limit refuses it on load
      sub = count_includes(proot, pbase, depth + 1, cap, memo);
      memo.below[key] = sub;
    }
    n = std::min(cap, n + 1 + sub);
  }
  return n;
}

Experiment load_composite(const Value& root, const fs::path& file, const fs::path& base,
                          const ConfigPaths& paths, const ComponentCatalog* catalog, int depth,
                          uint64_t max_cases, IncludeMemo& memo) {
  for (const auto& e : root.entries()) {
    if (e.key != "suite" && e.key != "include") {
      throw ConfigError(
          e.key_where, e.key,
          "only [suite] and include in a composite suite (each part has its own model, hardware, "
          "workload and strategies)",
          "key '" + e.key + "'");
    }
  }
  if (depth > kMaxIncludeDepth) {
    throw ConfigError(root.where(), "include",
                      fmt::format("at most {} levels of included suites", kMaxIncludeDepth),
                      "deeper nesting (a file that includes itself?)");
  }
  Experiment ex;
  ex.file = file;
  ex.suite.name = file.stem().string();
  if (const Value* s = root.find("suite")) parse_suite(*s, ex.suite);
  check_suite_name(root, ex.suite.name);
  const Value& inc = *root.find("include");
  if (!inc.is_array() || inc.items().empty()) {
    throw ConfigError(inc.where(), "include", "a non-empty array of experiment files",
                      inc.describe());
  }
  if (depth == 0) {
    // Before anything is expanded: every include of a file counts, with all
    // it includes, against the same cap as cases.
    const uint64_t files = count_includes(root, base, 0, max_cases + 1, memo);
    if (files > max_cases) {
      throw ConfigError(
          inc.where(), "include",
          fmt::format("at most {} included experiment files, counting every include of a file and "
                      "what it includes (run_suite --max-cases raises the limit)",
                      max_cases),
          fmt::format("more than {}", max_cases));
    }
  }
  std::map<std::string, size_t> by_id;
  uint64_t instances = 0;  // cases with every include counted, before duplicates are merged
  for (size_t i = 0; i < inc.items().size(); ++i) {
    const Value& x = inc.items()[i];
    if (!x.is_string()) {
      throw ConfigError(x.where(), fmt::format("include[{}]", i),
                        "an experiment file path (string)", x.describe());
    }
    const fs::path part = include_path(x, base);
    std::error_code ec;
    if (!fs::is_regular_file(part, ec)) {
      throw ConfigError(x.where(), fmt::format("include[{}]", i),
                        "an existing experiment file (a regular file)",
                        file_kind(part) + " at '" + part.string() + "'");
    }
    const std::string key = memo_key(part);
    auto it_loaded = memo.loaded.find(key);
    if (it_loaded == memo.loaded.end()) {
      const Value proot = memo_root(part, memo);  // a copy: the memo may grow while it is in use
      fs::path pbase = part.parent_path();
      if (pbase.empty()) pbase = ".";
      Experiment sub =
          proot.find("include")
              ? load_composite(proot, part, pbase, paths, catalog, depth + 1, max_cases, memo)
              : expand(proot, part, pbase, paths, catalog, max_cases);
      it_loaded = memo.loaded.emplace(key, std::move(sub)).first;
    }
    const Experiment& sub = it_loaded->second;
    instances += sub.cases.size();
    if (instances > max_cases) {
      throw ConfigError(
          x.where(), fmt::format("include[{}]", i),
          fmt::format("at most {} cases in one composite suite, counting every include of a part "
                      "(run_suite --max-cases)",
                      max_cases),
          fmt::format("{} cases up to and including '{}'", instances, part.string()));
    }
    for (const Case& c : sub.cases) {
      auto it = by_id.find(c.id);
      if (it != by_id.end()) {
        auto& parts = ex.cases[it->second].parts;
        for (const auto& p : c.parts) {
          if (std::find(parts.begin(), parts.end(), p) == parts.end()) parts.push_back(p);
        }
        continue;
      }
      Case copy = c;
      copy.index = ex.cases.size();
      by_id[copy.id] = copy.index;
      ex.cases.push_back(std::move(copy));
    }
  }
  return ex;
}

}  // namespace

Experiment load_experiment(const fs::path& file, const ConfigPaths& paths,
                           const ComponentCatalog* catalog, uint64_t max_cases) {
  const Value root = cfg::load_toml_file(file);
  fs::path base = file.parent_path();
  if (base.empty()) base = ".";
  if (root.find("include")) {
    IncludeMemo memo;
    return load_composite(root, file, base, paths, catalog, 0, max_cases, memo);
  }
  return expand(root, file, base, paths, catalog, max_cases);
}

Experiment load_experiment_text(const std::string& text, const std::string& name,
                                const fs::path& base_dir, const ConfigPaths& paths,
                                const ComponentCatalog* catalog, uint64_t max_cases) {
  const Value root = cfg::parse_toml(text, name);
  return expand(root, fs::path(name), base_dir, paths, catalog, max_cases);
}

}  // namespace moebench
