// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// moebench replay: a simulated case's task graph (its Chrome timeline) run
// for real on this machine's GPU and CPU (harness/backend/gpu_replay.h).

#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "core/experiment/experiment.h"
#include "core/util/atomic_file.h"
#include "core/util/error.h"
#include "core/util/json_text.h"
#include "harness/backend/gpu_replay.h"
#include "kernels/cuda/gpu_experts.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"

namespace moebench::tools {

namespace {

struct ReplayCli {
  std::string timeline, results, model, dtype, out;
  std::vector<int64_t> steps;
  int threads = 0;
  int spin_us = 200;
  std::string tag;
  bool timelines = false;
  bool one_launcher = false;
};

struct Case {
  std::string id, strategy, axes, timeline;
};

// The cases of `model` in a run_suite results folder, with their timelines.
std::vector<Case> cases_of(const std::string& results, const std::string& model) {
  const std::filesystem::path dir(results);
  const std::string text = read_file(dir / "runs.jsonl");
  std::vector<Case> cs;
  size_t line = 0, pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    const std::string l = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    ++line;
    if (l.empty()) continue;
    nlohmann::json r;
    try {
      r = nlohmann::json::parse(l);
    } catch (const nlohmann::json::exception& e) {
      throw Error(fmt::format("{}:{}: expected a JSON row, found invalid JSON: {}",
                              (dir / "runs.jsonl").string(), line, e.what()));
    }
    if (r.value("status", "") != "ok" || r.value("model", "") != model) continue;
    Case c{r.value("case_id", ""), r.value("strategy", ""), r.value("axes", ""), ""};
    c.timeline = (dir / "timelines" / (c.id + ".json")).string();
    if (!std::filesystem::exists(c.timeline)) {
      throw Error(
          fmt::format("{}:{}: expected the case's timeline {}, found none (run the suite "
                      "with [suite] timeline = true)",
                      (dir / "runs.jsonl").string(), line, c.timeline));
    }
    cs.push_back(c);
  }
  if (cs.empty()) {
    throw Error(fmt::format("{}: expected finished cases of model '{}', found none",
                            (dir / "runs.jsonl").string(), model));
  }
  return cs;
}

void print_summary(const nlohmann::ordered_json& s) {
  fmt::print(
      "steps: simulated {:.1f} us, composed {:.1f} us, real {:.1f} us; end to end {:+.3f}, tables "
      "{:+.3f}, composition {:+.3f}\n",
      s["steps_sim_us"].get<double>(), s["steps_composed_us"].get<double>(),
      s["steps_real_us"].get<double>(), s["end_to_end_error"].get<double>(),
      s["table_error"].get<double>(), s["composition_error"].get<double>());
  for (const auto& k : s["per_kind"]) {
    fmt::print("  {:<26} {:>5} tasks {:<11} busy sim {:>10.1f} us real {:>10.1f} us ({:.3f})\n",
               k["kind"].get<std::string>(), k["tasks"].get<int64_t>(), k["run"].get<std::string>(),
               k["sim_busy_us"].get<double>(), k["real_busy_us"].get<double>(),
               k["real_over_sim"].get<double>());
  }
}

void run_replay_command(const ReplayCli& o) {
  if (!o.steps.empty() && (o.steps.size() != 2 || o.steps[0] < 0 || o.steps[1] < o.steps[0])) {
    throw Error(fmt::format("replay --steps: expected FIRST,LAST with 0 <= FIRST <= LAST, found {}",
                            fmt::join(o.steps, ",")));
  }
  if (o.timeline.empty() == o.results.empty()) {
    throw Error("replay: expected one of --timeline FILE or --results DIR, found " +
                std::string(o.timeline.empty() ? "neither" : "both"));
  }
  ReplayOptions opt;
  opt.model = load_model(o.model, ConfigPaths::defaults());
  if (!o.dtype.empty()) opt.model.expert_dtype = parse_weight_dtype(o.dtype);
  // One core left to the threads that feed the GPU (bench_gpu, section 5:
  // the CPU experts ran 3.6-4.2x slower on all 16 cores of the lent machine).
  opt.threads =
      o.threads > 0 ? o.threads : std::max(1, int(std::thread::hardware_concurrency()) - 1);
  opt.spin_us = o.spin_us;
  opt.one_launcher = o.one_launcher;
  const int64_t first = o.steps.empty() ? -1 : o.steps[0], last = o.steps.empty() ? -1 : o.steps[1];
  std::vector<Case> cases;
  if (!o.timeline.empty())
    cases.push_back({"", "", "", o.timeline});
  else
    cases = cases_of(o.results, opt.model.name);
  // Every graph is read and checked before minutes of setup.
  std::vector<ReplayGraph> graphs;
  for (const Case& c : cases) {
    graphs.push_back(load_replay_graph(c.timeline, first, last));
    build_replay_deps(graphs.back());
  }
  fmt::print(stderr, "replay: {} case(s) of {} on {}, {} CPU threads\n", cases.size(),
             opt.model.name, gpu::describe_device(), opt.threads);
  ReplayMachine machine(opt);
  const std::filesystem::path dir(o.out);
  std::filesystem::create_directories(dir);
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  std::string csv =
      "case_id,strategy,axes,steps,sim_us,real_us,end_to_end_error,gpu_expert_real_over_sim,"
      "cpu_expert_real_over_sim,copy_real_over_sim,composed_us,table_error,composition_error\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    machine.run(graphs[i]);
    auto s = replay_summary(graphs[i]);
    s["case_id"] = cases[i].id;
    s["strategy"] = cases[i].strategy;
    s["axes"] = cases[i].axes;
    s["timeline"] = cases[i].timeline;
    s["model"] = opt.model.name;
    s["expert_dtype"] = to_string(opt.model.expert_dtype);
    s["device"] = gpu::describe_device();
    s["cpu_threads"] = opt.threads;
    s["cpu_spin_us"] = opt.spin_us;
    s["launch_threads"] = opt.one_launcher ? 1 : 4;
    if (!cases[i].strategy.empty()) fmt::print("{} ({}):\n", cases[i].strategy, cases[i].axes);
    print_summary(s);
    auto ratio = [&](const std::string& kind) {
      for (const auto& k : s["per_kind"])
        if (k["kind"] == kind) return fmt::format("{:.4f}", k["real_over_sim"].get<double>());
      return std::string();
    };
    std::string copy;
    for (const char* k : {"demand-load", "prefetch", "swap-load"})
      if (copy.empty()) copy = ratio(k);
    csv += fmt::format("{},{},\"{}\",{},{:.1f},{:.1f},{:.4f},{},{},{},{:.1f},{:.4f},{:.4f}\n",
                       cases[i].id, cases[i].strategy, cases[i].axes, s["per_step"].size(),
                       s["steps_sim_us"].get<double>(), s["steps_real_us"].get<double>(),
                       s["end_to_end_error"].get<double>(), ratio("gpu-expert"),
                       ratio("cpu-expert (cpu)"), copy, s["steps_composed_us"].get<double>(),
                       s["table_error"].get<double>(), s["composition_error"].get<double>());
    all.push_back(s);
    if (!o.timeline.empty()) {
      write_file_atomic(dir / "timeline-real.json",
                        replay_chrome_json(graphs[i], "replay of " + o.timeline));
    } else if (o.timelines) {
      write_file_atomic(dir / ("timeline-real-" + cases[i].id + ".json"),
                        replay_chrome_json(graphs[i], "replay of " + cases[i].timeline));
    }
  }
  const std::string stem =
      (o.timeline.empty() ? "replay-" + opt.model.name : std::string("replay")) +
      (o.tag.empty() ? "" : "-" + o.tag);
  write_file_atomic(dir / (stem + ".json"), json_text(all, 2) + "\n");
  write_file_atomic(dir / (stem + ".csv"), csv);
  fmt::print("wrote {} and {}\n", (dir / (stem + ".json")).string(),
             (dir / (stem + ".csv")).string());
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "replay",
      "Run a simulated case's task graph (its Chrome timeline) for real on this machine's GPU and "
      "CPU, and compare each step and task kind with the simulation");
  static ReplayCli o;
  cmd->add_option("--timeline", o.timeline,
                  "One case's timeline (run_suite with [suite] timeline = true)");
  cmd->add_option("--results", o.results,
                  "A run_suite results folder: every finished case of --model (its timeline)");
  cmd->add_option("--model", o.model, "The case's model preset (expert shapes)")->required();
  cmd->add_option("--dtype", o.dtype, "Expert dtype (default: the model's)");
  cmd->add_option("--steps", o.steps, "FIRST,LAST steps to run (default: all)")->delimiter(',');
  cmd->add_option("--threads", o.threads, "CPU expert threads (0: all cores but one)")
      ->check(cli::whole(0, 1024));
  cmd->add_flag("--one-launcher", o.one_launcher,
                "One host thread submits every GPU-side lane (default: one thread per lane)");
  cmd->add_flag("--timelines", o.timelines,
                "With --results: also write each case's real run as timeline-real-CASE.json");
  cmd->add_option("--tag", o.tag, "Suffix of the output files' names (one run's variant)");
  cmd->add_option("--spin-us", o.spin_us,
                  "How long idle CPU expert threads poll before sleeping, us (default 200, the "
                  "real backend's)")
      ->check(cli::whole(0, 100000));
  cmd->add_option(
         "--out", o.out,
         "Folder for replay[-MODEL][-TAG].json and .csv (and the real timelines: "
         "timeline-real.json for one --timeline, timeline-real-CASE.json with --timelines)")
      ->required();
  cmd->callback([] { run_replay_command(o); });
}

}  // namespace moebench::tools
