// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "predictors/components.h"

namespace moebench {

void register_predictors(Registry& r) {
  r.add<Predictor, GateReusePredictor>(
      "predictor", "gate-reuse", "Later layers' routers on this layer's gate input (HybriMoE).");
  r.add<Predictor, CrossLayerPredictor>(
      "predictor", "cross-layer", "Next layer's router on this gate input, top k + extra (Fate).");
  r.add<Predictor, ResidualPredictor>(
      "predictor", "residual", "Routers on the gate input plus calibrated mean residuals (DALI).");
  r.add<Predictor, LinearPredictor>("predictor", "linear",
                                    "Trained per-layer linear next-token predictor (SMoE).");
  r.add<Predictor, LastIterationPredictor>("predictor", "last-iteration",
                                           "This token's experts, again for the next token.");
  r.add<Predictor, FrequencyPredictor>("predictor", "frequency",
                                       "Calibration activation frequency (static).");
  r.add<Predictor, OraclePredictor>("predictor", "oracle",
                                    "The true routing (perfect prediction).");
  r.add<Predictor, RandomPredictor>("predictor", "random",
                                    "Seeded random scores (DALI Fig. 16a's random prefetching).");
}

}  // namespace moebench
