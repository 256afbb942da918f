// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// RouterProbe: a model's router applied to arbitrary gate inputs.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/util/error.h"
#include "predictors/components.h"

namespace moebench {

void RouterProbe::init(const ModelSpec& model, const GateWeights* gates, const std::string& who,
                       int64_t top_n) {
  if (!gates || gates->h <= 0) {
    throw Error(fmt::format(
        "predictor '{}': expected a workload with gate weights and gate inputs, found none", who));
  }
  if (gates->experts != model.routed_experts) {
    throw Error(
        fmt::format("predictor '{}': expected gate weights for {} experts (model '{}'), found {}",
                    who, model.routed_experts, model.name, gates->experts));
  }
  gates_ = gates;
  cfg_ = RoutingConfig::from_model(model);
  if (top_n > 0) {
    const int64_t allowed =
        cfg_.n_group > 1 ? cfg_.topk_group * (cfg_.experts / cfg_.n_group) : cfg_.experts;
    cfg_.top_k = std::min(top_n, allowed);
  }
  logits_.resize(gates->experts);
  probs_.resize(gates->experts);
  ids_.resize(cfg_.top_k);
  w_.resize(cfg_.top_k);
}

void RouterProbe::route_one(const float* x, int32_t layer, int32_t* ids, float* weights) {
  const int64_t E = gates_->experts;
  gemv(gates_->w(layer), gates_->b(layer), x, E, gates_->h, logits_.data());
  const float* sel = gates_->selection_bias.empty() ? nullptr : gates_->sel(layer);
  route(cfg_, logits_.data(), sel, ids, weights, probs_.data(), scratch_);
}

void RouterProbe::add_workload(const float* x, int64_t n, int32_t layer, std::span<float> scores) {
  xs_.resize(size_t(std::max<int64_t>(n, 0)));
  for (int64_t t = 0; t < n; ++t) xs_[size_t(t)] = x + t * gates_->h;
  add_routed(xs_.data(), n, layer, n > 0 ? 0.5f / float(n) : 0.0f, scores);
}

void RouterProbe::add_workload_each(const float* const* xs, int64_t n, int32_t layer,
                                    std::span<float> scores) {
  add_routed(xs, n, layer, 0.5f, scores);  // the tie of one input: 0.5 / 1
}

void RouterProbe::add_routed(const float* const* xs, int64_t n, int32_t layer, float tie,
                             std::span<float> scores) {
  if (n <= 0) return;
  const int64_t E = gates_->experts, k = cfg_.top_k;
  // Every input's logits at once (gemv_batch: the same bits as route_one's gemv on each).
  logits_.resize(size_t(n * E));
  gemv_batch(gates_->w(layer), gates_->b(layer), xs, n, E, gates_->h, logits_.data());
  const float* sel = gates_->selection_bias.empty() ? nullptr : gates_->sel(layer);
  for (int64_t t = 0; t < n; ++t) {
    route(cfg_, logits_.data() + t * E, sel, ids_.data(), w_.data(), probs_.data(), scratch_);
    float wsum = 0;
    for (int64_t j = 0; j < k; ++j) wsum += std::abs(w_[j]);
    for (int64_t j = 0; j < k; ++j) {
      scores[ids_[j]] += 1.0f + tie * (wsum > 0 ? std::abs(w_[j]) / wsum : 0.0f);
    }
  }
}

}  // namespace moebench
