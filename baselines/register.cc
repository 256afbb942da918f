// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "baselines/register.h"

#include "baselines/classic/components.h"
#include "baselines/common/components.h"
#include "baselines/dali/components.h"
#include "baselines/example/components.h"
#include "baselines/fate/components.h"
#include "baselines/hybrimoe/components.h"
#include "baselines/ktransformers/components.h"
#include "baselines/moe_infinity/components.h"
#include "baselines/moe_lightning/components.h"
#include "baselines/oracle/components.h"
#include "baselines/smoe/components.h"
#include "core/engine/variants/admission.h"
#include "core/engine/variants/attention_path.h"
#include "core/engine/variants/late_prefetch.h"
#include "predictors/components.h"

namespace moebench {

void register_baselines(Registry& r) {
  // placement
  r.add<Placement, NonePlacement>("placement", "none", "Nothing on the GPU at the start.");
  r.add<Placement, UniformPlacement>("placement", "uniform", "Experts 0..n-1 of every layer.");
  r.add<Placement, LayerwisePlacement>("placement", "layerwise",
                                       "Whole MoE layers on the GPU (llama.cpp).");
  r.add<Placement, FrequencyPlacement>("placement", "frequency",
                                       "Most activated experts of a calibration workload.");
  r.add<Placement, RandomPlacement>("placement", "random", "Seeded random experts per layer.");
  r.add<Placement, FrontLoadingPlacement>("placement", "front-loading",
                                          "The GPU budget fills the first layers.");
  r.add<Placement, ShallowFirstPlacement>(
      "placement", "shallow-first", "Fate: the first layers whole, an equal share for the rest.");
  // assigner
  r.add<Assigner, AllCpuAssigner>("assigner", "all-cpu", "Every routed expert on the CPU.");
  r.add<Assigner, GpuOnDemandAssigner>("assigner", "gpu-ondemand",
                                       "Every activated expert on the GPU, misses loaded.");
  r.add<Assigner, ResidentAssigner>("assigner", "resident",
                                    "Cached experts on the GPU, the rest on the CPU.");
  r.add<Assigner, LlamaCppAssigner>("assigner", "llamacpp",
                                    "Layer-wise device split, no overlap in a layer.");
  r.add<Assigner, FiddlerAssigner>("assigner", "fiddler",
                                   "Per expert: CPU if cheaper than GPU (+transfer).");
  r.add<Assigner, HybriMoeAssigner>("assigner", "hybrimoe",
                                    "HybriMoE's simulation-based scheduling (paper).");
  r.add<Assigner, HybriMoeGreedyAssigner>("assigner", "hybrimoe-greedy",
                                          "HybriMoE code: two-ended greedy pass.");
  r.add<Assigner, SmoeAssigner>(
      "assigner", "smoe", "SMoE: prefill cost rule with pipelined loads; decode by residency.");
  r.add<Assigner, DaliGreedyAssigner>("assigner", "dali",
                                      "DALI's greedy workload-aware assignment.");
  r.add<Assigner, DaliOptAssigner>("assigner", "dali-opt",
                                   "Exact min max(T_cpu, T_gpu) assignment (oracle).");
  // cache
  r.add<CachePolicy, NoneCache>("cache", "none", "Residency never changes by replacement.");
  r.add<CachePolicy, LruCache>("cache", "lru", "Least recently used.");
  r.add<CachePolicy, LfuCache>("cache", "lfu", "Least frequently used.");
  r.add<CachePolicy, ArcCache>("cache", "arc", "Adaptive Replacement Cache per layer (Fate).");
  r.add<CachePolicy, BeladyCache>("cache", "belady",
                                  "Oracle: evict the expert used farthest in the future.");
  r.add<CachePolicy, MrsCache>("cache", "mrs", "HybriMoE's Minus Recent Score.");
  r.add<CachePolicy, SmoeLfuCache>("cache", "smoe-lfu",
                                   "SMoE: cumulative LFU, filled from prefill frequencies.");
  r.add<CachePolicy, DaliWindowCache>("cache", "dali-window",
                                      "DALI's workload-aware window replacement.");
  r.add<CachePolicy, ActivationAwareCache>(
      "cache", "activation-aware",
      "MoE-Infinity: current requests' activation share, shallow first.");
  r.add<CachePolicy, KtDynamicUpdateCache>(
      "cache", "kt-dynamic", "KTransformers: GPU experts become a long prompt's top experts.");
  r.add<CachePolicy, FifoCache>("cache", "fifo", "Tutorial example: first in, first out.");
  // prefetcher, predictor, deferral
  r.add<Prefetcher, NonePrefetcher>("prefetcher", "none", "No prefetching.");
  r.add<Prefetcher, NextLayerPrefetcher>("prefetcher", "next-layer",
                                         "Predictor's top experts of a later layer.");
  r.add<Prefetcher, ImpactPrefetcher>("prefetcher", "impact",
                                      "HybriMoE's impact-driven prefetching.");
  r.add<Prefetcher, MrsNextPrefetcher>("prefetcher", "mrs-next",
                                       "HybriMoE code: next layer's top experts by MRS.");
  r.add<Prefetcher, PagedWeightsPrefetcher>(
      "prefetcher", "paged-weights",
      "MoE-Lightning: every uncached expert of the next layer, while this one computes.");
  r.add<Prefetcher, ActivationMatrixPrefetcher>(
      "prefetcher", "activation-matrix",
      "MoE-Infinity: later layers of the most similar past request.");
  r.add<Prefetcher, TokenWisePrefetcher>("prefetcher", "token-wise",
                                         "SMoE's token-wise prefetch (and Flex).");
  r.add<Predictor, NonePredictor>("predictor", "none", "No predictions.");
  register_predictors(r);
  r.add<Deferral, NoneDeferral>("deferral", "none", "No expert deferral.");
  r.add<Deferral, ExpertDeferral>("deferral", "expert-deferral", "KTransformers' Expert Deferral.");
  // Not components: the engine's attention paths, admission and prefetch rules, which a
  // strategy names (residency.attention, residency.admission, residency.late_prefetch).
  r.add_names("attention", attention_path_names());
  r.add_names("admission", admission_rule_names());
  r.add_names("late_prefetch", late_prefetch_rule_names());
}

const Registry& builtin_registry() {
  static const Registry r = [] {
    Registry reg;
    register_baselines(reg);
    return reg;
  }();
  return r;
}

}  // namespace moebench
