// moebench config list|show|describe|validate

#include <fmt/format.h>

#include <iostream>

#include "core/config/experiment.h"
#include "tools/catalog.h"
#include "tools/commands.h"

namespace moebench::tools {
namespace {

void print_docs(const std::vector<cfg::FieldDoc>& docs, const std::string& section) {
  fmt::print("| key | type | unit | default | meaning |\n|---|---|---|---|---|\n");
  for (const auto& d : docs) {
    fmt::print("| `{}{}` | {} | {} | `{}` | {} |\n", section.empty() ? "" : section + ".", d.key, d.type,
               d.unit, d.default_json, d.doc);
  }
}

double gib(int64_t bytes) { return double(bytes) / (1024.0 * 1024.0 * 1024.0); }

}  // namespace

void add_config_commands(CLI::App& app) {
  auto* config = app.add_subcommand("config", "Inspect presets and check experiment files");
  config->require_subcommand(1);

  auto* list = config->add_subcommand("list", "List presets (models, hardware, strategies)");
  list->callback([] {
    const auto paths = ConfigPaths::defaults();
    for (const std::string kind : {"models", "hardware", "strategies"}) {
      fmt::print("{}: {}\n", kind, join(paths.list(kind), " "));
    }
  });

  auto* show = config->add_subcommand("show", "Print a resolved preset as JSON (with derived sizes)");
  static std::string model, hardware, strategy;
  show->add_option("--model", model, "Model preset name or file");
  show->add_option("--hardware", hardware, "Hardware preset name or file");
  show->add_option("--strategy", strategy, "Strategy preset name or file");
  show->callback([] {
    const auto paths = ConfigPaths::defaults();
    if (model.empty() && hardware.empty() && strategy.empty()) {
      throw Error("config show: expected --model, --hardware or --strategy, found none");
    }
    if (!model.empty()) {
      const ModelSpec m = load_model(model, paths);
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
      std::cout << j.dump(2) << "\n";
    }
    if (!hardware.empty()) std::cout << load_hardware(hardware, paths).to_json().dump(2) << "\n";
    if (!strategy.empty()) {
      const auto& cat = component_catalog();
      std::cout << load_strategy(strategy, paths, &cat).to_json(&cat).dump(2) << "\n";
    }
  });

  auto* describe = config->add_subcommand(
      "describe", "Print every key of a section as a Markdown table (model, hardware, workload, "
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

  auto* validate = config->add_subcommand("validate", "Load experiment files and report their cases");
  static std::vector<std::string> files;
  validate->add_option("files", files, "Experiment TOML files")->required();
  validate->callback([] {
    const auto paths = ConfigPaths::defaults();
    const auto& cat = component_catalog();
    for (const auto& f : files) {
      const Experiment ex = load_experiment(f, paths, &cat);
      fmt::print("{}: suite '{}', {} case{}\n", f, ex.suite.name, ex.cases.size(),
                 ex.cases.size() == 1 ? "" : "s");
    }
  });
}

}  // namespace moebench::tools
