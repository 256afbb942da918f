// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// assigner = "resident": cached experts on the GPU, the others on the CPU,
// no loads (SMoE's decode split; KTransformers with fixed GPU experts).
#include "baselines/classic/components.h"

namespace moebench {

const cfg::Schema<ResidentAssigner::Params>& ResidentAssigner::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.assigner");
    s.boolean("serialize", &Params::serialize,
              "CPU experts wait for the GPU experts (no overlap in a layer).");
    return s;
  }();
  return s;
}

void ResidentAssigner::plan(const Context& ctx, LayerPlan& out) {
  for (const auto& a : ctx.active) {
    // An expert still in flight counts as on the GPU: the GPU waits for it.
    if (ctx.residency->cached(ctx.layer, a.expert))
      out.gpu.push_back(a.expert);
    else
      out.cpu.push_back(a.expert);
  }
  out.serialize = p_.serialize;
}

}  // namespace moebench
