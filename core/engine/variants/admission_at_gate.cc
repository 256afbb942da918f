// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// residency.admission = "at-gate" (the default): every expert the layer
// activates is judged at the layer's gate, before any load. With
// pin_active_token and no staging buffers, every activated expert keeps its
// slot: the loads go in the assigner's link order, then the GPU experts run
// in GPU order. Otherwise the rule walks the GPU order, loading each expert
// when its turn comes: an expert computed earlier in the layer may give its
// slot to a later one (the copy then waits for that computation), and the
// loads follow the GPU order.
#include <algorithm>

#include "core/engine/variants/admission.h"

namespace moebench {

namespace {

class AtGate final : public AdmissionRule {
 public:
  explicit AtGate(bool pin_active_token) : pin_active_token_(pin_active_token) {}
  std::string name() const override { return "at-gate"; }
  bool judges_at_gate() const override { return true; }

  void run(AdmissionPort& port) override {
    const LayerPlan& plan = port.plan();
    std::vector<int32_t>& kept = port.kept();
    const bool walk = !pin_active_token_ || plan.staging_buffers > 0;
    if (!walk) {
      for (const auto& a : port.active()) port.pin(a.expert);
      kept.clear();
      for (const auto& a : port.active()) kept.push_back(a.expert);
      for (int32_t e : plan.load) port.load_on_demand(e);
      for (int32_t e : plan.gpu) port.compute(e, false);
      return;
    }
    // Marks only the loads (and clears them after): no pass over every expert a layer.
    if (mark_.size() != size_t(port.experts())) mark_.assign(size_t(port.experts()), 0);
    for (int32_t e : plan.load) mark_[size_t(e)] = 1;
    for (size_t i = 0; i < plan.gpu.size(); ++i) {
      const int32_t e = plan.gpu[i];
      bool staged = false;
      if (mark_[size_t(e)] == 1) {
        kept.clear();
        if (pin_active_token_) {
          for (const auto& a : port.active()) kept.push_back(a.expert);
        } else {
          kept.assign(plan.gpu.begin() + std::ptrdiff_t(i), plan.gpu.end());
        }
        staged = port.load_on_demand(e);
        port.see_later_copies();
      }
      port.compute(e, staged);
    }
    for (int32_t e : plan.load) mark_[size_t(e)] = 0;
  }

 private:
  bool pin_active_token_;
  std::vector<uint8_t> mark_;  // by expert: 1 = loaded on demand in this layer (0 between layers)
};

}  // namespace

std::unique_ptr<AdmissionRule> at_gate_admission(const ResidencySpec& r) {
  return std::make_unique<AtGate>(r.pin_active_token);
}

}  // namespace moebench
