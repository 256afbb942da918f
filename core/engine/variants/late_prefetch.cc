// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/variants/late_prefetch.h"

#include <fmt/format.h>

#include "core/util/error.h"
#include "core/util/strings.h"

namespace moebench {

namespace {

struct LatePrefetchRuleMaker {
  const char* name;
  std::unique_ptr<LatePrefetchRule> (*make)();
};

// Every prefetch rule, by name (residency.late_prefetch).
const LatePrefetchRuleMaker kLatePrefetchRules[] = {
    {"before-demand", before_demand_rule},
    {"before-gate", before_gate_rule},
    {"issue", issue_every_prefetch_rule},
};

}  // namespace

std::vector<std::string> late_prefetch_rule_names() {
  std::vector<std::string> v;
  for (const LatePrefetchRuleMaker& m : kLatePrefetchRules) v.push_back(m.name);
  return v;
}

std::unique_ptr<LatePrefetchRule> make_late_prefetch_rule(const std::string& name) {
  for (const LatePrefetchRuleMaker& m : kLatePrefetchRules) {
    if (name == m.name) return m.make();
  }
  throw Error(fmt::format("strategy.residency.late_prefetch: expected one of {}, found \"{}\"",
                          join(late_prefetch_rule_names(), ", "), name));
}

}  // namespace moebench
