// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Fate's reduced-precision copies (residency.reduced_copy_ratio < 1): an INT2
// copy of an expert cached in INT4 moves reduced_copy_ratio of its bytes, in
// that fraction of a full copy's time beyond the link's latency. Which copies:
// every demand load when reduced_demand_loads, and the prefetches the
// prefetcher marks reduced.
#include <cmath>

#include "core/engine/variants/copy_variant.h"

namespace moebench {

namespace {

class ReducedCopies final : public CopyVariant {
 public:
  ReducedCopies(double ratio, bool demand) : ratio_(ratio), demand_(demand) {}
  std::string name() const override { return "reduced-copies"; }
  void shape(Transfer& t, const CopyRequest& r, const CostModel& cost,
             double /*gpu_free_ns*/) const override {
    const bool reduced = (r.kind == TaskKind::kDemandLoad && demand_) ||
                         (r.kind == TaskKind::kPrefetchLoad && r.reduced_asked);
    if (!reduced) return;
    t.duration_ns = cost.h2d_expert_ns(ratio_);
    t.bytes = int64_t(std::llround(ratio_ * double(cost.expert_bytes())));
    t.reduced = true;
  }

 private:
  double ratio_;
  bool demand_;
};

}  // namespace

std::unique_ptr<CopyVariant> reduced_copies_variant(const ResidencySpec& r,
                                                    const HardwareProfile& /*hw*/) {
  // A ratio below 1 needs a reduced copy to shape, and a reduced copy a ratio
  // below 1 (both checked when the strategy is built: StrategyInstance::create).
  if (!(r.reduced_copy_ratio < 1.0)) return nullptr;
  return std::make_unique<ReducedCopies>(r.reduced_copy_ratio, r.reduced_demand_loads);
}

}  // namespace moebench
