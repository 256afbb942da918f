// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// assigner = "llamacpp": llama.cpp's layer-wise execution. With the
// layerwise placement every layer is entirely on the GPU or on the CPU; its
// experts run where the weights are, and CPU and GPU do not overlap inside a
// layer (serialize defaults to true in the preset).
//
// Prompt-processing offload (offload_min_batch > 0; llama.cpp as used with
// --n-cpu-moe / -ot today, docs/STRATEGIES.md): in a step of at least the
// threshold's tokens (llama.cpp: 32, the CUDA backend's minimum batch for
// offloading an op whose weights are in host memory), every activated
// expert of a CPU layer runs on the GPU after a copy of its weights that is
// not kept (residency.admit_on_demand = false in the preset). llama.cpp
// copies the layer's used experts as the op's input and then computes: one
// staging buffer gives the same layer time (each copy waits for the expert
// before it; the link and the GPU are otherwise idle in a serialized
// layer). ik_llama.cpp offloads only from threshold x routed experts /
// top-k tokens (offload_scale = "experts-per-active"), the step's tokens
// per expert being about tokens x top-k / experts.
#include "baselines/classic/components.h"
#include "core/util/error.h"

namespace moebench {

const cfg::Schema<LlamaCppAssigner::Params>& LlamaCppAssigner::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.assigner");
    s.boolean("serialize", &Params::serialize,
              "CPU experts wait for the GPU experts (no overlap in a layer).");
    s.integer("offload_min_batch", &Params::offload_min_batch,
              "Steps of at least this many tokens copy a CPU layer's activated experts to the GPU "
              "and run them there (llama.cpp: 32; 0: never).",
              cfg::at_least(0));
    s.choice("offload_scale", &Params::offload_scale, {"none", "experts-per-active"},
             "The threshold as it is (llama.cpp) or times routed experts / top-k (ik_llama.cpp).");
    return s;
  }();
  return s;
}

int64_t LlamaCppAssigner::offload_threshold(const Context& ctx) const {
  if (p_.offload_min_batch <= 0) return 0;
  if (p_.offload_scale == "experts-per-active" && ctx.top_k > 0) {
    // ceil(min_batch x experts / top_k): ik_llama.cpp's N_b >= N_tot / N_A x N_min.
    return (p_.offload_min_batch * ctx.experts + ctx.top_k - 1) / ctx.top_k;
  }
  return p_.offload_min_batch;
}

void LlamaCppAssigner::plan(const Context& ctx, LayerPlan& out) {
  const int64_t threshold = offload_threshold(ctx);
  plan_by_residency(ctx, threshold > 0 && ctx.routing->tokens() >= threshold, p_.serialize, out);
}

}  // namespace moebench
