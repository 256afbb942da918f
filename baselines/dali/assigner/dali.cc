// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// assigner = "dali": DALI's greedy assignment (Algorithm 1).
#include "baselines/dali/components.h"

namespace moebench {

const cfg::Schema<DaliGreedyAssigner::Params>& DaliGreedyAssigner::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.assigner");
    s.integer(
         "staging_buffers", &Params::staging_buffers,
         "Buffers for on-demand copies that do not enter the cache (pipelined load and compute).",
         cfg::at_least(1))
        .integer("max_gpu_loads", &Params::max_gpu_loads,
                 "Uncached experts the GPU may take per layer (-1: any).", cfg::at_least(-1));
    return s;
  }();
  return s;
}

void DaliGreedyAssigner::plan(const Context& ctx, LayerPlan& out) {
  const AssignProblem p = assign_problem(ctx, p_.max_gpu_loads);
  to_layer_plan(p, greedy_assign(p), int32_t(p_.staging_buffers), out);
}

}  // namespace moebench
