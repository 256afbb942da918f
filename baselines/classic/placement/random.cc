// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// placement = "random": per layer, experts drawn without replacement from a
// seeded generator (KTransformers' random placement with seed 42; DALI's
// initial cache).
#include <numeric>

#include "baselines/classic/components.h"
#include "core/util/detmath.h"

namespace moebench {

const cfg::Schema<RandomPlacement::Params>& RandomPlacement::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.placement");
    s.integer("seed", &Params::seed, "Seed of the draw.", cfg::at_least(0))
        .integer("per_layer", &Params::per_layer,
                 "Experts per layer (-1 = the cache's slots per layer).", cfg::at_least(-1));
    return s;
  }();
  return s;
}

void RandomPlacement::place(const PlacementContext& ctx, std::vector<SlotRef>& out) {
  const int64_t L = ctx.model->moe_layers(), E = ctx.model->routed_experts;
  const int64_t n = std::min(E, p_.per_layer >= 0 ? p_.per_layer : ctx.slots_per_layer);
  uint64_t rng = det::mix(uint64_t(p_.seed), 0x706c616365ull);
  std::vector<int32_t> ids(E);
  for (int64_t l = 0; l < L; ++l) {
    std::iota(ids.begin(), ids.end(), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = i + int64_t(det::splitmix64(rng) % uint64_t(E - i));
      std::swap(ids[i], ids[j]);
      out.push_back({int32_t(l), ids[i]});
    }
  }
}

}  // namespace moebench
