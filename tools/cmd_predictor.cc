// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// moebench predictor train|eval
//
// Calibration and evaluation data never overlap: a generated workload is
// trained on the generator's calibration stream and evaluated on its
// evaluation stream (disjoint by construction); trace files must differ.

#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "core/trace/trace.h"
#include "core/util/atomic_file.h"
#include "core/util/json_text.h"
#include "predictors/components.h"
#include "predictors/evaluate.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"
#include "workloads/synthetic/generator.h"

namespace moebench::tools {

namespace {

struct Workload {
  std::string model, preset = "auto", trace;
  int64_t seed = 1, sequences = 64, prompt_len = 16, decode_len = 64, h_trace = 256;
};

void add_workload_options(CLI::App* c, Workload& w, const std::string& what) {
  c->add_option("--model", w.model, "Model preset (name or file)")->required();
  c->add_option("--preset", w.preset, "Synthetic-workload preset (default: the model family's)");
  c->add_option("--trace", w.trace, what + " trace file instead of the synthetic workload");
  c->add_option("--seed", w.seed, "Workload seed")->check(cli::whole(0));
  c->add_option("--sequences", w.sequences, "Sequences")->check(cli::whole(1, 1 << 20));
  c->add_option("--prompt-len", w.prompt_len, "Prompt tokens per sequence")
      ->check(cli::whole(0, 1 << 20));
  c->add_option("--decode-len", w.decode_len, "Decoded tokens per sequence")
      ->check(cli::whole(1, 1 << 20));
  c->add_option("--h-trace", w.h_trace, "Gate-input width (power of two >= 32)");
}

std::unique_ptr<TraceSource> open_workload(const Workload& w, const ModelSpec& m, bool calibration,
                                           const std::string& trace) {
  if (!trace.empty()) {
    auto src = open_trace_file(trace);
    const TraceInfo& in = src->info();
    if (in.moe_layers != m.moe_layers() || in.experts() != m.routed_experts ||
        in.top_k() != m.top_k) {
      throw Error(fmt::format(
          "{}: expected a trace of model '{}' ({} MoE layers, {} experts, top-{}), found '{}' "
          "({} layers, {} experts, top-{})",
          trace, m.name, m.moe_layers(), m.routed_experts, m.top_k, in.model_name, in.moe_layers,
          in.experts(), in.top_k()));
    }
    return src;
  }
  const auto paths = ConfigPaths::defaults();
  SyntheticLayout lay;
  lay.sequences.assign(w.sequences, SequenceInfo{w.prompt_len, w.decode_len});
  lay.seed = w.seed;
  lay.h_trace = w.h_trace;
  lay.calibration = calibration;
  return std::make_unique<SyntheticSource>(m, load_generator(w.preset, m, paths), lay);
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return !a.empty() && !b.empty() && std::filesystem::equivalent(a, b, ec);
}

}  // namespace

void add_predictor_commands(CLI::App& app) {
  auto* pred = app.add_subcommand("predictor", "Train and evaluate expert predictors");
  pred->require_subcommand(1);

  static Workload tw;
  static LinearTrainOptions topt;
  static std::string out;
  static bool verbose = false;
  auto* t = pred->add_subcommand(
      "train", "Train SMoE's token-wise linear predictor on a calibration workload");
  add_workload_options(t, tw, "Calibration");
  t->add_option("--out", out, "Output artefact (.safetensors)")->required();
  t->add_option("--lr", topt.lr, "Adam learning rate (SMoE: 1e-4)")->check(cli::real(0, 1, true));
  t->add_option("--batch", topt.batch, "Batch size (SMoE: 32-64)")->check(cli::whole(1, 1 << 20));
  t->add_option("--max-samples", topt.max_samples, "(token, next token) pairs")
      ->check(cli::whole(10, 1 << 30));
  t->add_option("--max-epochs", topt.max_epochs, "Epoch cap")->check(cli::whole(1, 1 << 20));
  t->add_option("--patience", topt.patience,
                "Epochs without better validation recall before stopping")
      ->check(cli::whole(1, 1 << 20));
  t->add_option("--train-seed", topt.seed, "Initialisation and split seed")->check(cli::whole(0));
  t->add_flag("--verbose", verbose, "Print every layer's result");
  t->callback([] {
    const auto paths = ConfigPaths::defaults();
    const ModelSpec m = load_model(tw.model, paths);
    auto src = open_workload(tw, m, true, tw.trace);
    const LinearModel lm = train_linear(*src, topt, verbose);
    save_linear(lm, out);
    double v = 0, te = 0;
    for (int64_t l = 0; l < lm.layers; ++l) {
      v += lm.val_recall[l];
      te += lm.test_recall[l];
    }
    fmt::print(
        "wrote {} ({} layers x {} experts x width {}; {} pairs; mean validation recall {:.3f}, "
        "held-out test "
        "recall {:.3f})\n",
        out, lm.layers, lm.experts, lm.h, lm.samples, v / double(lm.layers),
        te / double(lm.layers));
  });

  static Workload ew;
  static std::string calib_trace, linear_file, json_out, md_out;
  static PredictorEvalOptions eopt;
  static int64_t calib_sequences = 64, residual_tokens = 4096;
  auto* e = pred->add_subcommand("eval",
                                 "Prediction accuracy per layer (SMoE Fig. 3, DALI Table 2 and "
                                 "Table 8) on an evaluation workload");
  add_workload_options(e, ew, "Evaluation");
  e->add_option(
      "--calibration-trace", calib_trace,
      "Calibration trace for the residual vectors (default: the generator's calibration stream)");
  e->add_option("--calibration-sequences", calib_sequences,
                "Sequences of the generated calibration workload")
      ->check(cli::whole(1, 1 << 20));
  e->add_option("--residual-tokens", residual_tokens,
                "Calibration tokens averaged into the residuals (0 = all)");
  e->add_option("--linear", linear_file,
                "A trained linear predictor (moebench predictor train) to evaluate");
  e->add_option("--batch", eopt.batch, "Sequences per batch for the workload accuracy (DALI: 8-64)")
      ->check(cli::whole(1, 1 << 16));
  e->add_option("--max-tokens", eopt.max_tokens, "Evaluation tokens (0 = all)");
  e->add_option("--json", json_out, "Write the report as JSON");
  e->add_option("--markdown", md_out, "Write the report as Markdown");
  e->callback([] {
    const auto paths = ConfigPaths::defaults();
    const ModelSpec m = load_model(ew.model, paths);
    if (same_file(ew.trace, calib_trace)) {
      throw Error(fmt::format(
          "predictor eval: expected a calibration trace different from the evaluation trace, "
          "found '{}' for both",
          ew.trace));
    }
    if (!ew.trace.empty() && calib_trace.empty()) {
      throw Error(
          "predictor eval: expected --calibration-trace with --trace (the residuals must not come "
          "from the "
          "evaluation data), found none");
    }
    auto eval = open_workload(ew, m, false, ew.trace);
    Workload cw = ew;
    cw.sequences = calib_sequences;
    auto calib = open_workload(cw, m, true, calib_trace);
    const std::vector<float> res = mean_residuals(*calib, residual_tokens);
    std::optional<LinearModel> lm;
    if (!linear_file.empty()) lm = load_linear(linear_file);
    const PredictorEvalReport r = evaluate_predictors(m, *eval, &res, lm ? &*lm : nullptr, eopt);
    const std::string md = r.to_markdown();
    std::cout << md;
    if (!json_out.empty()) write_file_atomic(json_out, json_text(r.to_json(), 1) + "\n");
    if (!md_out.empty()) write_file_atomic(md_out, md);
  });
}

}  // namespace moebench::tools
