// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// moebench trace gen|stats|convert

#include <fmt/format.h>
#include <algorithm>

#include <fstream>
#include <iostream>
#include <sstream>

#include "core/trace/trace.h"
#include "core/util/atomic_file.h"
#include "core/util/json_text.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"
#include "workloads/calibrate/calibrate.h"
#include "workloads/convert/jsonl_convert.h"
#include "workloads/stats/trace_stats.h"
#include "workloads/synthetic/generator.h"

namespace moebench::tools {

namespace {

// The committed preset's Reproduce line, with the origin of a warm start
// ("" when the file has neither).
std::string preset_provenance(const ConfigPaths& paths, const std::string& family) {
  const auto file = paths.find("workloads", family);
  if (!file) return "";
  std::istringstream in(read_file(*file));
  std::string line, reproduce, origin, how;
  const std::string key = "# Reproduce: ", warm = "# Warm-started from the preset ",
                    scale = "# Its logit scale refitted (selection unchanged) from the preset ";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) reproduce = line.substr(key.size());
    for (const auto& [prefix, what] : {std::pair{warm, ", warm-started from "},
                                       std::pair{scale, ", its logit scale refitted from "}}) {
      if (line.rfind(prefix, 0) == 0) {
        origin = line.substr(line.find(": ") + 2);
        how = what;
      }
    }
  }
  return origin.empty() ? reproduce : reproduce + how + origin;
}

struct GenArgs {
  std::string model, preset = "auto", out;
  int64_t seed = 1, sequences = 1, prompt_len = 64, decode_len = 64, h_trace = 256, top_p = 0;
  bool no_gate_inputs = false, no_probs = false, calibration = false;
};

std::unique_ptr<SyntheticSource> make_source(const GenArgs& a) {
  const auto paths = ConfigPaths::defaults();
  const ModelSpec m = load_model(a.model, paths);
  const GeneratorParams p = load_generator(a.preset, m, paths);
  SyntheticLayout lay;
  lay.sequences.assign(a.sequences, SequenceInfo{a.prompt_len, a.decode_len});
  lay.seed = a.seed;
  lay.h_trace = a.h_trace;
  lay.calibration = a.calibration;
  return std::make_unique<SyntheticSource>(m, p, lay);
}

void add_gen_options(CLI::App* c, GenArgs& a, bool for_stats) {
  auto* model = c->add_option("--model", a.model, "Model preset (name or file)");
  if (!for_stats) model->required();
  c->add_option("--preset", a.preset, "Synthetic-workload preset (default: the model family's)");
  c->add_option("--seed", a.seed, "Workload seed")->check(cli::whole(0));
  c->add_option("--sequences", a.sequences, "Sequences")->check(cli::whole(1, 1 << 20));
  c->add_option("--prompt-len", a.prompt_len, "Prompt tokens per sequence")
      ->check(cli::whole(0, 1 << 20));
  c->add_option("--decode-len", a.decode_len, "Decoded tokens per sequence")
      ->check(cli::whole(0, 1 << 20));
  c->add_option("--h-trace", a.h_trace, "Gate-input width (power of two >= 32)");
  c->add_flag("--calibration", a.calibration,
              "Draw from the calibration stream (disjoint from evaluation)");
}

// moebench trace gen.
void add_gen_command(CLI::App* trace) {
  static GenArgs gen;
  auto* g = trace->add_subcommand("gen", "Generate a synthetic trace file");
  add_gen_options(g, gen, false);
  g->add_option("--out", gen.out, "Output trace file (.safetensors)")->required();
  g->add_flag("--no-gate-inputs", gen.no_gate_inputs, "Omit gate inputs and gate weights");
  g->add_flag("--no-probs", gen.no_probs, "Omit router probabilities");
  g->add_option("--top-p", gen.top_p, "Store only the top-p probabilities per token and layer");
  g->callback([] {
    auto src = make_source(gen);
    TraceWriteOptions o;
    o.gate_inputs = !gen.no_gate_inputs;
    o.probs = gen.no_probs    ? ProbsStorage::kNone
              : gen.top_p > 0 ? ProbsStorage::kTopP
                              : ProbsStorage::kFull;
    o.top_p = gen.top_p;
    write_trace(*src, gen.out, o);
    fmt::print("wrote {} ({} sequences, {} tokens, {} MoE layers)\n", gen.out,
               src->info().sequences.size(), src->info().total_tokens(), src->info().moe_layers);
  });
}

