// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// MoE-Lightning (Cao et al., arXiv 2411.11217, ASPLOS 2025): high-throughput
// batch inference on a memory-constrained GPU. Its CGOPipe schedule is core
// mechanism (residency.attention = "cpu": attention over a host-memory KV
// cache on the CPU; residency.micro_batches: the batch in micro-batches, the
// next one's attention issued before this one's experts); its paged weights
// are this prefetcher. docs/STRATEGIES.md, "MoE-Lightning".

#include <cstdint>
#include <vector>

#include "core/engine/policy.h"

namespace moebench {

// prefetcher = "paged-weights": at each layer's gate, every expert of the
// next MoE layer that is not on the GPU is requested, in expert order (the
// last layer requests the next step's first layer): the next layer's
// weights stream in while this layer computes. With residency.prefetch_buffer
// the buffer holds one layer's experts beside the cache share (the core
// counts two layers' worth, the one computing and the one loading:
// MoE-Lightning's 2 x size(W_L) weight buffer).
class PagedWeightsPrefetcher : public Prefetcher {
 public:
  struct Params {
    bool decode_only = false;
    // "fixed": the strategy's residency settings run; "hrm": MoE-Lightning's
    // policy search ("flexgen": the same candidates under FlexGen's cost
    // model, FlexGen's own search) chooses attention, micro_batches and cache_ratio before
    // the run (hrm.h).
    std::string policy = "fixed";
    int64_t max_micro_batches = 32;
    // Where the candidates with a host-memory KV cache attend: "cpu" or
    // "gpu-host-kv" (the entries copied to the GPU for each layer).
    std::string host_kv_attention = "cpu";
    double cache_ratio_step = 0.25;
    static const cfg::Schema<Params>& schema();
  };
  explicit PagedWeightsPrefetcher(const Params& p) : p_(p) {}
  void after_gate(const Context& ctx, std::vector<PrefetchRequest>& out) override;
  // policy = "hrm" or "flexgen": the fitting candidate with the shortest estimated decode step.
  std::optional<ResidencyChoice> choose_residency(const ResidencyQuestion& q) const override;
  // A whole layer (the core caps a layer's slots at its experts).
  int64_t max_per_layer() const override { return kWholeLayer; }
  static constexpr int64_t kWholeLayer = int64_t(1) << 30;

 private:
  Params p_;
};

}  // namespace moebench
