// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// assigner = "hybrimoe": the plan of HybriMoE's scheduling simulation
// (prefill and decode): GPU, CPU and link orders exactly as simulated.
#include "baselines/hybrimoe/components.h"

namespace moebench {

const cfg::Schema<HybriMoeAssigner::Params>& HybriMoeAssigner::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.assigner");
    s.choice("timeline", &Params::timeline, {"completion", "free"},
             "Which timeline takes the next task in the simulation: the one whose task would "
             "finish first "
             "(\"completion\", the paper's section IV-B) or the one free earliest (\"free\").")
        .choice("misses", &Params::misses, {"schedule", "cpu"},
                "What the scheduling simulation does with an expert that is not cached: "
                "\"schedule\" (the "
                "paper's section IV-B: the link may copy it for the GPU, or the CPU runs it) or "
                "\"cpu\" (never copied: the CPU computes every cache miss, as SMoE's reproduction "
                "of HybriMoE, SMoE section I: \"utilize the CPU to handle cases of expert cache "
                "misses on the GPU\").");
    return s;
  }();
  return s;
}

void HybriMoeAssigner::plan(const Context& ctx, LayerPlan& out) {
  const CostModelSched costs(*ctx.cost);
  const SchedPlan p = simulate_schedule(sched_experts(ctx, ctx.active), costs, sched_start(ctx),
                                        ctx.cost->has_gpu(), rule_, load_misses_);
  out.gpu = p.gpu;
  out.cpu = p.cpu;
  out.load = p.load;
}

}  // namespace moebench
