// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// predictor = "cross-layer": Fate's cross-layer gate (arXiv 2502.12224). At
// layer l, layer l + 1's router is applied to each token's gate input of
// layer l and the token's top (k + extra) experts each count one (plus a
// tie-break below one by their weight share); the prefetcher loads the
// counted experts, most counted first. Fate's public code (read, not copied)
// takes the top 5 for Qwen1.5-MoE's top-4 router, hence extra = 1.
#include <fmt/format.h>

#include "core/util/error.h"
#include "predictors/components.h"

namespace moebench {

const cfg::Schema<CrossLayerPredictor::Params>& CrossLayerPredictor::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.predictor");
    s.integer("extra", &Params::extra,
              "Experts predicted per token beyond the model's top-k (Fate's code: 1).",
              cfg::at_least(0), "experts");
    return s;
  }();
  return s;
}

void CrossLayerPredictor::prepare(const ModelSpec& m, const CalibrationData*,
                                  const GateWeights* g) {
  probe_.init(m, g, name(), m.top_k + p_.extra);
  hidden_ = m.hidden_size;
}

void CrossLayerPredictor::predict(const Context& ctx, int32_t target, int64_t offset,
                                  std::span<float> scores) {
  if (offset != 0 || target != ctx.layer + 1 || target >= ctx.moe_layers) {
    throw Error(fmt::format(
        "predictor '{}': predicts the next layer of the current token, asked for layer {} "
        "at step offset {} from layer {}",
        name(), target, offset, ctx.layer));
  }
  const StepRouting& r = *ctx.routing;
  xs_.resize(size_t(r.tokens()));
  for (int64_t t = 0; t < r.tokens(); ++t) xs_[size_t(t)] = r.gate_input(t, ctx.layer);
  probe_.add_workload_each(xs_.data(), r.tokens(), target, scores);
}

double CrossLayerPredictor::gpu_ns(const CostModel& c, int64_t tokens) const {
  return c.gpu_matmul_ns(hidden_, probe_.ready() ? probe_.experts() : 0, tokens);
}

}  // namespace moebench