// moebench trace stats.
void add_stats_command(CLI::App* trace) {
  static GenArgs sgen;
  static std::string stats_file, json_out;
  static StatsOptions sopt;
  auto* s = trace->add_subcommand("stats", "Statistics of a trace file or of a generated workload");
  s->add_option("file", stats_file, "Trace file (or use --model to generate)");
  add_gen_options(s, sgen, true);
  s->add_option("--batch", sopt.batch, "Sequences per batch for workload statistics")
      ->check(cli::whole(1, 4096));
  s->add_option("--json", json_out, "Also write all statistics as JSON to this file");
  s->add_option("--phase", sopt.phase,
                "Tokens counted: all (default), prefill (each sequence's prompt) or decode (its "
                "generated tokens; "
                "what the papers report); consecutive pairs within the phase")
      ->check(CLI::IsMember({"all", "prefill", "decode"}));
  s->callback([] {
    std::unique_ptr<TraceSource> src;
    if (!stats_file.empty() && !sgen.model.empty()) {
      throw Error("trace stats: expected a trace file or --model, found both");
    }
    if (!stats_file.empty())
      src = open_trace_file(stats_file);
    else if (!sgen.model.empty())
      src = make_source(sgen);
    else
      throw Error("trace stats: expected a trace file or --model, found neither");
    const TraceStats st = compute_stats(*src, sopt);
    std::cout << st.to_text();
    if (!json_out.empty()) write_file_atomic(json_out, json_text(st.to_json(), 1) + "\n");
  });
}

// What moebench trace convert says after writing: the counts, notes, and
// what the trace's probabilities leave out.
void report_conversion(const ConvertOptions& copt, const ConvertSummary& sum) {
  fmt::print(
      "wrote {} ({} sequences, {} tokens) from {} lines of {} file{}{}; router probabilities per "
      "token and "
      "layer: {}\n",
      copt.out, sum.sequences, sum.tokens, sum.lines, copt.inputs.size(),
      copt.inputs.size() == 1 ? "" : "s",
      copt.layout == "per-forward" ? fmt::format(", {} forward passes", sum.forward_passes)
                                   : std::string(),
      sum.probs_width == 0 ? std::string("none") : std::to_string(sum.probs_width));
  for (const auto& n : sum.notes) fmt::print(stderr, "note: {}\n", n);
  if (sum.missing_rows > 0) {
    fmt::print("missing rows: {} ({}: {} tokens dropped, {} rows filled, {} hole rows)\n",
               sum.missing_rows, copt.missing, sum.dropped_tokens, sum.filled_rows, sum.hole_rows);
  }
  const ModelSpec m = load_model(copt.model, ConfigPaths::defaults());
  if (sum.probs_width > 0 && sum.probs_width < m.routed_experts) {
    fmt::print(stderr,
               "warning: the log holds only the chosen experts' probabilities (p = {}); a "
               "component that needs more "
               "(HybriMoE's MRS uses p = 2k = {}) runs with p = {} on this trace, and its result "
               "rows say so in "
               "`warnings`\n",
               sum.probs_width, 2 * m.top_k, sum.probs_width);
  } else if (sum.probs_width == 0) {
    fmt::print(stderr,
               "warning: the log holds no router probabilities; components that need them (MRS, "
               "probability-based predictors) cannot run on this trace\n");
  }
}

