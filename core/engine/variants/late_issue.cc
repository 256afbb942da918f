// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// residency.late_prefetch = "issue": every prefetch request is issued, however
// late its copy would land.
#include "core/engine/variants/late_prefetch.h"

namespace moebench {

namespace {

class IssueEvery final : public LatePrefetchRule {
 public:
  std::string name() const override { return "issue"; }
  bool drops() const override { return false; }
  bool too_late(const PrefetchLanding& /*p*/) const override { return false; }
};

}  // namespace

std::unique_ptr<LatePrefetchRule> issue_every_prefetch_rule() {
  return std::make_unique<IssueEvery>();
}

}  // namespace moebench
