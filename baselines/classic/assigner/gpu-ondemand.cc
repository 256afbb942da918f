// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// assigner = "gpu-ondemand": every activated expert runs on the GPU; the
// ones not cached are loaded on demand (mixtral-offloading; AdapMoE without
// adaptive gating). Cached experts go first so the GPU works while the
// missing ones are copied; loads go in expert-id order.
#include "baselines/classic/components.h"

namespace moebench {

const cfg::Schema<GpuOnDemandAssigner::Params>& GpuOnDemandAssigner::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.assigner");
    s.choice("order", &Params::order, {"cached-first", "expert-id"},
             "GPU order: cached experts before loaded ones, or plain expert-id order.");
    return s;
  }();
  return s;
}

void GpuOnDemandAssigner::plan(const Context& ctx, LayerPlan& out) {
  const bool cached_first = p_.order == "cached-first";
  for (const auto& a : ctx.active) {
    const bool cached = ctx.residency->cached(ctx.layer, a.expert);
    if (!cached) out.load.push_back(a.expert);
    if (!cached_first || cached) out.gpu.push_back(a.expert);
  }
  if (cached_first) out.gpu.insert(out.gpu.end(), out.load.begin(), out.load.end());
}

}  // namespace moebench
