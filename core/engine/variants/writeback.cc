// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Mixtral-Offloading's swap (residency.writeback): each expert lives in one
// place, GPU or host, so an expert evicted from the cache share to make room
// is first copied back to host memory in the same copy stream; the copy that
// replaces it takes the device-to-host copy's time too. An expert leaving the
// prefetch buffer was a copy (its host copy stays): nothing is written back.
#include "core/engine/variants/copy_variant.h"

namespace moebench {

namespace {

class Writeback final : public CopyVariant {
 public:
  std::string name() const override { return "writeback"; }
  void shape(Transfer& t, const CopyRequest& r, const CostModel& cost,
             double /*gpu_free_ns*/) const override {
    if (!r.evicts_cached) return;
    t.duration_ns += cost.d2h_expert_ns();
    t.writeback = true;
  }
};

}  // namespace

std::unique_ptr<CopyVariant> writeback_variant(const ResidencySpec& r,
                                               const HardwareProfile& /*hw*/) {
  if (!r.writeback) return nullptr;
  return std::make_unique<Writeback>();
}

}  // namespace moebench
