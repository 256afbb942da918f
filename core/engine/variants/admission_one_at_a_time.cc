// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// residency.admission = "one-at-a-time": the layer's experts one at a time,
// in routing order (each token's experts by rank, tokens in the step's
// order; an expert is taken at its first use). Each is judged a hit if it is
// resident when its turn comes; a GPU expert that is not there (a planned
// load, or one a load before it evicted) is loaded then, with nothing kept
// but pinned experts, and computed before the next. CPU and deferred experts
// are judged in turn but never admitted. The assigner's plan decides the
// side; its GPU and link orders give way to the routing order.
#include "core/engine/variants/admission.h"

#include "core/util/error.h"

namespace moebench {

namespace {

class OneAtATime final : public AdmissionRule {
 public:
  std::string name() const override { return "one-at-a-time"; }
  bool judges_at_gate() const override { return false; }

  void run(AdmissionPort& port) override {
    if (mark_.size() != size_t(port.experts())) mark_.assign(size_t(port.experts()), 0);
    for (int32_t e : port.plan().gpu) mark_[size_t(e)] = 1;
    order_.clear();
    const StepRouting& step = port.step();
    const int64_t k = step.run().top_k();
    const int32_t l = port.layer();
    for (int64_t t = 0; t < step.tokens(); ++t) {
      const int32_t* ids = step.ids(t, l);
      if (ids[0] == kHoleId) continue;  // a hole: nothing to admit
      for (int64_t j = 0; j < k; ++j) {
        if (mark_[size_t(ids[j])] & 2) continue;
        mark_[size_t(ids[j])] |= 2;
        order_.push_back(ids[j]);
      }
    }
    port.kept().clear();
    port.admitting(order_);
    for (int32_t e : order_) {
      port.admitted(e);  // in its turn now: its use is this one
      port.judge(e);
      if (!(mark_[size_t(e)] & 1)) continue;  // on the CPU (or deferred)
      const bool staged = port.cached(e) ? false : port.load_on_demand(e);
      port.compute(e, staged);
    }
    port.admitting_done();
    for (int32_t e : port.plan().gpu) mark_[size_t(e)] = 0;
    for (int32_t e : order_) mark_[size_t(e)] = 0;
  }

 private:
  std::vector<uint8_t> mark_;   // by expert: 1 on the GPU, 2 in the order (0 between layers)
  std::vector<int32_t> order_;  // the layer's experts in routing order
};

}  // namespace

std::unique_ptr<AdmissionRule> one_at_a_time_admission(const ResidencySpec& r) {
  // A load in turn may evict an expert the same token needs later: pinning
  // the token's experts would contradict it.
  if (r.pin_active_token) {
    throw Error(
        "strategy.residency.pin_active_token: expected false with admission = "
        "\"one-at-a-time\" (a load in turn may evict an expert the same token needs later), "
        "found true");
  }
  return std::make_unique<OneAtATime>();
}

}  // namespace moebench
