// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// predictor = "gate-reuse": layer j's router applied to layer l's gate input
// (HybriMoE's impact-driven prefetch, AdapMoE's next-layer prefetch): hidden
// states of nearby layers are similar thanks to the residual connections.
#include <fmt/format.h>

#include "core/util/error.h"
#include "predictors/components.h"

namespace moebench {

void GateReusePredictor::prepare(const ModelSpec& m, const CalibrationData*, const GateWeights* g) {
  probe_.init(m, g, name(), extra_ > 0 ? m.top_k + extra_ : 0);
  hidden_ = m.hidden_size;
}

void GateReusePredictor::predict(const Context& ctx, int32_t target, int64_t offset,
                                 std::span<float> scores) {
  if (offset != 0 || target < ctx.layer || target >= ctx.moe_layers) {
    throw Error(fmt::format(
        "predictor '{}': predicts later layers of the current token, asked for layer {} "
        "at step offset {} from layer {}",
        name(), target, offset, ctx.layer));
  }
  const StepRouting& r = *ctx.routing;
  // A token's prediction depends on its gate input at ctx.layer and the
  // target's router alone: shared with the other cases of the workload.
  TokenMemo::Table* memo = probe_.memo_table(r, "gate-reuse", ctx.layer, target);
  probe_.add_step(
      r, memo, target, [&](int64_t t) { return r.gate_input(t, ctx.layer); }, scores);
}

double GateReusePredictor::gpu_ns(const CostModel& c, int64_t tokens) const {
  return c.gpu_matmul_ns(hidden_, probe_.ready() ? probe_.experts() : 0, tokens);
}

}  // namespace moebench
