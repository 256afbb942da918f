// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// predictor = "frequency": the calibration workload's activation frequency
// of each expert of the target layer (a static profile).
#include <fmt/format.h>

#include "core/util/error.h"
#include "predictors/components.h"

namespace moebench {

void FrequencyPredictor::prepare(const ModelSpec&, const CalibrationData* calib,
                                 const GateWeights*) {
  if (!calib)
    throw Error(fmt::format("predictor '{}': expected a calibration workload, found none", name()));
  const CalibrationProfile& p = calib->profile();
  E_ = p.experts;
  freq_.assign(p.counts.size(), 0.0f);
  for (size_t i = 0; i < p.counts.size(); ++i)
    freq_[i] = p.tokens > 0 ? float(double(p.counts[i]) / double(p.tokens)) : 0.0f;
}

void FrequencyPredictor::predict(const Context& ctx, int32_t target, int64_t,
                                 std::span<float> scores) {
  const float n = float(ctx.routing->tokens());
  for (int64_t e = 0; e < E_; ++e) scores[e] += n * freq_[size_t(target) * E_ + e];
}

}  // namespace moebench
