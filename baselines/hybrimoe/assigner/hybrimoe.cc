// assigner = "hybrimoe": the plan of HybriMoE's scheduling simulation
// (prefill and decode): GPU, CPU and link orders exactly as simulated.
#include "baselines/hybrimoe/components.h"

namespace moebench {

void HybriMoeAssigner::plan(const Context& ctx, LayerPlan& out) {
  const CostModelSched costs(*ctx.cost);
  const SchedPlan p = simulate_schedule(sched_experts(ctx, ctx.active), costs, sched_start(ctx), ctx.cost->has_gpu());
  out.gpu = p.gpu;
  out.cpu = p.cpu;
  out.load = p.load;
}

}  // namespace moebench
