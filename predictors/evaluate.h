// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Prediction accuracy reports as in the papers, on an evaluation workload
// that never overlaps the calibration data the predictors were built from:
//   - top-k recall per layer of each predictor (SMoE Fig. 3 compares
//     layer-wise, iteration-wise and token-wise prediction on DeepSeek-V3):
//       layer-wise      gate_l(x_{l-1})                  (gate-reuse, HybriMoE)
//       residual        gate_l(x_{l-1} + res_{l-1})       (DALI)
//       iteration-wise  gate_l(x_0): the whole pass predicted at its start
//       last-iteration  the current token's experts for the next token
//       token-wise      the trained linear predictor, next token (SMoE)
//   - accuracy on the top-1 / top-2 highest-workload experts of a batch
//     (DALI Table 2): |predicted top-n by predicted workload  ∩  true top-n| / n;
//   - cosine of the predicted versus the true next-layer gate input, raw
//     and residual-corrected (DALI Table 8).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "predictors/components.h"

namespace moebench {

struct PredictorEvalOptions {
  int64_t batch = 8;          // sequences per batch for the workload accuracy (DALI Table 2)
  int64_t max_tokens = 4096;  // evaluation tokens (0 = all)
};

struct PredictorEvalReport {
  std::string model, workload;  // model preset; the evaluation workload's source (JSON text)
  int64_t layers = 0, experts = 0, top_k = 0, tokens = 0, batch = 0, batch_steps = 0;
  // Per layer (index = predicted layer); NaN where undefined (layer 0 for
  // cross-layer predictors).
  std::vector<double> recall_layerwise, recall_residual, recall_iterationwise,
      recall_last_iteration, recall_tokenwise;
  std::vector<double> top1_layerwise, top2_layerwise, top1_residual, top2_residual;
  std::vector<double> cos_raw, cos_residual;  // index l: between layers l and l+1
  bool has_residual = false, has_tokenwise = false;
  nlohmann::ordered_json to_json() const;
  std::string to_markdown() const;
};

// `residuals` (from mean_residuals on a calibration trace) and `linear` are
// optional; their rows stay NaN without them.
PredictorEvalReport evaluate_predictors(const ModelSpec& model, const TraceSource& eval,
                                        const std::vector<float>* residuals,
                                        const LinearModel* linear, const PredictorEvalOptions& opt);

}  // namespace moebench
