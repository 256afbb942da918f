// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// prefetcher = "paged-weights": MoE-Lightning's paged weights (the next
// layer's experts copied while this layer computes). docs/STRATEGIES.md,
// "MoE-Lightning".
#include "baselines/moe_lightning/components.h"

namespace moebench {

const cfg::Schema<PagedWeightsPrefetcher::Params>& PagedWeightsPrefetcher::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.prefetcher");
    s.boolean("decode_only", &Params::decode_only,
              "Page weights in decode steps only (prefill steps load on demand).");
    return s;
  }();
  return s;
}

void PagedWeightsPrefetcher::after_gate(const Context& ctx, std::vector<PrefetchRequest>& out) {
  if (!ctx.cost->has_gpu()) return;
  if (p_.decode_only && ctx.phase != Phase::kDecode) return;
  // The last layer pages the first layer of the next step.
  const bool wrap = ctx.layer + 1 >= ctx.moe_layers;
  const int32_t target = wrap ? 0 : ctx.layer + 1;
  for (int32_t e = 0; e < ctx.experts; ++e) {
    if (!ctx.residency->cached(target, e)) out.push_back({target, e, wrap ? 1 : 0});
  }
}

}  // namespace moebench
