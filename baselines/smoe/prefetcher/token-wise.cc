// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// prefetcher = "token-wise": SMoE's token-wise prefetch (and SMoE-Flex).
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "baselines/smoe/components.h"
#include "core/trace/routing.h"
#include "core/util/error.h"

namespace moebench {

const cfg::Schema<TokenWisePrefetcher::Params>& TokenWisePrefetcher::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.prefetcher");
    s.integer("n", &Params::n, "Experts replaced per layer and token (DeepSeek-V3: 2, Qwen3: 3).",
              cfg::at_least(0))
        .choice("mode", &Params::mode, {"fixed-N", "adaptive"},
                "fixed-N: the N best-ranked uncached experts (ranked over all experts, so exactly "
                "N move); adaptive: only the top-N predictions considered.")
        .boolean("flex", &Params::flex,
                 "SMoE-Flex: prefetch only on the layers the predictor predicts best.")
        .number("flex_fraction", &Params::flex_fraction,
                "Share of layers that keep prefetching with flex.", cfg::open_closed_unit())
        .integer("start_layer", &Params::start_layer,
                 "MoE layers below this index neither predict nor prefetch (the public script's "
                 "prefetch_start_layer; 0: every layer).",
                 cfg::at_least(0));
    return s;
  }();
  return s;
}

const std::vector<uint8_t>& TokenWisePrefetcher::enabled_layers(int32_t layers) {
  if (int32_t(enabled_.size()) == layers) return enabled_;
  enabled_.assign(size_t(layers), 1);
  const int32_t start = int32_t(std::min<int64_t>(p_.start_layer, layers));
  std::fill(enabled_.begin(), enabled_.begin() + start, 0);
  if (!p_.flex) return enabled_;
  const std::vector<double> q = predictor_ ? predictor_->layer_quality() : std::vector<double>{};
  if (int32_t(q.size()) != layers) {
    throw Error(fmt::format(
        "prefetcher '{}': flex needs the predictor's per-layer quality on calibration data "
        "(a trained predictor such as 'linear'), found {} values for {} layers",
        name(), q.size(), layers));
  }
  // Flex keeps the best-predicted share of the layers from start_layer on.
  std::vector<int32_t> order;
  for (int32_t l = start; l < layers; ++l) order.push_back(l);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return q[a] > q[b]; });
  const int32_t keep = std::min<int32_t>(
      int32_t(order.size()),
      std::max<int32_t>(1, int32_t(double(order.size()) * p_.flex_fraction + 0.5)));
  std::fill(enabled_.begin(), enabled_.end(), 0);
  for (int32_t i = 0; i < keep; ++i) enabled_[order[i]] = 1;
  return enabled_;
}

void TokenWisePrefetcher::after_gpu_experts(const Context& ctx, std::vector<PrefetchRequest>& out) {
  if (ctx.phase != Phase::kDecode || p_.n <= 0 || !ctx.cost->has_gpu()) return;
  if (!predictor_) {
    throw Error(fmt::format(
        "prefetcher '{}': expected a predictor (strategy.predictor), found none", name()));
  }
  if (!enabled_layers(ctx.moe_layers)[ctx.layer]) return;
  scores_.assign(size_t(ctx.experts), 0.0f);
  predictor_->predict(ctx, ctx.layer, 1, scores_);
  const int64_t k = std::min<int64_t>(ctx.top_k, ctx.experts);
  // Fixed-N ranks every expert: "the top-N predicted experts not already
  // present in the cache" are the N best-ranked uncached ones, wherever they
  // rank, so exactly N move while N uncached experts exist.
  // Adaptive considers only the top-N predictions.
  const bool fixed = p_.mode != "adaptive";
  const int64_t ranked = fixed ? int64_t(ctx.experts) : k;
  top_.resize(size_t(ranked));
  top_k_indices(scores_.data(), ctx.experts, ranked, nullptr, top_.data());
  const int64_t consider = fixed ? ranked : std::min<int64_t>(p_.n, k);
  loads_.clear();
  for (int64_t i = 0; i < consider && int64_t(loads_.size()) < p_.n; ++i) {
    if (!ctx.residency->cached(ctx.layer, top_[i])) loads_.push_back(top_[i]);
  }
  // Predicted (top-k) experts already cached are held (listed first; the
  // core skips loading them and keeps them out of the victims). Fixed-N
  // holds them, best-ranked first, only while enough evictable experts
  // remain for its N loads: the N moves come first, the victims are the
  // least frequently activated (the cache's choice) among the rest.
  int64_t budget = std::numeric_limits<int64_t>::max();
  if (fixed && !ctx.residency->global_pool()) {  // a global pool's victims may come from any layer
    int64_t evictable = 0;
    for (int32_t e : ctx.residency->holders(ctx.layer)) {
      evictable += ctx.residency->resident(ctx.layer, e) && !ctx.residency->pinned(ctx.layer, e);
    }
    const int64_t free =
        std::max<int64_t>(0, ctx.residency->capacity(ctx.layer) - ctx.residency->used(ctx.layer));
    budget = std::max<int64_t>(0, evictable - std::max<int64_t>(0, int64_t(loads_.size()) - free));
  }
  for (int64_t i = 0; i < k; ++i) {
    const int32_t e = top_[i];
    if (!ctx.residency->cached(ctx.layer, e)) continue;
    const bool evictable =
        ctx.residency->resident(ctx.layer, e) && !ctx.residency->pinned(ctx.layer, e);
    if (evictable) {
      if (budget == 0) continue;
      --budget;
    }
    out.push_back({ctx.layer, e, 1});
  }
  for (int32_t e : loads_) out.push_back({ctx.layer, e, 1});
}

double TokenWisePrefetcher::predict_gpu_ns(const Context& ctx) const {
  // The prediction runs even with n = 0 (SMoE Fig. 14's "prediction only").
  if (ctx.phase != Phase::kDecode || !predictor_) return 0.0;
  if (!enabled_.empty() && !enabled_[ctx.layer]) return 0.0;
  if (ctx.layer < p_.start_layer) return 0.0;
  return predictor_->gpu_ns(*ctx.cost, ctx.routing->tokens());
}

}  // namespace moebench
