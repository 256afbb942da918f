// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Mixtral-Offloading's code (residency.one_stream): expert copies and GPU work
// share PyTorch's default CUDA stream, so a copy starts after the GPU work
// submitted before it and a GPU task after the copies issued before it.
// Without a GPU there is no stream to share: the setting does nothing.
#include <algorithm>

#include "core/engine/variants/copy_variant.h"

namespace moebench {

namespace {

class OneStream final : public CopyVariant {
 public:
  std::string name() const override { return "one-stream"; }
  void shape(Transfer& t, const CopyRequest& /*r*/, const CostModel& /*cost*/,
             double gpu_free_ns) const override {
    t.earliest_ns = std::max(t.earliest_ns, gpu_free_ns);  // behind the GPU's work
  }
  void gpu_task(double* ready, Waits* w, double copies_end_ns) const override {
    w->copies_end = std::max(w->copies_end, copies_end_ns);  // behind every copy so far
    *ready = std::max(*ready, copies_end_ns);
  }
};

}  // namespace

std::unique_ptr<CopyVariant> one_stream_variant(const ResidencySpec& r, const HardwareProfile& hw) {
  if (!r.one_stream || !hw.has_gpu()) return nullptr;
  return std::make_unique<OneStream>();
}

}  // namespace moebench
