// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Fate (Fang et al., arXiv 2502.12224): an offloading system for edge GPUs
// that prefetches the next layer's experts from the current layer's gate
// input (predictor "cross-layer"), keeps each layer's cache by ARC (cache
// "arc") and gives the GPU budget to the shallow layers first (placement
// "shallow-first"). docs/STRATEGIES.md, "Fate".

#include <cstdint>
#include <vector>

#include "core/engine/policy.h"

namespace moebench {

// The shallow-favoring split of the GPU budget (layers x slots_per_layer
// expert slots): the first `shallow_layers` layers hold all their experts
// and every deeper layer an equal share of the rest; a budget smaller than
// the shallow layers fills whole layers from the first. In a per-layer pool
// the split is the layers' cache shares (layer_shares); in a global pool
// only the initial placement (a cache that evicts within the layer, "arc",
// keeps it).
class ShallowFirstPlacement : public Placement {
 public:
  struct Params {
    int64_t shallow_layers = 4;
    static const cfg::Schema<Params>& schema();
  };
  explicit ShallowFirstPlacement(const Params& p) : p_(p) {}
  std::vector<int64_t> layer_shares(const PlacementContext& ctx) override;
  void place(const PlacementContext& ctx, std::vector<SlotRef>& out) override;
  // Experts per MoE layer for `budget` slots (the rule above).
  static std::vector<int64_t> shares(int64_t layers, int64_t experts, int64_t budget,
                                     int64_t shallow_layers);

 private:
  Params p_;
};

}  // namespace moebench
