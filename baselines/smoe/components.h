// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// SMoE: prefill with a CPU-vs-GPU rule and ping-pong pipelined loads, a
// decode cache filled from prefill frequencies, token-wise prefetch driven by
// a trained predictor with LFU eviction, and SMoE-Flex.

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/policy.h"
#include "core/policy/component_util.h"

namespace moebench {

// Prefill (rule "cost"): expert e goes to the GPU when
// t_cpu(e, w_e) > t_gpu(e, w_e) + t_h2d(e) (no copy when it is cached), else
// to the CPU; GPU experts not cached are loaded through `staging_buffers`
// ping-pong buffers (load i+1 while computing i), cached ones first so the
// copies overlap their compute, then the loaded ones by load (descending).
// Prefill rule "all-cpu": the public code runs every routed expert on the CPU.
// Decode: cached activated experts on the GPU, the rest on the CPU, no
// on-demand loads; the GPU waits for the layer's pending cache update.
class SmoeAssigner : public Assigner {
 public:
  struct Params {
    std::string prefill = "cost";  // "cost" | "all-cpu" (the code)
    int64_t staging_buffers = 2;
    // The public script's gpu_compute_max_num: at most this many cached
    // experts per decode layer-step run on the GPU (-1: no cap).
    int64_t gpu_max = -1;
    static const cfg::Schema<Params>& schema();
  };
  explicit SmoeAssigner(const Params& p) : p_(p) {}
  void plan(const Context& ctx, LayerPlan& out) override;

 private:
  Params p_;
};

// LFU by cumulative activation counts (never reset). After each prefill step
// the per-layer cache is filled with that prefill's most frequent experts
// (fill_slots per layer, -1 = every slot), replacing the least counted.
class SmoeLfuCache : public CachePolicy {
 public:
  struct Params {
    bool fill_after_prefill = true;
    int64_t fill_slots = -1;
    static const cfg::Schema<Params>& schema();
  };
  explicit SmoeLfuCache(const Params& p) : p_(p) {}
  void reset(const CacheSetup& s) override;
  void on_gate(const Context& ctx) override;
  void on_insert(int32_t layer, int32_t expert, const Context&) override;
  size_t victim(std::span<const SlotRef> c, SlotRef incoming, const Context&) override;
  void after_step(const Context& ctx, std::vector<Swap>& out) override;

 private:
  Params p_;
  CacheSetup setup_;
  uint64_t clock_ = 0;
  std::vector<int64_t> count_, prefill_;
  std::vector<uint64_t> last_;
};

// Token-wise prefetch (decode): after layer l's GPU experts, the predictor
// scores the experts layer l will use for the next token. Predicted = its
// top-k. mode "fixed-N": the up-to-N best predicted experts not cached are
// loaded into layer l's cache; mode "adaptive": only the top-N predictions
// are considered, so fewer may move. Victims are cached experts not
// predicted (the predicted cached ones are held), by the cache policy's
// order (LFU). flex = true (SMoE-Flex): prefetch only on the half of the
// layers with the best predictor quality on calibration data.
class TokenWisePrefetcher : public Prefetcher {
 public:
  bool predicts() const override { return true; }
  struct Params {
    int64_t n = 2;                 // DeepSeek-V3: 2, Qwen3: 3
    std::string mode = "fixed-N";  // "fixed-N" | "adaptive"
    bool flex = false;
    double flex_fraction = 0.5;  // share of layers kept with flex
    int64_t start_layer = 0;     // the public script's prefetch_start_layer (MoE layer index)
    static const cfg::Schema<Params>& schema();
  };
  explicit TokenWisePrefetcher(const Params& p) : p_(p) {}
  void after_gpu_experts(const Context& ctx, std::vector<PrefetchRequest>& out) override;
  double predict_gpu_ns(const Context& ctx) const override;
  // Layers that prefetch (all unless flex); computed on first use.
  const std::vector<uint8_t>& enabled_layers(int32_t layers);

 private:
  Params p_;
  std::vector<uint8_t> enabled_;
  std::vector<float> scores_;
  std::vector<int32_t> top_, loads_;
};

}  // namespace moebench
