// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// placement = "shallow-first": Fate's shallow-favoring expert cache. Its
// public code (memory_cost_qwen / memory_cost_deepseek, read, not copied)
// counts the expert slots the GPU budget holds, C; if C covers fewer than
// four whole layers it fills layers from the first (the last one partly),
// else the first four layers keep all their experts and each deeper layer
// gets floor((C - 4E) / (L - 4)). Shallow layers are favoured because the
// first layer cannot be prefetched (there is no gate before it) and the
// cross-layer prediction is weakest there. A layer's experts are 0..n-1, as
// in the code. In a per-layer pool the split is each layer's cache share
// (the slots the floor leaves over are not used, at most L - 5); in a global
// pool they stay free and on-demand loads may take them.
#include <algorithm>

#include "baselines/fate/components.h"

namespace moebench {

const cfg::Schema<ShallowFirstPlacement::Params>& ShallowFirstPlacement::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.placement");
    s.integer("shallow_layers", &Params::shallow_layers,
              "Leading MoE layers that keep all their experts before deeper layers get any "
              "(Fate's code: 4).",
              cfg::at_least(0));
    return s;
  }();
  return s;
}

std::vector<int64_t> ShallowFirstPlacement::shares(int64_t L, int64_t E, int64_t budget,
                                                   int64_t S) {
  std::vector<int64_t> n(size_t(std::max<int64_t>(L, 0)), 0);
  budget = std::clamp<int64_t>(budget, 0, L * E);
  S = std::min(S, L);
  if (budget < S * E || S == L) {
    for (int64_t l = 0; l < L; ++l) n[size_t(l)] = std::clamp<int64_t>(budget - l * E, 0, E);
    return n;
  }
  const int64_t deep = std::min(E, (budget - S * E) / (L - S));
  for (int64_t l = 0; l < L; ++l) n[size_t(l)] = l < S ? E : deep;
  return n;
}

std::vector<int64_t> ShallowFirstPlacement::layer_shares(const PlacementContext& ctx) {
  if (ctx.global_pool) return {};
  return shares(ctx.model->moe_layers(), ctx.model->routed_experts,
                ctx.slots_per_layer * ctx.model->moe_layers(), p_.shallow_layers);
}

void ShallowFirstPlacement::place(const PlacementContext& ctx, std::vector<SlotRef>& out) {
  const int64_t L = ctx.model->moe_layers(), E = ctx.model->routed_experts;
  const std::vector<int64_t> n = shares(L, E, ctx.slots_per_layer * L, p_.shallow_layers);
  for (int64_t l = 0; l < L; ++l) {
    const int64_t here = ctx.global_pool ? n[size_t(l)] : ctx.slots(int32_t(l));
    for (int64_t e = 0; e < here; ++e) out.push_back({int32_t(l), int32_t(e)});
  }
}

}  // namespace moebench
