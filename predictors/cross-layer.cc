// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// predictor = "cross-layer": Fate's cross-layer gate (arXiv 2502.12224), the
// gate-reuse predictor (gate-reuse.cc) for the next layer only, each token's
// top (k + extra) experts counting one (plus a tie-break below one by their
// weight share); the prefetcher loads the counted experts, most counted first. Fate's public code
// (read, not copied) takes the top 5 for Qwen1.5-MoE's top-4 router, hence extra = 1.
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

void CrossLayerPredictor::predict(const Context& ctx, int32_t target, int64_t offset,
                                  std::span<float> scores) {
  if (offset != 0 || target != ctx.layer + 1 || target >= ctx.moe_layers) {
    throw Error(fmt::format(
        "predictor '{}': predicts the next layer of the current token, asked for layer {} "
        "at step offset {} from layer {}",
        name(), target, offset, ctx.layer));
  }
  GateReusePredictor::predict(ctx, target, offset, scores);
}

}  // namespace moebench
