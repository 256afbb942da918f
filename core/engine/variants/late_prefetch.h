// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// LatePrefetchRule: residency.late_prefetch, when a prefetch request is
// dropped before it evicts anything (docs/STRATEGIES.md, "The prefetch
// rule"). The engine keeps the mechanism: it estimates when the request's
// copy would land (queued behind the link's work, then one copy as the copy
// variants shape it) and when its target layer's gate comes (the previous
// step's gate-to-gate time); the rule only decides from those. One class per
// setting, each in its own file (late_issue.cc, late_before_gate.cc,
// late_before_demand.cc), made by name from one list (late_prefetch.cc) that
// a strategy's parse reads through the component catalogue.

#include <memory>
#include <string>
#include <vector>

namespace moebench {

// What the engine estimates for a prefetch request it is about to issue.
struct PrefetchLanding {
  double lands_ns = 0;        // when its copy would land
  double gate_ns = 0;         // its target layer's estimated gate
  double demand_copy_ns = 0;  // a demand load's copy time (as the copy variants shape it)
};

class LatePrefetchRule {
 public:
  virtual ~LatePrefetchRule() = default;
  virtual std::string name() const = 0;
  // Whether the rule drops any request (false: the engine estimates nothing).
  virtual bool drops() const = 0;
  // Whether the request is dropped.
  virtual bool too_late(const PrefetchLanding& p) const = 0;
};

// Every rule's name (residency.late_prefetch), in the list's order.
std::vector<std::string> late_prefetch_rule_names();
// The rule by name; throws moebench::Error naming the choices for an unknown name.
std::unique_ptr<LatePrefetchRule> make_late_prefetch_rule(const std::string& name);

// Each rule's file.
std::unique_ptr<LatePrefetchRule> issue_every_prefetch_rule();
std::unique_ptr<LatePrefetchRule> before_gate_rule();
std::unique_ptr<LatePrefetchRule> before_demand_rule();

}  // namespace moebench
