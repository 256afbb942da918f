// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// assigner = "fiddler" (Kamahori et al., 2024): per activated expert with
// workload w, run on the CPU if its CPU time is below its GPU time (plus the
// weight transfer when it is not cached), else on the GPU. The public code
// executes GPU experts and then CPU experts (objective "sum", no overlap);
// "max" lets them overlap.
#include "baselines/classic/components.h"

namespace moebench {

const cfg::Schema<FiddlerAssigner::Params>& FiddlerAssigner::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.assigner");
    s.choice("objective", &Params::objective, {"sum", "max"},
             "sum: GPU then CPU experts (the code); max: CPU and GPU overlap.");
    return s;
  }();
  return s;
}

void FiddlerAssigner::plan(const Context& ctx, LayerPlan& out) {
  for (const auto& a : ctx.active) {
    const bool cached = ctx.residency->cached(ctx.layer, a.expert);
    const double gpu =
        ctx.cost->gpu_expert_ns(a.tokens) + (cached ? 0.0 : ctx.cost->h2d_expert_ns());
    const double cpu = ctx.cost->cpu_expert_ns(a.tokens, false);
    if (ctx.cost->has_gpu() && gpu <= cpu) {
      out.gpu.push_back(a.expert);
      if (!cached) out.load.push_back(a.expert);
    } else {
      out.cpu.push_back(a.expert);
    }
  }
  out.serialize = p_.objective == "sum";
}

}  // namespace moebench
