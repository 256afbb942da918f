// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// prefetcher = "next-layer": after layer l's gate, of the predictor's top
// `size` experts of layer l + distance (by predicted workload), those not
// cached are loaded: DALI's residual-based prefetching (predictor
// "residual"), AdapMoE's next-layer gate prefetch (predictor "gate-reuse",
// size 2), perfect prefetching (predictor "oracle").
#include <algorithm>

#include <fmt/format.h>

#include "baselines/common/components.h"
#include "core/util/error.h"

namespace moebench {

const cfg::Schema<NextLayerPrefetcher::Params>& NextLayerPrefetcher::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.prefetcher");
    s.integer("size", &Params::size,
              "Experts loaded per layer (DALI: Mixtral 1, DeepSeek-V2-Lite and Qwen 4).",
              cfg::at_least(0))
        .integer("distance", &Params::distance, "How many layers ahead.", cfg::at_least(1))
        .boolean("decode_only", &Params::decode_only, "Prefetch in decode steps only.")
        .number("reduced_share", &Params::reduced_share,
                "The least-predicted experts whose predicted workloads add up to at most this "
                "share of the target layer's are copied at reduced precision "
                "(strategy.residency.reduced_copy_ratio; Fate's code: INT2 for 30% of the "
                "votes); 0: every copy at full precision.",
                cfg::NumRange{0.0, 1.0, false, true});
    return s;
  }();
  return s;
}

void NextLayerPrefetcher::after_gate(const Context& ctx, std::vector<PrefetchRequest>& out) {
  const int32_t target = ctx.layer + int32_t(p_.distance);
  if (target >= ctx.moe_layers || p_.size <= 0 || !ctx.cost->has_gpu()) return;
  if (p_.decode_only && ctx.phase != Phase::kDecode) return;
  if (!predictor_) {
    throw Error(fmt::format(
        "prefetcher '{}': expected a predictor (strategy.predictor), found none", name()));
  }
  scores_.assign(size_t(ctx.experts), 0.0f);
  predictor_->predict(ctx, target, 0, scores_);
  // The top `size` experts by predicted workload; those not already cached
  // are loaded. (Not the top `size` of the uncached ones: a prediction whose
  // best experts are resident loads nothing, as DALI Fig. 18(a) describes
  // prefetching "the expert with the highest predicted workload".)
  order_.clear();
  for (int32_t e = 0; e < ctx.experts; ++e) {
    if (scores_[e] > 0) order_.push_back(e);
  }
  const size_t n = std::min<size_t>(size_t(p_.size), order_.size());
  std::partial_sort(order_.begin(), order_.begin() + std::ptrdiff_t(n), order_.end(),
                    [&](int32_t a, int32_t b) {
                      return scores_[a] != scores_[b] ? scores_[a] > scores_[b] : a < b;
                    });
  // Fate's popularity-aware precision: walking up from the least predicted
  // expert, those whose predicted workloads add up to at most reduced_share
  // of the layer's total are copied reduced.
  const bool reduce = p_.reduced_share > 0.0;
  if (reduce) {
    reduced_.assign(size_t(ctx.experts), 0);
    low_ = order_;
    std::sort(low_.begin(), low_.end(), [&](int32_t a, int32_t b) {
      return scores_[a] != scores_[b] ? scores_[a] < scores_[b] : a > b;
    });
    double total = 0.0;
    for (int32_t e : low_) total += double(scores_[e]);
    double sum = 0.0;
    for (int32_t e : low_) {
      sum += double(scores_[e]);
      if (sum > p_.reduced_share * total) break;
      reduced_[e] = 1;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const int32_t e = order_[i];
    if (!ctx.residency->cached(target, e))
      out.push_back({target, e, 0, reduce && reduced_[e] != 0});
  }
}

double NextLayerPrefetcher::predict_gpu_ns(const Context& ctx) const {
  if (!predictor_ || p_.size <= 0 || ctx.layer + p_.distance >= ctx.moe_layers) return 0.0;
  if (p_.decode_only && ctx.phase != Phase::kDecode) return 0.0;
  return predictor_->gpu_ns(*ctx.cost, ctx.routing->tokens());
}

}  // namespace moebench
