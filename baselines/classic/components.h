// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Classic baselines: all-CPU (naive / KTransformers routed experts), GPU-only
// on-demand loading (mixtral-offloading, AdapMoE without adaptive gating),
// llama.cpp's layer-wise mapping, and Fiddler; the static placements they
// and KTransformers' GPU-expert configurations use.

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/policy.h"
#include "core/policy/component_util.h"

namespace moebench {

// ---- assigners

// Every routed expert on the CPU, in expert-id order; GPU residency unused.
class AllCpuAssigner : public Assigner {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.assigner";
  };
  using Params = EmptyParams<Tag>;
  explicit AllCpuAssigner(const Params&) {}
  void plan(const Context& ctx, LayerPlan& out) override;
};

// Every activated expert on the GPU; uncached ones loaded on demand.
class GpuOnDemandAssigner : public Assigner {
 public:
  struct Params {
    std::string order = "cached-first";  // "cached-first" | "expert-id"
    static const cfg::Schema<Params>& schema();
  };
  explicit GpuOnDemandAssigner(const Params& p) : p_(p) {}
  void plan(const Context& ctx, LayerPlan& out) override;

 private:
  Params p_;
};

// Residency decides: experts cached on the GPU run there, the others on the
// CPU; optionally without CPU/GPU overlap inside a layer (llama.cpp runs a
// layer on one device at a time).
// The split both assigners below make: an activated expert that is cached
// runs on the GPU, any other on the CPU, or with `copy_to_gpu` on the GPU
// after a copy through one staging buffer (each copy after the previous
// expert's product: the copy-then-compute layer time when the link and the
// GPU are otherwise idle; whether the copy is kept is residency's
// admit_on_demand). `serialize`: no CPU/GPU overlap in the layer.
void plan_by_residency(const Context& ctx, bool copy_to_gpu, bool serialize, LayerPlan& out);

class ResidentAssigner : public Assigner {
 public:
  struct Params {
    bool serialize = false;
    // KTransformers' full-GPU fallback (kt-kernel with SGLang,
    // --kt-gpu-prefill-token-threshold): a step of at least this many tokens
    // runs the whole layer on the GPU, the experts not resident copied there
    // first and not kept. 0: never.
    int64_t gpu_prefill_threshold = 0;
    static const cfg::Schema<Params>& schema();
  };
  explicit ResidentAssigner(const Params& p) : p_(p) {}
  void plan(const Context& ctx, LayerPlan& out) override;

 private:
  Params p_;
};

// llama.cpp: a layer's experts run where its weights are (the placement puts
// whole layers on the GPU: -ngl, --n-cpu-moe); no overlap of CPU and GPU
// inside a layer. With offload_min_batch > 0, llama.cpp's prompt-processing
// offload (the CUDA backend's offload_op rule): in a step of at least that
// many tokens every activated expert of a CPU layer is copied to the GPU
// (the used experts only, not kept) and computed there; ik_llama.cpp
// scales the threshold by routed experts / top-k (offload_scale).
class LlamaCppAssigner : public Assigner {
 public:
  struct Params {
    bool serialize = false;
    int64_t offload_min_batch = 0;  // 0: never (llama.cpp before the offload rule; -ngl only)
    std::string offload_scale =
        "none";  // "none" (llama.cpp) or "experts-per-active" (ik_llama.cpp)
    static const cfg::Schema<Params>& schema();
  };
  explicit LlamaCppAssigner(const Params& p) : p_(p) {}
  void plan(const Context& ctx, LayerPlan& out) override;
  // The step size from which a CPU layer's experts are offloaded (0: never).
  int64_t offload_threshold(const Context& ctx) const;

 private:
  Params p_;
};

// Fiddler: per expert, the CPU if w_e * cpu latency is below the GPU latency
// (plus the transfer when the expert is not cached), else the GPU. Variants:
// objective "sum" (the code: GPU experts then CPU experts, no overlap) or
// "max" (GPU and CPU overlap).
class FiddlerAssigner : public Assigner {
 public:
  struct Params {
    std::string objective = "sum";
    static const cfg::Schema<Params>& schema();
  };
  explicit FiddlerAssigner(const Params& p) : p_(p) {}
  void plan(const Context& ctx, LayerPlan& out) override;

 private:
  Params p_;
};

// ---- placements

// Whole layers on the GPU (llama.cpp -ngl / --n-cpu-moe; the layer-wise
// KTransformers configuration DALI compared against).
class LayerwisePlacement : public Placement {
 public:
  struct Params {
    int64_t gpu_layers = -1;  // -1: as many whole layers as the cache holds
    std::string side =
        "last";  // "last" (llama.cpp: the first layers' experts stay on the CPU) | "first"
    static const cfg::Schema<Params>& schema();
  };
  explicit LayerwisePlacement(const Params& p) : p_(p) {}
  void place(const PlacementContext& ctx, std::vector<SlotRef>& out) override;

 private:
  Params p_;
};

// The most activated experts of a calibration workload: per layer (Fiddler's
// popularity profile) or globally without a per-layer quota (KTransformers'
// "frequency" placement).
class FrequencyPlacement : public Placement {
 public:
  struct Params {
    std::string quota = "global";  // "global" | "per-layer"
    int64_t per_layer = -1;        // per-layer quota (-1 = the cache's slots per layer)
    static const cfg::Schema<Params>& schema();
  };
  explicit FrequencyPlacement(const Params& p) : p_(p) {}
  Needs needs(const ModelSpec&) const override {
    Needs n;
    n.calibration = true;
    return n;
  }
  void place(const PlacementContext& ctx, std::vector<SlotRef>& out) override;

 private:
  Params p_;
};

// Random experts (seeded) in every layer: KTransformers' random placement
// (seed 42) and DALI's initial cache.
class RandomPlacement : public Placement {
 public:
  struct Params {
    int64_t seed = 42;
    int64_t per_layer = -1;  // -1 = the cache's slots per layer
    static const cfg::Schema<Params>& schema();
  };
  explicit RandomPlacement(const Params& p) : p_(p) {}
  void place(const PlacementContext& ctx, std::vector<SlotRef>& out) override;

 private:
  Params p_;
};

// The whole budget (slots per layer x layers) given to the first layers,
// filled in expert-id order: KTransformers' front-loading placement.
class FrontLoadingPlacement : public Placement {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.placement";
  };
  using Params = EmptyParams<Tag>;
  explicit FrontLoadingPlacement(const Params&) {}
  void place(const PlacementContext& ctx, std::vector<SlotRef>& out) override;
};

}  // namespace moebench
