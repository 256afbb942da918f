// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// placement = "front-loading": the GPU budget (slots per layer x layers)
// fills the first layers completely, in expert-id order (KTransformers'
// front-loading GPU-expert placement). Needs a global pool.
#include "baselines/classic/components.h"
#include "core/util/error.h"

namespace moebench {

void FrontLoadingPlacement::place(const PlacementContext& ctx, std::vector<SlotRef>& out) {
  const int64_t L = ctx.model->moe_layers(), E = ctx.model->routed_experts;
  const int64_t budget = ctx.slots_per_layer * L;
  if (!ctx.global_pool && ctx.slots_per_layer < E && budget > 0) {
    throw Error(fmt::format(
        "placement 'front-loading': expected residency.pool = \"global\" (it fills whole "
        "layers first), found a per-layer pool of {} slots",
        ctx.slots_per_layer));
  }
  for (int64_t i = 0; i < std::min(budget, L * E); ++i)
    out.push_back({int32_t(i / E), int32_t(i % E)});
}

}  // namespace moebench