// moebench trace convert.
void add_convert_command(CLI::App* trace) {
  static ConvertOptions copt;
  auto* c = trace->add_subcommand("convert",
                                  "Convert per-token JSON-lines routing logs into a trace file");
  c->add_option("input", copt.inputs,
                "JSON-lines files (one object per token and layer); several convert into one "
                "trace, each file's "
                "sequences kept apart")
      ->required();
  c->add_option("--layout", copt.layout,
                "positions: 'token' is the position in the sequence (0..n-1); per-forward: "
                "positions restart at 0 "
                "in every forward pass (a raw vLLM log: prefill rows, then one row per layer per "
                "decode step), "
                "the rows taken in file order and the first pass the prompt")
      ->check(CLI::IsMember({"positions", "per-forward"}));
  c->add_option("--out", copt.out, "Output trace file")->required();
  c->add_option("--model", copt.model, "Model preset the log was recorded on")->required();
  c->add_option(
      "--prompt-len", copt.prompt_len,
      "Prompt tokens per sequence (the rest are decode tokens); or a 'prompt' field per line");
  static std::vector<std::string> field_maps;
  c->add_option("--field", field_maps,
                "FIELD=KEY: read canonical field FIELD from the log's key KEY; repeatable. Fields: "
                "seq (sequence "
                "or request id), token (position), layer (MoE layer), experts (the k chosen ids, "
                "rank order), "
                "weights (the k combine weights as the model applies them, e.g. renormalised over "
                "the k: vLLM's "
                "topk weights), probs (router probabilities before renormalisation: k of the "
                "chosen experts or "
                "all E), logits (all E router logits), prompt (boolean)");
  c->add_option(
       "--missing", copt.missing,
       "Rows of the (seq, token, layer) grid that no line gives: error (default), hole "
       "(kept as holes that statistics and the simulator skip and count), drop (the token), "
       "fill (the previous token's routing of that layer); token positions count from 0 in "
       "each sequence, and more than 4096 consecutive positions with no row are refused")
      ->check(CLI::IsMember({"error", "drop", "fill", "hole"}));
  c->callback([] {
    for (const auto& f : field_maps) {
      const auto eq = f.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw Error(
            fmt::format("--field: expected FIELD=KEY (e.g. seq=request_id), found '{}'", f));
      }
      copt.fields[f.substr(0, eq)] = f.substr(eq + 1);
    }
    report_conversion(copt, convert_jsonl(copt, ConfigPaths::defaults()));
  });
}

struct FitArgs {
  std::vector<std::string> families;
  bool all = false, write = false, evaluate_only = false;
  std::string report;
  FitOptions fopt;
};

// One family of moebench trace fit: fitted (or evaluated), printed, written.
FamilyReport fit_one(const std::string& fam, FitArgs& a, const ConfigPaths& paths) {
  const ModelSpec m = load_model(calibration_model(fam), paths);
  // Fitting starts from the struct defaults, never from the current file,
  // so the same command always produces the same preset.
  GeneratorParams start;
  // Latent width r = max(16, E/8): with more than ~8 expert directions
  // per latent dimension the directions crowd, and experts in sparse
  // regions of the latent space win top-k far more often than crowded
  // ones (DeepSeek-V3's 256 experts at r = 16: max/mean ~1.6 in every
  // layer even with no popularity bias, against the measured "nearly
  // uniform" shallow layers). Measured: r = 32 gives ~1.35, r = 64 ~1.29.
  start.latent_dim = std::max<int64_t>(16, m.routed_experts / 8);
  if (a.evaluate_only || a.fopt.warm_start || a.fopt.scale_only)
    start = load_generator(fam, m, paths);
  // How the committed preset was made (its Reproduce line; a warm-started
  // file also names the fit it started from).
  const std::string provenance = preset_provenance(paths, fam);
  if (a.fopt.warm_start || a.fopt.scale_only) a.fopt.warm_start_from = provenance;
  start.family = fam;
  fmt::print("{}: {} on {} ...\n", fam, a.evaluate_only ? "evaluating" : "fitting", m.name);
  std::fflush(stdout);
  FamilyReport r = a.evaluate_only ? evaluate_family(fam, start, paths, a.fopt)
                                   : fit_family(fam, start, paths, a.fopt);
  if (a.evaluate_only) r.provenance = provenance;
  for (const auto& t : r.targets) {
    fmt::print("  {:<28} achieved {:7.3f}  range [{:.2f}, {:.2f}]  {}{}\n", t.target->id,
               t.achieved, t.target->lo, t.target->hi, t.within ? "ok" : "OUT OF RANGE",
               t.target->pending_on(fam) ? " (not fitted)" : "");
  }
  for (const auto& c : r.checks)
    fmt::print("  check {:<22} {}  ({})\n", c.check->id, c.holds ? "holds" : "FAILS", c.evidence);
  fmt::print("  {} of {} fitted targets in range, {} evaluations\n", r.fitted_in_range(),
             r.fitted_targets(), r.evals);
  if (a.write && !a.evaluate_only) {
    const auto file = paths.find("workloads", fam);
    if (!file)
      throw Error("trace fit: expected configs/workloads/" + fam + ".toml to exist, found none");
    GeneratorParams p = r.params;
    p.name = fam;
    p.description = "fitted synthetic workload for " + fam + " (see docs/calibration.md)";
    p.source = "moebench trace fit --family " + fam + " on " + r.model;
    write_file_atomic(*file, preset_toml(p, r, a.fopt));
    fmt::print("  wrote {}\n", file->string());
  }
  return r;
}

