// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// assigner = "all-cpu": every routed expert on the CPU (KTransformers'
// routed experts; the "naive" baseline of DALI Fig. 14/19). Shared experts
// still run on the GPU (the core schedules them).
#include "baselines/classic/components.h"

namespace moebench {

void AllCpuAssigner::plan(const Context& ctx, LayerPlan& out) {
  for (const auto& a : ctx.active) out.cpu.push_back(a.expert);
}

}  // namespace moebench
