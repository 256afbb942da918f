// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// predictor = "last-iteration": the experts a layer used for the current
// token, predicted again for the next token (the iteration-wise baseline of
// SMoE Fig. 3 with history as its predictor); reads nothing from the future.
#include <fmt/format.h>

#include "core/util/error.h"
#include "predictors/components.h"

namespace moebench {

void LastIterationPredictor::predict(const Context& ctx, int32_t target, int64_t offset,
                                     std::span<float> scores) {
  if (target > ctx.layer && offset == 0) {
    throw Error(fmt::format(
        "predictor '{}': predicts from layers already routed, asked for layer {} of the current "
        "token at layer {}",
        name(), target, ctx.layer));
  }
  const StepRouting& r = *ctx.routing;
  const int64_t k = ctx.top_k;
  const float tie = r.tokens() > 0 ? 0.5f / float(r.tokens()) : 0.0f;
  for (int64_t t = 0; t < r.tokens(); ++t) {
    const int32_t* ids = r.ids(t, target);
    if (ids[0] == kHoleId) continue;  // a hole in the trace: nothing to repeat
    const float* w = r.weights(t, target);
    float wsum = 0;
    for (int64_t j = 0; j < k; ++j) wsum += std::abs(w[j]);
    for (int64_t j = 0; j < k; ++j)
      scores[ids[j]] += 1.0f + tie * (wsum > 0 ? std::abs(w[j]) / wsum : 0.0f);
  }
}

}  // namespace moebench
