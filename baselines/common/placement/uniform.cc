// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// placement = "uniform": experts 0..n-1 of every MoE layer (KTransformers'
// uniform GPU-expert placement; also the initial state of the plain cache
// experiment). n = the cache's slots per layer unless `per_layer` says fewer.
#include "baselines/common/components.h"

namespace moebench {

const cfg::Schema<UniformPlacement::Params>& UniformPlacement::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.placement");
    s.integer("per_layer", &Params::per_layer,
              "Experts per layer (-1 = fill the cache's slots per layer).", cfg::at_least(-1));
    return s;
  }();
  return s;
}

void UniformPlacement::place(const PlacementContext& ctx, std::vector<SlotRef>& out) {
  const int64_t L = ctx.model->moe_layers(), E = ctx.model->routed_experts;
  const int64_t n = std::min(E, p_.per_layer >= 0 ? p_.per_layer : ctx.slots_per_layer);
  for (int64_t l = 0; l < L; ++l) {
    for (int64_t e = 0; e < n; ++e) out.push_back({int32_t(l), int32_t(e)});
  }
}

}  // namespace moebench
