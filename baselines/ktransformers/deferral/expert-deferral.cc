// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// deferral = "expert-deferral" (KTransformers, SOSP '25, section 4.2).
#include <algorithm>

#include "baselines/ktransformers/components.h"

namespace moebench {

const cfg::Schema<ExpertDeferral::Params>& ExpertDeferral::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.deferral");
    s.choice("rule", &Params::rule, {"rank", "union-protect"},
             "rank: defer the experts with the worst best-rank (paper artifact); union-protect: "
             "protect every "
             "token's top-(k - n_deferred) (current code).")
        .integer("n_deferred", &Params::n_deferred,
                 "Deferred experts per token (-1: the smallest count that keeps the CPU busy "
                 "during the next "
                 "layer's GPU work).",
                 cfg::at_least(-1))
        .integer("min_immediate", &Params::min_immediate,
                 "Immediate experts always kept per token.", cfg::at_least(1));
    return s;
  }();
  return s;
}

int64_t ExpertDeferral::count_for(const Context& ctx) const {
  const int64_t cap = std::max<int64_t>(0, ctx.top_k - p_.min_immediate);
  if (p_.n_deferred >= 0) return std::min(p_.n_deferred, cap);
  // The GPU's work in the next layer before it needs the deferred outputs.
  const int64_t n = ctx.routing->tokens();
  const double window = ctx.layer_nonmoe_ns + ctx.cost->gpu_shared_ns(n);
  // Deferred work, lowest-ranked experts first: one token's expert at a time
  // (decode batches are small; each deferred expert costs at least this).
  double work = 0;
  for (int64_t d = 1; d <= cap; ++d) {
    work += ctx.cost->cpu_expert_ns(1, d == 1);
    if (work >= window) return d;
  }
  return cap;
}

void ExpertDeferral::choose(const Context& ctx, std::vector<int32_t>& deferred) {
  const int64_t nd = count_for(ctx);
  if (nd <= 0) return;
  const int64_t k = ctx.top_k;
  auto on_gpu = [&](int32_t e) { return ctx.residency->cached(ctx.layer, e); };
  if (p_.rule == "rank") {
    // Worst best-rank first; ties: smaller combine weight, then higher id.
    order_.clear();
    for (const auto& a : ctx.active) {
      if (!on_gpu(a.expert)) order_.push_back(a.expert);
    }
    auto find = [&](int32_t e) -> const ActiveExpert& {
      return *std::lower_bound(ctx.active.begin(), ctx.active.end(), e,
                               [](const ActiveExpert& a, int32_t x) { return a.expert < x; });
    };
    std::stable_sort(order_.begin(), order_.end(), [&](int32_t x, int32_t y) {
      const ActiveExpert &a = find(x), &b = find(y);
      if (a.best_rank != b.best_rank) return a.best_rank > b.best_rank;
      if (a.weight_sum != b.weight_sum) return a.weight_sum < b.weight_sum;
      return a.expert > b.expert;
    });
    // Only experts outside every token's protected top-(k - nd) ranks.
    for (int32_t e : order_) {
      if (int64_t(deferred.size()) >= nd) break;
      if (find(e).best_rank >= k - nd) deferred.push_back(e);
    }
    std::sort(deferred.begin(), deferred.end());
    return;
  }
  // union-protect
  protect_.assign(size_t(ctx.experts), 0);
  const StepRouting& r = *ctx.routing;
  for (int64_t t = 0; t < r.tokens(); ++t) {
    const int32_t* ids = r.ids(t, ctx.layer);
    if (ids[0] == kHoleId) continue;  // a hole in the trace: no expert
    for (int64_t j = 0; j < k - nd; ++j) protect_[ids[j]] = 1;
  }
  for (const auto& a : ctx.active) {
    if (!protect_[a.expert] && !on_gpu(a.expert)) deferred.push_back(a.expert);
  }
}

}  // namespace moebench
