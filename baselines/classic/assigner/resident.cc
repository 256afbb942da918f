// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// assigner = "resident": cached experts on the GPU, the others on the CPU,
// no loads (SMoE's decode split; KTransformers with fixed GPU experts).
// With gpu_prefill_threshold > 0, KTransformers' full-GPU fallback as its
// SGLang integration runs it (docs/STRATEGIES.md, "Peer systems"): a step
// of at least that many tokens runs every activated expert of the layer on
// the GPU; those not resident are copied first (one staging buffer: each
// copy after the previous expert's product, the layer time of copying all
// and then computing when the link and the GPU are otherwise idle) and
// not kept. KTransformers copies every expert of the layer that is not
// resident, used or not; the harness copies the used ones (at the
// thresholds it is run with nearly every expert is used).
#include "baselines/classic/components.h"

namespace moebench {

const cfg::Schema<ResidentAssigner::Params>& ResidentAssigner::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.assigner");
    s.boolean("serialize", &Params::serialize,
              "CPU experts wait for the GPU experts (no overlap in a layer).");
    s.integer("gpu_prefill_threshold", &Params::gpu_prefill_threshold,
              "Steps of at least this many tokens run the whole layer on the GPU, copying the "
              "experts not resident (KTransformers' --kt-gpu-prefill-token-threshold; 0: never).",
              cfg::at_least(0));
    return s;
  }();
  return s;
}

void plan_by_residency(const Context& ctx, bool copy_to_gpu, bool serialize, LayerPlan& out) {
  for (const auto& a : ctx.active) {
    // An expert still in flight counts as on the GPU: the GPU waits for it.
    if (ctx.residency->cached(ctx.layer, a.expert)) {
      out.gpu.push_back(a.expert);
    } else if (copy_to_gpu) {
      out.gpu.push_back(a.expert);
      out.load.push_back(a.expert);
    } else {
      out.cpu.push_back(a.expert);
    }
  }
  out.serialize = serialize;
  if (!out.load.empty()) out.staging_buffers = 1;
}

void ResidentAssigner::plan(const Context& ctx, LayerPlan& out) {
  const bool full_gpu =
      p_.gpu_prefill_threshold > 0 && ctx.routing->tokens() >= p_.gpu_prefill_threshold;
  plan_by_residency(ctx, full_gpu, p_.serialize, out);
}

}  // namespace moebench
