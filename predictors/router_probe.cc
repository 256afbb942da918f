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
}

void RouterProbe::route_one(const float* x, int32_t layer, int32_t* ids, float* weights) {
  const int64_t E = gates_->experts;
  gemv(gates_->w(layer), gates_->b(layer), x, E, gates_->h, logits_.data());
  const float* sel = gates_->selection_bias.empty() ? nullptr : gates_->sel(layer);
  route(cfg_, logits_.data(), sel, ids, weights, probs_.data(), scratch_);
}

void RouterProbe::add_step_routed(const StepRouting& r, TokenMemo::Table* memo, int32_t layer,
                                  std::span<float> scores) {
  const int64_t E = gates_->experts, k = cfg_.top_k, m = int64_t(miss_.size());
  miss_ids_.resize(size_t(m * k));
  miss_w_.resize(size_t(m * k));
  if (m > 0) {
    // Every missing token's logits at once (gemv_batch: the same bits as route_one's gemv on each).
    logits_.resize(size_t(m * E));
    gemv_batch(gates_->w(layer), gates_->b(layer), xs_.data(), m, E, gates_->h, logits_.data());
    const float* sel = gates_->selection_bias.empty() ? nullptr : gates_->sel(layer);
    for (int64_t i = 0; i < m; ++i) {
      int32_t* ids = &miss_ids_[size_t(i * k)];
      float* w = &miss_w_[size_t(i * k)];
      route(cfg_, logits_.data() + i * E, sel, ids, w, probs_.data(), scratch_);
      const int64_t t = miss_[size_t(i)];
      if (memo) memo->put(r.run_token(t), ids, w);
      tok_ids_[size_t(t)] = ids;
      tok_w_[size_t(t)] = w;
    }
  }
  for (int64_t t = 0; t < r.tokens(); ++t) {
    const int32_t* ids = tok_ids_[size_t(t)];
    const float* w = tok_w_[size_t(t)];
    float wsum = 0;
    for (int64_t j = 0; j < k; ++j) wsum += std::abs(w[j]);
    for (int64_t j = 0; j < k; ++j) {
      scores[ids[j]] += 1.0f + 0.5f * (wsum > 0 ? std::abs(w[j]) / wsum : 0.0f);
    }
  }
}

TokenMemo::Table* RouterProbe::memo_table(const StepRouting& r, const std::string& what,
                                          int32_t from, int32_t to) {
  const TokenMemo* memo = r.run().memo();
  if (!memo) return nullptr;
  const int64_t L = r.run().layers();
  if (memo->serial() != tables_of_) {
    tables_of_ = memo->serial();
    tables_.assign(size_t(L * L), nullptr);
    looked_up_.assign(size_t(L * L), 0);
  }
  const size_t i = size_t(int64_t(from) * L + to);
  if (!looked_up_[i]) {
    looked_up_[i] = 1;
    tables_[i] = r.run().memo()->table(
        fmt::format("{}|top_k={}|from={}|to={}", what, cfg_.top_k, from, to), cfg_.top_k);
  }
  return tables_[i];
}

}  // namespace moebench
