// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// placement = "layerwise": whole MoE layers on the GPU. llama.cpp keeps the
// experts of the first layers on the CPU (--n-cpu-moe N) and offloads the
// rest (side = "last"); DALI describes the opposite split (side = "first").
// gpu_layers = -1 takes as many whole layers as the cache's slots allow
// (use a global pool so slots are not tied to layers).
#include "baselines/classic/components.h"
#include "core/util/error.h"

namespace moebench {

const cfg::Schema<LayerwisePlacement::Params>& LayerwisePlacement::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.placement");
    s.integer("gpu_layers", &Params::gpu_layers,
              "MoE layers entirely on the GPU (-1 = as many as the cache holds).",
              cfg::at_least(-1))
        .choice("side", &Params::side, {"last", "first"},
                "Which end of the model goes to the GPU.");
    return s;
  }();
  return s;
}

void LayerwisePlacement::place(const PlacementContext& ctx, std::vector<SlotRef>& out) {
  const int64_t L = ctx.model->moe_layers(), E = ctx.model->routed_experts;
  const int64_t budget = ctx.slots_per_layer * L;  // slots in all layers together
  int64_t n = p_.gpu_layers >= 0 ? p_.gpu_layers : budget / E;
  n = std::min(n, L);
  if (n * E > (ctx.global_pool ? budget : (ctx.slots_per_layer >= E ? budget : 0))) {
    throw Error(fmt::format(
        "placement 'layerwise': expected a cache that can hold {} whole layers of {} experts "
        "(residency.pool = \"global\" with at least {} slots), found {} slots per layer{}",
        n, E, n * E, ctx.slots_per_layer, ctx.global_pool ? " in a global pool" : ""));
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t l = p_.side == "last" ? L - 1 - i : i;
    for (int64_t e = 0; e < E; ++e) out.push_back({int32_t(l), int32_t(e)});
  }
}

}  // namespace moebench
