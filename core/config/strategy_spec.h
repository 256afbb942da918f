// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// StrategySpec: a named composition of policy components (docs/STRATEGIES.md)
// plus the residency settings the core enforces for it.
//
// A component is written either as a name (`cache = "lru"`) or as a table
// (`[cache] kind = "mrs"  alpha = 0.5`). Which kinds exist and which params
// each accepts is known to the component registry; the loader asks it
// through the ComponentCatalog interface so that typos in a kind or a param
// are reported at load time with the file, line and a suggestion.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/schema.h"

namespace moebench {

// The six plug-in points, in the order the engine consults them.
inline const std::vector<std::string>& component_families() {
  static const std::vector<std::string> f = {"placement",  "assigner",  "cache",
                                             "prefetcher", "predictor", "deferral"};
  return f;
}

struct ComponentSpec {
  std::string kind = "none";
  cfg::Value params;  // the component's table without "kind"
  Where where;        // where the component is written
};

// Core-owned residency settings ("things no paper specifies" are parameters
// here, and each preset says which it uses; see analysis/METRICS.md).
struct ResidencySpec {
  double cache_ratio = 0.0;      // fraction of each layer's routed experts the GPU may hold
  int64_t slots_per_layer = -1;  // >= 0 overrides cache_ratio
  // The cache takes the GPU memory the non-expert weights, the KV cache of
  // batch_size sequences and the runtime leave (docs/SERVING.md, "GPU
  // memory"): more concurrency, fewer expert slots. Overrides cache_ratio.
  bool cache_fill = false;
  std::string pool =
      "per-layer";                // "per-layer": C slots per layer; "global": one pool of L*C slots
  bool pin_active_token = false;  // experts of the token in flight cannot be evicted
  bool admit_on_demand = true;    // experts loaded on demand enter the cache
  // When an activated expert's hit is judged (docs/STRATEGIES.md, "How each
  // system's code counts a hit"): a rule of core/engine/variants/ by name,
  // checked through the catalogue (the engine's list). "at-gate", every activated expert of the
  // layer at its gate, before any load; "one-at-a-time", the layer's experts
  // in routing order, each when its turn comes, after the loads before it
  // (which may have evicted it).
  std::string admission = "at-gate";
  bool prefetch_buffer =
      false;  // + the prefetcher's per-layer maximum in slots, beside the cache share
  std::string link_order = "demand-first";  // "demand-first" | "fifo" for the H2D lane
  bool cancel_stale_prefetch = false;       // drop queued prefetches whose layer has passed
  // The prefetch rule (docs/STRATEGIES.md): a rule of core/engine/variants/
  // by name, checked through the catalogue (the engine's list).
  // "before-demand" drops a request (before it evicts anything) whose copy
  // would land after a demand load issued at its target layer's estimated
  // gate; "before-gate" one that would land after that gate; "issue" issues
  // every request.
  std::string late_prefetch = "before-demand";
  // Where a decode step's attention runs and the KV cache lives
  // (docs/STRATEGIES.md, "MoE-Lightning"): an attention path of
  // core/engine/variants/ by name, checked through the catalogue (the
  // engine's list); the default runs it on the GPU over a KV cache in GPU
  // memory.
  std::string attention = "gpu";
  // A decode step's sequences in this many micro-batches, each through a
  // layer's attention and experts in turn, the next micro-batch's attention
  // issued before this one's experts (CGOPipe's order); 1: the whole batch.
  int64_t micro_batches = 1;
  // When a micro-batch's attention is issued: "ahead", before the previous
  // micro-batch's experts (CGOPipe: the CPU's attention of one overlaps the
  // GPU's experts of another); "serial", after them (FlexGen's loop over GPU
  // batches, synchronised after each: nothing of the two overlaps).
  std::string attention_order = "ahead";
  // An expert evicted to make room for a copy is first copied back to host
  // memory in the same copy stream (Mixtral-Offloading's swap: each expert
  // lives in one place, GPU or host): the copy that replaces it also takes
  // the device-to-host copy's time.
  bool writeback = false;
  // Expert copies and GPU work share one stream (Mixtral-Offloading's code:
  // everything on PyTorch's default CUDA stream): a copy starts after the GPU
  // work submitted before it, GPU work after the copies issued before it.
  bool one_stream = false;
  // A reduced-precision copy (Fate's INT2 transfers of an INT4 cache: its
  // code's formats give 4 / 5 = 0.8) moves this fraction of an expert's
  // bytes; 1: no copy is reduced. Which copies: every demand load when
  // reduced_demand_loads, and the prefetches the prefetcher marks reduced.
  double reduced_copy_ratio = 1.0;
  bool reduced_demand_loads = false;
  // From this MoE layer on, every expert computed on the GPU that stays in
  // the cache is copied again from host memory when its layer's GPU work is
  // done (Fate's code dequantises in place and reloads INT4 after computing,
  // from its second layer on); usable again when the copy lands. -1: never.
  int64_t recopy_from_layer = -1;

  // Slots per layer for a model with `experts` routed experts per layer.
  int64_t slots(int64_t experts) const;
  static const cfg::Schema<ResidencySpec>& schema();
};

// The software a strategy runs as (docs/COST_MODEL.md, "Implementations"):
// the stack around the experts and the CPU expert-kernel family. The names
// are the same on every testbed; what each costs on a machine is in that
// hardware profile's [[stack]] and [[cpu_kernel]] entries (a profile without
// an entry for a name uses its own [cpu] and [gpu] values).
struct ImplementationSpec {
  std::string stack = "generic";       // e.g. "ktransformers", "llamacpp", "pytorch"
  std::string cpu_kernel = "generic";  // e.g. "ktransformers", "ggml", "pytorch"
  std::string source;                  // why this strategy runs on this stack and kernel

  static const cfg::Schema<ImplementationSpec>& schema();
};

// Implemented by the policy registry.
class ComponentCatalog {
 public:
  virtual ~ComponentCatalog() = default;
  // Registered kinds of a family, e.g. kinds("cache") = {"belady", "lfu", ...}.
  virtual std::vector<std::string> kinds(const std::string& family) const = 0;
  // Validates `params` for family/kind (throws ConfigError naming `prefix`
  // keys) and returns the fully resolved params, defaults included.
  virtual nlohmann::ordered_json resolve(const std::string& family, const std::string& kind,
                                         const cfg::Value& params,
                                         const std::string& prefix) const = 0;
  // True when `key` is a list-valued param (an array there is not a sweep axis).
  virtual bool is_list_param(const std::string& family, const std::string& kind,
                             const std::string& key) const = 0;
};

struct StrategySpec {
  std::string name;
  std::string description;
  std::string system;  // "ktransformers", "hybrimoe", "smoe", "dali", "classic", "oracle", "user"
  std::string variant = "paper";  // "paper" | "code" | "ablation" | "oracle" | "baseline"
  std::string source;             // paper section / code reference
  ResidencySpec residency;
  ImplementationSpec implementation;
  ComponentSpec placement, assigner, cache, prefetcher, predictor, deferral;

  ComponentSpec& component(const std::string& family);
  const ComponentSpec& component(const std::string& family) const;

  // Parses a strategy table (after preset merging). With a catalog, every
  // component kind and param is checked.
  static StrategySpec parse(const cfg::Value& v, const std::string& prefix,
                            const ComponentCatalog* catalog);
  // Resolved JSON: identity, residency and each component with its full params.
  nlohmann::ordered_json to_json(const ComponentCatalog* catalog) const;

  // Keys a strategy table may hold besides the components.
  static const std::vector<std::string>& top_level_keys();
};

}  // namespace moebench
