// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// KTransformers (SOSP '25). Its placements and assigners are the classic
// ones (all-cpu: routed experts on the CPU, shared experts and the rest on
// the GPU; resident: fixed GPU experts chosen by uniform / front-loading /
// random / frequency placement; layerwise); what is its own is Expert
// Deferral.

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/policy.h"
#include "core/policy/component_util.h"

namespace moebench {

// Expert Deferral (decode only; the core never asks at the last MoE layer,
// so the first MoE layer receives nothing): of a token's k routed experts the
// n_deferred lowest-ranked are computed on the CPU while the GPU runs the next
// layer's attention, and their output joins the residual at the next layer's
// MoE output (O_k = I_k + S_k + R_{k-1}^def + R_k^imm).
//   rule "rank" (paper artifact): each expert's best rank over the batch's
//     tokens; the n_deferred worst of these are deferred;
//   rule "union-protect" (current code): the union over tokens of each
//     token's top-(k - n_deferred) is protected, every other activated
//     expert is deferred.
// n_deferred = -1 picks, per layer, the smallest value whose deferred CPU
// work covers the GPU's next-layer non-MoE and shared-expert time (the CPU
// stays busy) while keeping at least `min_immediate` immediate experts.
// Experts resident on the GPU are never deferred (they run there).
class ExpertDeferral : public Deferral {
 public:
  struct Params {
    std::string rule = "rank";
    int64_t n_deferred = -1;
    int64_t min_immediate = 2;
    static const cfg::Schema<Params>& schema();
  };
  explicit ExpertDeferral(const Params& p) : p_(p) {}
  void choose(const Context& ctx, std::vector<int32_t>& deferred) override;
  // The n_deferred this layer uses (the heuristic when n_deferred = -1).
  int64_t count_for(const Context& ctx) const;

 private:
  Params p_;
  std::vector<int32_t> order_;
  std::vector<uint8_t> protect_;
};

// KTransformers' dynamic expert update (kt-kernel with SGLang,
// --kt-enable-dynamic-expert-update): after a layer ran whole on the GPU
// (the resident assigner's full-GPU fallback, gpu_prefill_threshold; read
// from the layer's plan: nothing on the CPU), the layer's GPU experts become
// the step's most activated ones, as many as the layer held, copied from the
// full-layer buffer inside GPU memory (Swap::on_device). Otherwise the
// residency never changes (the victim is never asked for: nothing is
// admitted).
class KtDynamicUpdateCache : public CachePolicy {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.cache";
  };
  using Params = EmptyParams<Tag>;
  explicit KtDynamicUpdateCache(const Params&) {}
  void after_layer(const Context& ctx, std::vector<Swap>& out) override;
  size_t victim(std::span<const SlotRef> c, SlotRef incoming, const Context&) override;

 private:
  std::vector<int32_t> order_, keep_;
  std::vector<int64_t> tokens_;
};

}  // namespace moebench
