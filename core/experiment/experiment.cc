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
#include "core/experiment/expand.h"
#include "core/experiment/preset_log.h"
#include "core/experiment/requests.h"
#include "core/experiment/workload_files.h"
#include "core/scheduler/scheduler.h"
#include "core/trace/trace_workload.h"
#include "core/util/atomic_file.h"
#include "core/util/json_text.h"
#include "core/util/paths.h"
#include "core/util/sha256.h"
#include "core/util/strings.h"

namespace moebench {
namespace fs = std::filesystem;
using cfg::Value;

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

}  // namespace

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

namespace {

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
    check_scheduler(w0, workload_t, "workload");
    check_context(base.model, w0, workload_t);
    // One pass per workload seed ([suite] seeds) for a synthetic workload
    // without its own seed; a trace, or a workload with a seed, has one.
    const bool replicate = w0.kind != "trace" && !workload_t.find("seed");
    const int64_t n_seeds = replicate ? ex_.suite.seeds : 1;
    for (int64_t si = 0; si < n_seeds; ++si) {
      Setting s = base;
      s.workload = w0;
      if (w0.kind == "trace") {
        files_.resolve_trace(s.workload, workload_t, s.model, base_dir_, &s.stamps);
      } else if (replicate) {
        s.workload.seed = ex_.suite.seed + si;
        if (n_seeds > 1) s.axes.emplace_back("workload.seed", std::to_string(s.workload.seed));
      }
      check_requests(s.workload, workload_t,
                     files_.resolve_requests(s.workload, workload_t, s.model, base_dir_));
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
  WorkloadFiles files_;  // each trace and requests file opened and checked once
};

}  // namespace

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

}  // namespace moebench
