// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// assigner = "hybrimoe-greedy": the public code's assignment. Single-token
// steps: one greedy two-ended pass (greedy_two_ended). Prefill (and, as in
// the code, decode steps of several tokens): every expert on the GPU with
// on-demand loads and the unread layer l + 2 buffer copies (prefill =
// "gpu-ondemand", the code), or the same greedy pass (prefill = "greedy").
#include "baselines/hybrimoe/components.h"

namespace moebench {

const cfg::Schema<HybriMoeGreedyAssigner::Params>& HybriMoeGreedyAssigner::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.assigner");
    s.choice("prefill", &Params::prefill, {"gpu-ondemand", "greedy"},
             "Prefill: every expert on the GPU with misses loaded (the code), or the decode rule.")
        .boolean("single_token_schedule", &Params::single_token_schedule,
                 "Only single-token steps are scheduled (the code); a decode step of several "
                 "tokens takes the prefill path.")
        .boolean("prefill_buffer", &Params::prefill_buffer,
                 "On the prefill path (prefill = gpu-ondemand), every expert of layer l + 2 is "
                 "copied after layer l into a buffer that nothing reads (the code clears it "
                 "before layer l + 2 runs).");
    return s;
  }();
  return s;
}

void HybriMoeGreedyAssigner::plan(const Context& ctx, LayerPlan& out) {
  const bool multi =
      ctx.phase == Phase::kPrefill || (p_.single_token_schedule && ctx.routing->tokens() > 1);
  if (multi && p_.prefill == "gpu-ondemand" && ctx.cost->has_gpu()) {
    if (p_.prefill_buffer && ctx.layer + 2 < ctx.moe_layers)
      out.unread_buffer_layer = ctx.layer + 2;
    for (const auto& a : ctx.active) {
      if (ctx.residency->cached(ctx.layer, a.expert)) out.gpu.push_back(a.expert);
    }
    for (const auto& a : ctx.active) {
      if (!ctx.residency->cached(ctx.layer, a.expert)) {
        out.gpu.push_back(a.expert);
        out.load.push_back(a.expert);
      }
    }
    return;
  }
  const CostModelSched costs(*ctx.cost);
  // Equal loads (every decode expert has load 1) keep the router's order,
  // as the code's stable sort of the router's list does.
  std::vector<SchedExpert> xs = sched_experts(ctx, ctx.active);
  order_by_router(xs, ctx.routing->tokens(), ctx.routing->run().top_k(),
                  [&](int64_t t) { return ctx.routing->ids(t, ctx.layer); });
  const SchedPlan p = greedy_two_ended(xs, costs, sched_start(ctx), ctx.cost->has_gpu());
  out.gpu = p.gpu;
  out.cpu = p.cpu;
  out.load = p.load;
}

}  // namespace moebench
