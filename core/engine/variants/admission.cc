// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/variants/admission.h"

#include <fmt/format.h>

#include "core/util/error.h"
#include "core/util/strings.h"

namespace moebench {

namespace {

struct AdmissionRuleMaker {
  const char* name;
  std::unique_ptr<AdmissionRule> (*make)(const ResidencySpec&);
};

// Every admission rule, by name (residency.admission).
const AdmissionRuleMaker kAdmissionRules[] = {
    {"at-gate", at_gate_admission},
    {"one-at-a-time", one_at_a_time_admission},
};

}  // namespace

std::vector<std::string> admission_rule_names() {
  std::vector<std::string> v;
  for (const AdmissionRuleMaker& m : kAdmissionRules) v.push_back(m.name);
  return v;
}

std::unique_ptr<AdmissionRule> make_admission_rule(const ResidencySpec& r) {
  for (const AdmissionRuleMaker& m : kAdmissionRules) {
    if (r.admission == m.name) return m.make(r);
  }
  throw Error(fmt::format("strategy.residency.admission: expected one of {}, found \"{}\"",
                          join(admission_rule_names(), ", "), r.admission));
}

}  // namespace moebench
