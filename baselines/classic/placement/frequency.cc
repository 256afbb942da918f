// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// placement = "frequency": the experts activated most often in a calibration
// workload (disjoint from the evaluation workload). quota = "global" ranks
// all (layer, expert) cells together with no per-layer quota
// (KTransformers' frequency placement); "per-layer" takes each layer's most
// popular (Fiddler's popularity profile). Ties go to the lower layer, then
// the lower expert id.
#include <algorithm>
#include <numeric>

#include "baselines/classic/components.h"
#include "core/util/error.h"

namespace moebench {

const cfg::Schema<FrequencyPlacement::Params>& FrequencyPlacement::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.placement");
    s.choice(
         "quota", &Params::quota, {"global", "per-layer"},
         "Rank all (layer, expert) cells together, or fill each layer with its own most popular.")
        .integer("per_layer", &Params::per_layer,
                 "Experts per layer for quota = per-layer (-1 = cache slots per layer).",
                 cfg::at_least(-1));
    return s;
  }();
  return s;
}

void FrequencyPlacement::place(const PlacementContext& ctx, std::vector<SlotRef>& out) {
  if (!ctx.calibration) throw InternalError("frequency placement without calibration data");
  const CalibrationProfile& prof = ctx.calibration->profile();
  const int64_t L = ctx.model->moe_layers(), E = ctx.model->routed_experts;
  if (p_.quota == "per-layer") {
    const int64_t n = std::min(E, p_.per_layer >= 0 ? p_.per_layer : ctx.slots_per_layer);
    std::vector<int32_t> ids(E);
    for (int64_t l = 0; l < L; ++l) {
      std::iota(ids.begin(), ids.end(), 0);
      std::stable_sort(ids.begin(), ids.end(),
                       [&](int32_t a, int32_t b) { return prof.count(l, a) > prof.count(l, b); });
      for (int64_t i = 0; i < n; ++i) out.push_back({int32_t(l), ids[i]});
    }
    return;
  }
  std::vector<int64_t> cells(L * E);
  std::iota(cells.begin(), cells.end(), 0);
  std::stable_sort(cells.begin(), cells.end(),
                   [&](int64_t a, int64_t b) { return prof.counts[a] > prof.counts[b]; });
  const int64_t budget = ctx.slots_per_layer * L;
  std::vector<int64_t> per(L, 0);
  for (int64_t i = 0; i < int64_t(cells.size()) && int64_t(out.size()) < budget; ++i) {
    const int32_t l = int32_t(cells[i] / E), e = int32_t(cells[i] % E);
    // A per-layer pool cannot take more than its slots in one layer.
    if (!ctx.global_pool && per[l] >= ctx.slots_per_layer) continue;
    ++per[l];
    out.push_back({l, e});
  }
}

}  // namespace moebench
