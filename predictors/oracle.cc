// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// predictor = "oracle": the true routing of the target layer and step
// (perfect prediction), the upper bound every prefetcher is compared with.
#include "predictors/components.h"

namespace moebench {

void OraclePredictor::predict(const Context& ctx, int32_t target, int64_t offset,
                              std::span<float> scores) {
  const auto act = ctx.future->active(offset, target);
  // Workload first, then the combine weight as a tie-break below 0.5.
  float wtot = 0;
  for (const auto& a : act) wtot += std::abs(a.weight_sum);
  for (const auto& a : act) {
    scores[a.expert] += float(a.tokens) + (wtot > 0 ? 0.5f * std::abs(a.weight_sum) / wtot : 0.0f);
  }
}

}  // namespace moebench
