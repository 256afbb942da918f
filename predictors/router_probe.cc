// RouterProbe: a model's router applied to arbitrary gate inputs.
#include <fmt/format.h>

#include "core/util/error.h"
#include "predictors/components.h"

namespace moebench {

void RouterProbe::init(const ModelSpec& model, const GateWeights* gates, const std::string& who) {
  if (!gates || gates->h <= 0) {
    throw Error(fmt::format("predictor '{}': expected a workload with gate weights and gate inputs, found none", who));
  }
  if (gates->experts != model.routed_experts) {
    throw Error(fmt::format("predictor '{}': expected gate weights for {} experts (model '{}'), found {}", who,
                            model.routed_experts, model.name, gates->experts));
  }
  gates_ = gates;
  cfg_ = RoutingConfig::from_model(model);
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
  const int64_t k = cfg_.top_k;
  const float tie = n > 0 ? 0.5f / float(n) : 0.0f;
  for (int64_t t = 0; t < n; ++t) {
    route_one(x + t * gates_->h, layer, ids_.data(), w_.data());
    float wsum = 0;
    for (int64_t j = 0; j < k; ++j) wsum += std::abs(w_[j]);
    for (int64_t j = 0; j < k; ++j) {
      scores[ids_[j]] += 1.0f + tie * (wsum > 0 ? std::abs(w_[j]) / wsum : 0.0f);
    }
  }
}

}  // namespace moebench
