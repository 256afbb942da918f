// prefetcher = "token-wise": SMoE's token-wise prefetch (and SMoE-Flex).
#include <algorithm>

#include <fmt/format.h>

#include "baselines/smoe/components.h"
#include "core/trace/routing.h"
#include "core/util/error.h"

namespace moebench {

const cfg::Schema<TokenWisePrefetcher::Params>& TokenWisePrefetcher::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.prefetcher");
    s.integer("n", &Params::n, "Experts replaced per layer and token (DeepSeek-V3: 2, Qwen3: 3).", cfg::at_least(0))
        .choice("mode", &Params::mode, {"fixed-N", "adaptive"},
                "fixed-N: the N best predicted experts not cached; adaptive: only the top-N predictions considered.")
        .boolean("flex", &Params::flex, "SMoE-Flex: prefetch only on the layers the predictor predicts best.")
        .number("flex_fraction", &Params::flex_fraction, "Share of layers that keep prefetching with flex.",
                cfg::open_closed_unit());
    return s;
  }();
  return s;
}

const std::vector<uint8_t>& TokenWisePrefetcher::enabled_layers(int32_t layers) {
  if (int32_t(enabled_.size()) == layers) return enabled_;
  enabled_.assign(size_t(layers), 1);
  if (!p_.flex) return enabled_;
  const std::vector<double> q = predictor_ ? predictor_->layer_quality() : std::vector<double>{};
  if (int32_t(q.size()) != layers) {
    throw Error(fmt::format("prefetcher '{}': flex needs the predictor's per-layer quality on calibration data "
                            "(a trained predictor such as 'linear'), found {} values for {} layers",
                            name(), q.size(), layers));
  }
  std::vector<int32_t> order(layers);
  for (int32_t l = 0; l < layers; ++l) order[l] = l;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return q[a] > q[b]; });
  const int32_t keep = std::max<int32_t>(1, int32_t(double(layers) * p_.flex_fraction + 0.5));
  std::fill(enabled_.begin(), enabled_.end(), 0);
  for (int32_t i = 0; i < keep; ++i) enabled_[order[i]] = 1;
  return enabled_;
}

void TokenWisePrefetcher::after_gpu_experts(const Context& ctx, std::vector<PrefetchRequest>& out) {
  if (ctx.phase != Phase::kDecode || p_.n <= 0 || !ctx.cost->has_gpu()) return;
  if (!predictor_) {
    throw Error(fmt::format("prefetcher '{}': expected a predictor (strategy.predictor), found none", name()));
  }
  if (!enabled_layers(ctx.moe_layers)[ctx.layer]) return;
  scores_.assign(size_t(ctx.experts), 0.0f);
  predictor_->predict(ctx, ctx.layer, 1, scores_);
  const int64_t k = std::min<int64_t>(ctx.top_k, ctx.experts);
  top_.resize(k);
  top_k_indices(scores_.data(), ctx.experts, k, nullptr, top_.data());
  // Predicted experts already cached are held (listed first; the core skips
  // loading them and keeps them out of the victims).
  for (int32_t e : top_) {
    if (ctx.residency->cached(ctx.layer, e)) out.push_back({ctx.layer, e, 1});
  }
  const int64_t consider = p_.mode == "adaptive" ? std::min<int64_t>(p_.n, k) : k;
  int64_t loads = 0;
  for (int64_t i = 0; i < consider && loads < p_.n; ++i) {
    if (ctx.residency->cached(ctx.layer, top_[i])) continue;
    out.push_back({ctx.layer, top_[i], 1});
    ++loads;
  }
}

double TokenWisePrefetcher::predict_gpu_ns(const Context& ctx) const {
  // The prediction runs even with n = 0 (SMoE Fig. 14's "prediction only").
  if (ctx.phase != Phase::kDecode || !predictor_) return 0.0;
  if (!enabled_.empty() && !enabled_[ctx.layer]) return 0.0;
  return predictor_->gpu_ns(*ctx.cost, ctx.routing->tokens());
}

}  // namespace moebench
