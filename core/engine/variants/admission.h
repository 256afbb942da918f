// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// AdmissionRule: residency.admission, when a MoE layer's activated experts
// are judged (a hit: resident when judged) and in what order its GPU experts
// are loaded and computed. One class per setting, each in its own file, made
// by name from one list (admission.cc) that a strategy's parse reads through
// the component catalogue: "at-gate" (admission_at_gate.cc) and
// "one-at-a-time" (admission_one_at_a_time.cc). A rule only asks the engine
// through its AdmissionPort; the engine keeps the residency, the link, the
// cache policy's hooks and the counters.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/config/strategy_spec.h"
#include "core/engine/policy.h"
#include "core/engine/routing_data.h"

namespace moebench {

// What an admission rule may ask of the engine, about the MoE layer whose
// GPU side is running.
class AdmissionPort {
 public:
  virtual ~AdmissionPort() = default;
  // The layer (its MoE index), its activated experts (by expert id), the
  // assigner's plan for it, the step's routing and the model's experts per
  // layer.
  virtual int32_t layer() const = 0;
  virtual const std::vector<ActiveExpert>& active() const = 0;
  virtual const LayerPlan& plan() const = 0;
  virtual const StepRouting& step() const = 0;
  virtual int32_t experts() const = 0;
  // Whether expert e of the layer holds a slot (resident or on its way).
  virtual bool cached(int32_t e) const = 0;
  // Expert e keeps its slot until the layer's hooks are done (if it holds one).
  virtual void pin(int32_t e) = 0;
  // The experts of the layer the next on-demand copies may not evict (the
  // rule fills it before load_on_demand()).
  virtual std::vector<int32_t>& kept() = 0;
  // An on-demand copy of GPU expert e (a victim chosen by the cache policy,
  // or a staging buffer); returns whether it goes to a staging buffer.
  virtual bool load_on_demand(int32_t e) = 0;
  // The GPU expert submitted last computes beside the copy just issued (the
  // gpu-under-copy term looks again at its window).
  virtual void see_later_copies() = 0;
  // GPU expert e, once its copy (if any) has landed; `staged`: read from a
  // staging buffer.
  virtual void compute(int32_t e, bool staged) = 0;
  // Activated expert e judged now: counted (a hit if resident) and told to
  // the cache policy (on_access, and on_hit when it holds a slot).
  virtual void judge(int32_t e) = 0;
  // While a rule admits the layer's experts in turn: `order` is that turn
  // (the oracles' next use counts an expert still to come as used by this
  // step); admitted(e) when e's turn comes; admitting_done() at the end.
  virtual void admitting(std::span<const int32_t> order) = 0;
  virtual void admitted(int32_t e) = 0;
  virtual void admitting_done() = 0;
};

class AdmissionRule {
 public:
  virtual ~AdmissionRule() = default;
  virtual std::string name() const = 0;
  // Whether every activated expert is judged at the layer's gate, before
  // any load (else the rule judges each in its turn through the port).
  virtual bool judges_at_gate() const = 0;
  // The layer's GPU side after the predictor's and shared experts' work:
  // its on-demand copies and its GPU experts.
  virtual void run(AdmissionPort& port) = 0;
};

// Every rule's name (residency.admission), in the list's order.
std::vector<std::string> admission_rule_names();
// The rule residency.admission names (at-gate reads pin_active_token);
// throws moebench::Error naming the choices for an unknown name.
std::unique_ptr<AdmissionRule> make_admission_rule(const ResidencySpec& r);

// Each rule's file.
std::unique_ptr<AdmissionRule> at_gate_admission(const ResidencySpec& r);
std::unique_ptr<AdmissionRule> one_at_a_time_admission(const ResidencySpec& r);

}  // namespace moebench
