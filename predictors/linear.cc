// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// predictor = "linear" (SMoE's token-wise predictor): per MoE layer a linear
// layer shaped like the gate, with bias, scoring from layer l's gate input of
// token t the experts layer l will use for token t+1. Trained offline on the
// calibration workload (never the evaluation workload); `moebench predictor
// train` writes the same artefact to a file.
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "core/util/detmath.h"
#include "core/util/error.h"
#include "core/util/sha256.h"
#include "predictors/components.h"

#include "core/util/artefact_cache.h"

namespace moebench {

const cfg::Schema<LinearPredictor::Params>& LinearPredictor::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.predictor");
    s.string(
         "file", &Params::file,
         "Trained artefact (moebench predictor train); empty: train on the calibration workload.")
        .boolean(
            "cache", &Params::cache,
            "Reuse artefacts trained earlier on the same calibration workload (run_suite: "
            "<results>/.cache; "
            "elsewhere $MOEBENCH_CACHE; training is deterministic, so this changes no result).")
        .number("lr", &Params::lr, "Adam learning rate.", cfg::positive())
        .integer("batch", &Params::batch, "Batch size.", cfg::at_least(1))
        .integer("max_samples", &Params::max_samples, "(token, next token) pairs used.",
                 cfg::at_least(10))
        .integer("max_epochs", &Params::max_epochs, "Epoch cap.", cfg::at_least(1))
        .integer("patience", &Params::patience,
                 "Epochs without better validation recall before stopping.", cfg::at_least(1))
        .integer("seed", &Params::seed, "Initialisation and split seed.", cfg::at_least(0));
    return s;
  }();
  return s;
}

namespace {
// run_suite's <results>/.cache, or $MOEBENCH_CACHE, or none (core/util/artefact_cache.h).
std::filesystem::path cache_dir() {
  const auto root = artefact_cache_dir();
  return root.empty() ? root : root / "predictors";
}
}  // namespace

void LinearPredictor::prepare(const ModelSpec& m, const CalibrationData* calib,
                              const GateWeights* g) {
  hidden_ = m.hidden_size;
  if (!p_.file.empty()) {
    model_ = load_linear(p_.file);
  } else {
    if (!calib)
      throw Error(fmt::format(
          "predictor '{}': expected a calibration workload or a file, found neither", name()));
    LinearTrainOptions o;
    o.lr = p_.lr;
    o.batch = p_.batch;
    o.max_samples = p_.max_samples;
    o.max_epochs = p_.max_epochs;
    o.patience = p_.patience;
    o.seed = p_.seed;
    const TraceInfo& in = calib->trace().info();
    // The calibration workload is identified by its source description
    // (generator, preset, seed, stream) and shape; training is deterministic.
    std::string key = in.source + "|" + in.model_name + "|" + std::to_string(in.h_trace) + "|" +
                      std::to_string(in.total_tokens()) + "|" + o.to_json().dump();
    for (const auto& s : in.sequences) key += fmt::format("|{}+{}", s.prompt_len, s.decode_len);
    const auto dir = cache_dir();
    const bool cache = p_.cache && !in.source.empty() && !dir.empty();
    const auto file = dir / (sha256_hex(key).substr(0, 24) + ".safetensors");
    std::error_code ec;
    std::unique_ptr<ArtefactLock> lock;
    if (cache && !std::filesystem::is_regular_file(file, ec)) {
      // Another case may be training the same predictor now (run_suite -j):
      // wait for it, then load what it wrote, instead of training it twice.
      std::filesystem::create_directories(file.parent_path(), ec);
      if (!ec) lock = std::make_unique<ArtefactLock>(file.string() + ".lock");
    }
    if (cache && std::filesystem::is_regular_file(file, ec)) {
      model_ = load_linear(file);
    } else {
      model_ = train_linear(calib->trace(), o, false);
      if (cache) {
        std::filesystem::create_directories(file.parent_path(), ec);
        if (!ec) {
          try {
            save_linear(model_, file);
          } catch (const Error&) {
            // A cache that cannot be written only costs retraining next time.
          }
        }
      }
    }
  }
  if (model_.layers != m.moe_layers() || model_.experts != m.routed_experts) {
    throw Error(fmt::format(
        "predictor '{}': expected a predictor for {} MoE layers of {} experts (model '{}'), "
        "found {} layers of {}",
        name(), m.moe_layers(), m.routed_experts, m.name, model_.layers, model_.experts));
  }
  if (g && g->h != model_.h) {
    throw Error(fmt::format(
        "predictor '{}': expected gate inputs of width {} (what it was trained on), found a "
        "workload with width {}",
        name(), model_.h, g->h));
  }
  z_.resize(model_.experts);
}

void LinearPredictor::predict(const Context& ctx, int32_t target, int64_t offset,
                              std::span<float> scores) {
  if (offset != 1 || target != ctx.layer) {
    throw Error(fmt::format(
        "predictor '{}': predicts the next token at the same layer, asked for layer {} at step "
        "offset {} from layer {}",
        name(), target, offset, ctx.layer));
  }
  const StepRouting& r = *ctx.routing;
  const int64_t E = model_.experts, H = model_.h;
  if (r.h_trace() != H) {
    throw Error(fmt::format("predictor '{}': expected gate inputs of width {}, found {}", name(), H,
                            r.h_trace()));
  }
  const float* W = &model_.weight[size_t(target) * E * H];
  const float* b = &model_.bias[size_t(target) * E];
  for (int64_t t = 0; t < r.tokens(); ++t) {
    gemv(W, b, r.gate_input(t, ctx.layer), E, H, z_.data());
    for (int64_t e = 0; e < E; ++e) scores[e] += det::sigmoid(z_[e]);
  }
}

double LinearPredictor::gpu_ns(const CostModel& c, int64_t tokens) const {
  return c.gpu_matmul_ns(hidden_, model_.experts, tokens);
}

}  // namespace moebench
