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

void RouterProbe::add_experts(const int32_t* ids, const float* w, float tie,
                              std::span<float> scores) const {
  const int64_t k = cfg_.top_k;
  float wsum = 0;
  for (int64_t j = 0; j < k; ++j) wsum += std::abs(w[j]);
  for (int64_t j = 0; j < k; ++j) {
    scores[ids[j]] += 1.0f + tie * (wsum > 0 ? std::abs(w[j]) / wsum : 0.0f);
  }
}

void RouterProbe::add_routed(const float* const* xs, int64_t n, int32_t layer, float tie,
                             std::span<float> scores) {
  if (n <= 0) return;
  const int64_t E = gates_->experts;
  // Every input's logits at once (gemv_batch: the same bits as route_one's gemv on each).
  logits_.resize(size_t(n * E));
  gemv_batch(gates_->w(layer), gates_->b(layer), xs, n, E, gates_->h, logits_.data());
  const float* sel = gates_->selection_bias.empty() ? nullptr : gates_->sel(layer);
  for (int64_t t = 0; t < n; ++t) {
    route(cfg_, logits_.data() + t * E, sel, ids_.data(), w_.data(), probs_.data(), scratch_);
    add_experts(ids_.data(), w_.data(), tie, scores);
  }
}

void RouterProbe::add_step_routed(const StepRouting& r, TokenMemo::Table* memo, int32_t layer,
                                  std::span<float> scores) {
  const int64_t E = gates_->experts, k = cfg_.top_k, m = int64_t(miss_.size());
  miss_ids_.resize(size_t(m * k));
  miss_w_.resize(size_t(m * k));
  if (m > 0) {
    logits_.resize(size_t(m * E));
    gemv_batch(gates_->w(layer), gates_->b(layer), xs_.data(), m, E, gates_->h, logits_.data());
    const float* sel = gates_->selection_bias.empty() ? nullptr : gates_->sel(layer);
    for (int64_t i = 0; i < m; ++i) {
      int32_t* ids = &miss_ids_[size_t(i * k)];
      float* w = &miss_w_[size_t(i * k)];
      route(cfg_, logits_.data() + i * E, sel, ids, w, probs_.data(), scratch_);
      if (memo) memo->put(r.run_token(miss_[size_t(i)]), ids, w);
    }
  }
  // Every token in order, the tie of one input (0.5 / 1) as add_workload_each.
  int64_t next_miss = 0;
  for (int64_t t = 0; t < r.tokens(); ++t) {
    const int64_t h = hit_[size_t(t)];
    if (h >= 0) {
      add_experts(memo_ids_[size_t(h)], memo_w_[size_t(h)], 0.5f, scores);
    } else {
      add_experts(&miss_ids_[size_t(next_miss * k)], &miss_w_[size_t(next_miss * k)], 0.5f, scores);
      ++next_miss;
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
