// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// CopyVariant: a residency setting that changes how an expert's weights are
// copied to the GPU, or how the link's copies and the GPU's work share a
// stream: Fate's reduced-precision copies (reduced_copies.cc), Mixtral-
// Offloading's write-back (writeback.cc) and single stream (one_stream.cc),
// Fate's code's copies again after computing (recopy.cc). One class per
// setting, each in its own file, made by name for the settings a strategy
// turns on (CopyVariants). The engine keeps the mechanism (the link, the
// residency, the counters) and asks every variant at the points below;
// without any, an expert copy is one full-precision host-to-device copy on a
// link of its own, and nothing is copied twice.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/hardware_profile.h"
#include "core/config/strategy_spec.h"
#include "core/engine/cost_model.h"
#include "core/engine/lanes.h"
#include "core/engine/task_log.h"

namespace moebench {

// What the engine knows of an expert copy it is about to issue.
struct CopyRequest {
  TaskKind kind = TaskKind::kDemandLoad;
  bool reduced_asked =
      false;  // a prefetch its prefetcher marked reduced (PrefetchRequest::reduced)
  bool evicts_cached = false;  // it takes the slot of an expert evicted from the cache share
};

class CopyVariant {
 public:
  virtual ~CopyVariant() = default;
  virtual std::string name() const = 0;
  // An expert copy about to be issued: `t` comes priced as a full-precision
  // host-to-device copy that may start at its earliest_ns (or as the
  // variants before this one left it); `gpu_free_ns` is when the GPU's work
  // submitted so far ends.
  virtual void shape(Transfer& /*t*/, const CopyRequest& /*r*/, const CostModel& /*cost*/,
                     double /*gpu_free_ns*/) const {}
  // A GPU task about to be submitted: when it may start and the copies it
  // waits behind; `copies_end_ns` is when the copies issued so far end.
  virtual void gpu_task(double* /*ready*/, Waits* /*w*/, double /*copies_end_ns*/) const {}
  // Whether MoE layer `layer`'s GPU experts are copied again once its GPU
  // work is done.
  virtual bool recopies_after(int32_t /*layer*/) const { return false; }
};

// The copy variants a strategy turns on, in a fixed order (the order of
// copy_variant_names()).
class CopyVariants {
 public:
  CopyVariants(const ResidencySpec& r, const HardwareProfile& hw);
  void shape(Transfer& t, const CopyRequest& r, const CostModel& cost, double gpu_free_ns) const {
    for (const auto& v : v_) v->shape(t, r, cost, gpu_free_ns);
  }
  // Prices `t` as a full-precision host-to-device copy of one expert (its
  // time and bytes), then shapes it.
  void price(Transfer& t, const CopyRequest& r, const CostModel& cost, double gpu_free_ns) const {
    t.duration_ns = cost.h2d_expert_ns(1.0);
    t.bytes = cost.expert_bytes();
    shape(t, r, cost, gpu_free_ns);
  }
  void gpu_task(double* ready, Waits* w, double copies_end_ns) const {
    for (const auto& v : v_) v->gpu_task(ready, w, copies_end_ns);
  }
  bool recopies_after(int32_t layer) const {
    for (const auto& v : v_) {
      if (v->recopies_after(layer)) return true;
    }
    return false;
  }
  // An expert copy's time as a variant would shape it, not counting a
  // write-back (what the prefetch rule estimates a copy's landing with).
  double copy_ns(TaskKind kind, bool reduced_asked, const CostModel& cost) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<CopyVariant>> v_;
};

// Every copy variant by name, in the order they shape a copy.
std::vector<std::string> copy_variant_names();

// Each variant's file: the variant when the residency settings turn it on
// (on this hardware), else null.
std::unique_ptr<CopyVariant> reduced_copies_variant(const ResidencySpec& r,
                                                    const HardwareProfile& hw);
std::unique_ptr<CopyVariant> writeback_variant(const ResidencySpec& r, const HardwareProfile& hw);
std::unique_ptr<CopyVariant> one_stream_variant(const ResidencySpec& r, const HardwareProfile& hw);
std::unique_ptr<CopyVariant> recopy_variant(const ResidencySpec& r, const HardwareProfile& hw);

}  // namespace moebench
