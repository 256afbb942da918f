// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// assigner = "dali-opt": the exact 0-1 optimum of min max(T_cpu, T_gpu)
// (DALI's Opt_plan; also the "exact assignment" oracle). Its solve time is
// the run's decision_assigner_ns, next to the greedy's.
#include "baselines/dali/components.h"

namespace moebench {

const cfg::Schema<DaliOptAssigner::Params>& DaliOptAssigner::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.assigner");
    s.integer(
         "staging_buffers", &Params::staging_buffers,
         "Buffers for on-demand copies that do not enter the cache (pipelined load and compute).",
         cfg::at_least(1))
        .integer("max_gpu_loads", &Params::max_gpu_loads,
                 "Uncached experts the GPU may take per layer (-1: any).", cfg::at_least(-1))
        .integer("max_nodes", &Params::max_nodes,
                 "Branch-and-bound nodes per layer before the best plan found is used.",
                 cfg::at_least(1));
    return s;
  }();
  return s;
}

void DaliOptAssigner::plan(const Context& ctx, LayerPlan& out) {
  const AssignProblem p = assign_problem(ctx, p_.max_gpu_loads);
  bool proven = true;
  const auto a = optimal_assign(p, p_.max_nodes, &proven);
  if (!proven) ++unproven_;
  to_layer_plan(p, a, int32_t(p_.staging_buffers), out);
}

}  // namespace moebench
