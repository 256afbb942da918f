// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// predictor = "none": predicts nothing (all scores zero).
#include "baselines/common/components.h"

namespace moebench {

void NonePredictor::predict(const Context&, int32_t, int64_t, std::span<float> scores) {
  std::fill(scores.begin(), scores.end(), 0.0f);
}

}  // namespace moebench
