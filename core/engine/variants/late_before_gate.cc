// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// residency.late_prefetch = "before-gate": a prefetch whose copy would land
// after its target layer's gate is dropped (HybriMoE's text: prefetch "as long
// as the link is idle before the target layer needs it").
#include "core/engine/variants/late_prefetch.h"

namespace moebench {

namespace {

class BeforeGate final : public LatePrefetchRule {
 public:
  std::string name() const override { return "before-gate"; }
  bool drops() const override { return true; }
  bool too_late(const PrefetchLanding& p) const override { return p.lands_ns > p.gate_ns; }
};

}  // namespace

std::unique_ptr<LatePrefetchRule> before_gate_rule() {
  return std::make_unique<BeforeGate>();
}

}  // namespace moebench
