// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// residency.late_prefetch = "before-demand" (the default): a prefetch whose
// copy would land after a demand load issued at its target layer's gate would
// (the gate plus one demand copy) is dropped: it cannot beat the on-demand
// load it replaces and only takes the link and a slot.
#include "core/engine/variants/late_prefetch.h"

namespace moebench {

namespace {

class BeforeDemand final : public LatePrefetchRule {
 public:
  std::string name() const override { return "before-demand"; }
  bool drops() const override { return true; }
  bool too_late(const PrefetchLanding& p) const override {
    return p.lands_ns > p.gate_ns + p.demand_copy_ns;
  }
};

}  // namespace

std::unique_ptr<LatePrefetchRule> before_demand_rule() {
  return std::make_unique<BeforeDemand>();
}

}  // namespace moebench