// moebench trace fit.
void add_fit_command(CLI::App* trace) {
  static FitArgs a;
  auto* f = trace->add_subcommand(
      "fit", "Fit synthetic-workload presets to the calibration targets of docs/WORKLOADS.md");
  f->add_option("--family", a.families, "Families to fit")
      ->check(CLI::IsMember(calibration_families()));
  f->add_flag("--all", a.all, "Fit every family");
  f->add_flag("--write", a.write, "Write the fitted presets to configs/workloads/<family>.toml");
  f->add_flag("--evaluate-only", a.evaluate_only, "Evaluate the current presets without fitting");
  f->add_option("--report", a.report, "Write the Markdown calibration report here");
  f->add_option("--max-evals", a.fopt.max_evals,
                "Coordinate-descent evaluations per phase (default: 600 for mixtral, 200 for "
                "deepseek-v3, 300 otherwise)")
      ->check(cli::whole(1, 100000));
  f->add_option("--refine-evals", a.fopt.refine_evals,
                "Nelder-Mead refinement evaluations per phase (default: 600 for mixtral, 300 for "
                "deepseek-v3, "
                "200 otherwise)")
      ->check(cli::whole(0, 100000));
  f->add_option("--proxy-weight", a.fopt.proxy_weight,
                "Weight of a proxy target (measured on another model) against a direct one "
                "(1) in the fit's loss (default: 0.5)")
      ->check(cli::real(0.0, 1.0));
  f->add_option("--range-weight", a.fopt.range_weight,
                "Extra weight of a statistic's squared excess beyond --range-margin of its range "
                "(default: 10; 0 minimises the distance from the centres alone)")
      ->check(cli::real(0.0, 1e6));
  f->add_option("--range-margin", a.fopt.range_margin,
                "Where the extra weight starts, in half-widths of the range from its centre "
                "(default: 0.8)")
      ->check(cli::real(0.0, 1.0));
  f->add_flag("--warm-start", a.fopt.warm_start,
              "Start from the committed preset's knobs (not the generic start) and run only the "
              "joint phase; the written preset names the fit it started from");
  f->add_flag(
      "--scale-only", a.fopt.scale_only,
      "Start from the committed preset's knobs and fit only the logit scale (gate_scale, skew "
      "and skew_shallow by one factor) on the targets of the router's weights; the experts "
      "chosen, and every other target, stay the same");
  f->add_flag("--verbose", a.fopt.verbose, "Print every accepted step");
  f->callback([] {
    const auto paths = ConfigPaths::defaults();
    std::vector<std::string> fams = a.all ? calibration_families() : a.families;
    if (fams.empty()) throw Error("trace fit: expected --family F or --all, found neither");
    if (int(a.fopt.warm_start) + int(a.evaluate_only) + int(a.fopt.scale_only) > 1)
      throw Error(
          "trace fit: expected at most one of --warm-start, --scale-only and --evaluate-only, "
          "found more");
    std::vector<FamilyReport> reports;
    for (const auto& fam : fams) reports.push_back(fit_one(fam, a, paths));
    if (!a.report.empty()) {
      write_file_atomic(a.report, calibration_report(reports, a.fopt));
      fmt::print("wrote {}\n", a.report);
    }
  });
}

}  // namespace

void add_trace_commands(CLI::App& app) {
  auto* trace = app.add_subcommand("trace", "Generate, inspect and convert routing traces");
  trace->require_subcommand(1);
  add_gen_command(trace);
  add_stats_command(trace);
  add_record_command(trace);
  add_convert_command(trace);
  add_fit_command(trace);
}

}  // namespace moebench::tools
