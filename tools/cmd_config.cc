// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// moebench config list|show|describe|validate

#include <fmt/format.h>

#include <iostream>
#include <utility>

#include "core/engine/cost_model.h"
#include "core/experiment/experiment.h"
#include "core/scheduler/scheduler.h"
#include "core/util/atomic_file.h"
#include "core/util/json_text.h"
#include "harness/run/run_case.h"
#include "tools/catalog.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"

namespace moebench::tools {
namespace {

void print_docs(const std::vector<cfg::FieldDoc>& docs, const std::string& section) {
  fmt::print("| key | type | unit | default | meaning |\n|---|---|---|---|---|\n");
  for (const auto& d : docs) {
    fmt::print("| `{}{}` | {} | {} | `{}` | {} |\n", section.empty() ? "" : section + ".", d.key,
               d.type, d.unit, d.default_json, d.doc);
  }
}

double gib(int64_t bytes) {
  return double(bytes) / (1024.0 * 1024.0 * 1024.0);
}

// A model preset with its derived sizes (config show --model).
nlohmann::ordered_json model_with_sizes(const ModelSpec& m) {
  nlohmann::ordered_json j = m.to_json();
  nlohmann::ordered_json d;
  d["moe_layers"] = m.moe_layers();
  d["expert_params"] = m.expert_params();
  d["expert_bytes"] = m.expert_bytes();
  d["shared_bytes_per_layer"] = m.shared_bytes();
  d["attention_params_per_layer"] = m.attention_params();
  d["kv_bytes_per_token_per_layer"] = m.kv_bytes_per_token();
  d["non_expert_params"] = m.non_expert_params();
  d["non_expert_gib"] = gib(m.non_expert_bytes());
  d["routed_expert_gib"] = gib(m.total_routed_expert_bytes());
  d["total_params"] = m.total_params();
  d["spec_sha256"] = m.hash();
  j["derived"] = d;
  return j;
}

// moebench config list and show.
void add_list_and_show(CLI::App* config) {
  auto* list = config->add_subcommand(
      "list",
      "List presets (models, hardware, strategies), the workload's schedulers and the "
      "engine's attention paths, admission and prefetch rules");
  list->callback([] {
    const auto paths = ConfigPaths::defaults();
    for (const std::string kind : {"models", "hardware", "strategies"}) {
      fmt::print("{}: {}\n", kind, join(paths.list(kind), " "));
    }
    // Not presets but the workload's schedulers (core/scheduler/), with what each does.
    fmt::print("schedulers (workload.scheduler):\n");
    for (const std::string& s : scheduler_names()) fmt::print("  {}: {}\n", s, scheduler_doc(s));
    // The engine's mechanisms a strategy names (core/engine/variants/), each
    // family named as its residency key.
    for (const auto& [what, family] :
         {std::pair<const char*, const char*>{"attention paths", "attention"},
          {"admission rules", "admission"},
          {"prefetch rules", "late_prefetch"}}) {
      fmt::print("{} (strategy.residency.{}): {}\n", what, family,
                 join(component_catalog().kinds(family), " "));
    }
  });

  auto* show =
      config->add_subcommand("show", "Print a resolved preset as JSON (with derived sizes)");
  static std::string model, hardware, strategy;
  show->add_option("--model", model, "Model preset name or file");
  show->add_option("--hardware", hardware, "Hardware preset name or file");
  show->add_option("--strategy", strategy, "Strategy preset name or file");
  show->callback([] {
    const auto paths = ConfigPaths::defaults();
    if (model.empty() && hardware.empty() && strategy.empty()) {
      throw Error("config show: expected --model, --hardware or --strategy, found none");
    }
    if (!model.empty())
      std::cout << json_text(model_with_sizes(load_model(model, paths)), 2) << "\n";
    if (!hardware.empty())
      std::cout << json_text(load_hardware(hardware, paths).to_json(), 2) << "\n";
    if (!strategy.empty()) {
      const auto& cat = component_catalog();
      std::cout << json_text(load_strategy(strategy, paths, &cat).to_json(&cat), 2) << "\n";
    }
  });
}

struct CostArgs {
  std::string model, hardware, json, strategy;
  std::vector<int64_t> tokens;
};

// config cost: the table printed and (--json) written.
void print_cost_table(const CostArgs& a) {
  const auto paths = ConfigPaths::defaults();
  const ModelSpec m = load_model(a.model, paths);
  const HardwareProfile declared = load_hardware(a.hardware, paths);
  nlohmann::ordered_json used;
  HardwareProfile h = declared;
  if (!a.strategy.empty()) {
    const auto& cat = component_catalog();
    const StrategySpec st = load_strategy(a.strategy, paths, &cat);
    // As published: the strategy's own implementation on this profile.
    h = implementation_hardware(declared, st, m, ComparisonSpec{}, &used);
  }
  const CostModel c(m, h);
  std::vector<int64_t> tokens = a.tokens;
  if (tokens.empty()) {
    for (int64_t t = 1; t <= 4096; t *= 2) tokens.push_back(t);
  }
  nlohmann::ordered_json j;
  j["model"] = m.name;
  j["hardware"] = h.name;
  if (!used.is_null()) j["implementation"] = used;
  j["expert_bytes"] = c.expert_bytes();
  j["h2d_expert_ms"] = c.h2d_expert_ns() / 1e6;
  j["has_gpu"] = c.has_gpu();
  j["by_tokens"] = nlohmann::ordered_json::array();
  fmt::print("{} on {}: one expert {:.1f} MiB, H2D copy {:.3f} ms\n", m.name, h.name,
             double(c.expert_bytes()) / (1 << 20), c.h2d_expert_ns() / 1e6);
  if (!used.is_null()) {
    fmt::print("implementation of {}: stack {} ({}), CPU kernel {} ({})\n", a.strategy,
               used["stack"].get<std::string>(), used["stack_entry"].get<std::string>(),
               used["cpu_kernel"].get<std::string>(), used["cpu_kernel_entry"].get<std::string>());
  }
  fmt::print("\n");
  fmt::print("{:>7}  {:>20}  {:>19}  {:>13}\n", "tokens", "CPU first in layer",
             "CPU later in layer", "GPU (cached)");
  for (int64_t t : tokens) {
    const double first = c.cpu_expert_ns(t, true) / 1e6, later = c.cpu_expert_ns(t, false) / 1e6;
    const double gpu = c.has_gpu() ? c.gpu_expert_ns(t) / 1e6 : 0.0;
    fmt::print("{:7d}  {:17.3f} ms  {:16.3f} ms  {:10.3f} ms\n", t, first, later, gpu);
    j["by_tokens"].push_back(
        {{"tokens", t},
         {"cpu_first_ms", first},
         {"cpu_ms", later},
         {"gpu_ms", c.has_gpu() ? nlohmann::ordered_json(gpu) : nlohmann::ordered_json(nullptr)}});
  }
  if (c.clamped_lookups() > 0) {
    fmt::print(
        "\nnote: {} lookups fell outside a measured table's token range (answered with its end "
        "point)\n",
        c.clamped_lookups());
  }
  j["clamped_lookups"] = c.clamped_lookups();
  if (!a.json.empty()) write_file_atomic(a.json, json_text(j, 1) + "\n");
}

// moebench config cost.
void add_cost(CLI::App* config) {
  auto* cost = config->add_subcommand("cost",
                                      "Print the simulated backend's expert costs (ms) for a model "
                                      "on a hardware profile, by tokens per expert");
  static CostArgs a;
  cost->add_option("--model", a.model, "Model preset name or file")->required();
  cost->add_option("--hardware", a.hardware, "Hardware preset name or file")->required();
  cost->add_option("--tokens", a.tokens, "Tokens routed to one expert (default 1, 2, 4, ..., 4096)")
      ->check(cli::whole(1, 1 << 20));
  cost->add_option("--json", a.json, "Also write the table as JSON to this file");
  cost->add_option(
      "--strategy", a.strategy,
      "Strategy preset or file whose implementation (stack, CPU kernel) to apply (default: the "
      "profile's own values)");
  cost->callback([] { print_cost_table(a); });
}

// moebench config describe and validate.
void add_describe_and_validate(CLI::App* config) {
  auto* describe = config->add_subcommand(
      "describe",
      "Print every key of a section as a Markdown table (model, hardware, workload, "
      "residency, suite)");
  static std::string section;
  describe->add_option("section", section, "Section to describe")
      ->required()
      ->check(CLI::IsMember({"model", "hardware", "workload", "residency", "suite"}));
  describe->callback([] {
    if (section == "model") print_docs(ModelSpec::schema().docs(), "model");
    if (section == "hardware") print_docs(HardwareProfile::schema().docs(), "hardware");
    if (section == "workload") print_docs(WorkloadSpec::schema().docs(), "workload");
    if (section == "residency") print_docs(ResidencySpec::schema().docs(), "strategy.residency");
    if (section == "suite") print_docs(SuiteSpec::schema().docs(), "suite");
  });

  auto* validate =
      config->add_subcommand("validate", "Load experiment files and report their cases");
  static std::vector<std::string> files;
  validate->add_option("files", files, "Experiment TOML files")->required();
  validate->callback([] {
    const auto paths = ConfigPaths::defaults();
    const auto& cat = component_catalog();
    int64_t failing = 0;
    for (const auto& f : files) {
      const Experiment ex = load_experiment(f, paths, &cat);
      fmt::print("{}: suite '{}', {} case{}\n", f, ex.suite.name, ex.cases.size(),
                 ex.cases.size() == 1 ? "" : "s");
      // What each case can fail on before it runs (harness/run/run_case.h).
      for (const Case& c : ex.cases) {
        try {
          preflight_case(c, cat);
        } catch (const Error& e) {
          ++failing;
          fmt::print("  case {} ({} / {} / {}): will fail: {}\n", c.index, c.strategy.name,
                     c.model.name, c.hardware.name, e.what());
        }
      }
    }
    if (failing > 0) {
      throw Error(fmt::format(
          "config validate: expected every case to be able to run, found {} that cannot (above)",
          failing));
    }
  });
}

}  // namespace

void add_config_commands(CLI::App& app) {
  auto* config = app.add_subcommand("config", "Inspect presets and check experiment files");
  config->require_subcommand(1);
  add_list_and_show(config);
  add_cost(config);
  add_describe_and_validate(config);
}

}  // namespace moebench::tools
