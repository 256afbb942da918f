// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// MoE-Lightning's policy search by a hierarchical roofline model (HRM), as
// far as its abstract and summaries describe it (docs/STRATEGIES.md,
// "MoE-Lightning", "The policy search"): each candidate policy's decode step
// is estimated from the time each resource (the host-to-device link, the
// device-to-host link, the GPU, the CPU) needs per layer at its own roofline
// (the cost model's formulas, core/engine/cost_model.h), and the policy with
// the highest estimated throughput among those that fit in GPU memory is
// chosen. The estimate is the search's own model, not the simulation: the
// run then executes the chosen policy on the core's lanes, and its rows show
// both (residency_estimate_ms_per_step beside tbt_ms).

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/policy.h"

namespace moebench {

// How a layer's lane times combine into the layer's time.
enum class LayerModel {
  // MoE-Lightning's hierarchical roofline: the longer of the link's copies
  // and the compute pipeline (the busiest compute lane plus the others' work
  // of one micro-batch).
  kRoofline,
  // FlexGen's cost model for a decode layer (its code's
  // experimental/cost_model.py: T_gen = ctog + max(gtoc, dtoc, ctod, comp),
  // comp = gpu_comp + cpu_comp): the host-to-device copies plus the longer of
  // the device-to-host copies and the GPU's and CPU's work added together
  // (no disk here: dtoc = ctod = 0). Its order overlaps nothing of the
  // compute lanes, and the model does not count on the copies overlapping
  // them either.
  kFlexGen,
};

// One candidate: where decode attention runs (A_g: "gpu", or "cpu" with the
// KV cache in host memory; or "gpu-host-kv", on the GPU over a host KV cache
// copied in for each layer), the micro-batches of a decode step, and the
// GPU's share of each layer's experts (r_w).
struct HrmPolicy {
  std::string attention = "cpu";
  int64_t micro_batches = 1;
  double cache_ratio = 0;
};

// The HRM's estimate of one decode step under a policy (ns unless stated).
struct HrmEstimate {
  HrmPolicy policy;
  double gpu_gib = 0;  // GPU memory the policy needs (the core's footprint)
  bool fits = false;   // gpu_gib within the GPU's memory
  // Per MoE layer, summed over the step's micro-batches:
  double link_ns = 0;   // host to device: the paged experts, the attention outputs (and KV entries)
  double d2h_ns = 0;    // device to host: Q, K and V (attention on the CPU)
  double gpu_ns = 0;    // attention (or its projections), routed and shared experts
  double cpu_ns = 0;    // attention over the host KV cache
  double layer_ns = 0;  // the layer's estimate (below)
  double step_ns = 0;   // every MoE layer, the dense layers and the lm head
  double tokens_per_s = 0;
};

// The decode step under `p` for the question's batch and context: each
// lane's work per MoE layer (every uncached expert of a layer paged in,
// E x (1 - (1 - k/E)^n) experts active for n tokens, each with n k / that
// many tokens), and a layer as the longer of the link's weight and
// activation copies and the compute lanes' pipeline: the busiest of the
// GPU, CPU and device-to-host lanes plus the others' work of one
// micro-batch (the pipeline's fill and drain: (sum - max) / m).
HrmEstimate hrm_estimate(const ResidencyQuestion& q, const HrmPolicy& p,
                         LayerModel model = LayerModel::kRoofline);

// Every candidate: attention over a host KV cache (`host_kv_attention`:
// "cpu", or "gpu-host-kv", the cache copied to the GPU for each layer), then
// "gpu" (the KV cache on the GPU); no candidate without a GPU; micro-batches
// 1, 2, 4, ... up to max_micro_batches and the batch, cache_ratio 0, step,
// 2 step, ... 1 (only the base's when residency.slots_per_layer fixes the
// cache share). `best` indexes the fitting candidate with the shortest
// step (the first in this order on a tie), -1 when none fits. `model`
// combines each candidate's lanes (MoE-Lightning's roofline, or FlexGen's
// cost model for FlexGen's own policy search).
struct HrmSearch {
  std::vector<HrmEstimate> candidates;
  int64_t best = -1;
};
HrmSearch hrm_search(const ResidencyQuestion& q, int64_t max_micro_batches, double cache_ratio_step,
                     LayerModel model = LayerModel::kRoofline,
                     const std::string& host_kv_attention = "cpu");

}  // namespace moebench
