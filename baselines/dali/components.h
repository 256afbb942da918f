// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// DALI: greedy and exact workload-aware CPU/GPU assignment, residual-based
// prefetching (predictor "residual" with the "next-layer" prefetcher) and a
// workload-aware window cache. No public code exists; the paper is the only
// source.

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/policy.h"
#include "core/policy/component_util.h"

namespace moebench {

// One activated expert as the assignment problem sees it.
struct AssignItem {
  int32_t expert = 0;
  double gpu = 0;  // t_gpu(e) = max(transfer (0 if resident), compute_gpu(e, w_e))
  double cpu = 0;  // t_cpu(e) = compute_cpu(e, w_e)
  bool cached = false;
};

// The CPU's first expert of a layer costs `cpu_warmup` more (cost model).
struct AssignProblem {
  std::vector<AssignItem> items;
  double cpu_warmup = 0;
  int64_t max_gpu_loads = -1;  // GPU memory: uncached GPU experts at most (-1: no limit)
  bool has_gpu = true;
};
AssignProblem assign_problem(const Context& ctx, int64_t max_gpu_loads);
// max(T_gpu, T_cpu) of an assignment (on_gpu[i] per item).
double assign_cost(const AssignProblem& p, const std::vector<uint8_t>& on_gpu);

// DALI Algorithm 1: sort by |t_gpu - t_cpu| descending; each expert goes to
// the GPU if T_gpu + t_gpu <= T_cpu + t_cpu, else to the CPU.
std::vector<uint8_t> greedy_assign(const AssignProblem& p);
// The exact 0-1 optimum of min max(T_gpu, T_cpu) by branch and bound
// (items by |t_gpu - t_cpu| descending, the greedy plan as the first
// incumbent, bound max(T_gpu, T_cpu, (T_gpu + T_cpu + sum of the remaining
// min(t_gpu, t_cpu)) / 2)). Stops after max_nodes nodes with the best plan
// found (*proven = false).
std::vector<uint8_t> optimal_assign(const AssignProblem& p, int64_t max_nodes, bool* proven);

// Turns an assignment into a LayerPlan: resident GPU experts first (by
// t_gpu descending), then the loaded ones in the same order (their copies
// pipeline with the compute before them); CPU experts by t_cpu descending.
void to_layer_plan(const AssignProblem& p, const std::vector<uint8_t>& on_gpu,
                   int32_t staging_buffers, LayerPlan& out);

class DaliGreedyAssigner : public Assigner {
 public:
  struct Params {
    int64_t staging_buffers = 2;  // pipelined load and compute
    int64_t max_gpu_loads = -1;
    static const cfg::Schema<Params>& schema();
  };
  explicit DaliGreedyAssigner(const Params& p) : p_(p) {}
  void plan(const Context& ctx, LayerPlan& out) override;

 private:
  Params p_;
};

class DaliOptAssigner : public Assigner {
 public:
  struct Params {
    int64_t staging_buffers = 2;
    int64_t max_gpu_loads = -1;
    int64_t max_nodes = 2000000;
    static const cfg::Schema<Params>& schema();
  };
  explicit DaliOptAssigner(const Params& p) : p_(p) {}
  void plan(const Context& ctx, LayerPlan& out) override;
  int64_t unproven() const { return unproven_; }

 private:
  Params p_;
  int64_t unproven_ = 0;
};

// DALI Algorithm 2: per layer, a workload score per expert summed over a
// window of w_size steps; at each window end the u_size highest-scoring
// non-resident experts replace the u_size lowest-scoring resident ones
// (pairwise, only where the incoming score is higher), then scores reset.
// As a victim for any other load (prefetch), the lowest score goes.
class DaliWindowCache : public CachePolicy {
 public:
  // When and what the window swaps (docs/STRATEGIES.md "DALI's
  // window swap"). kAlgorithm2: at steps i = 0, w, 2w, ... of a batch (i = 0
  // the prefill, i = d + 1 after decode step d), the u_size best outsiders
  // replace the u_size worst members unconditionally, as Algorithm 2 reads.
  // kConditional (the earlier reading): after every w_size-th step of the
  // layer, prefill counted, and only where the outsider scored strictly more
  // than the member it replaces (and above zero).
  enum class SwapRule { kAlgorithm2, kConditional };
  struct Params {
    int64_t w_size = 4;
    int64_t u_size = 8;  // Mixtral: 1
    bool prefetched_first = true;
    SwapRule swap = SwapRule::kAlgorithm2;
    static const cfg::Schema<Params>& schema();
  };
  explicit DaliWindowCache(const Params& p) : p_(p) {}
  void reset(const CacheSetup& s) override;
  void on_gate(const Context& ctx) override;
  void on_insert(int32_t layer, int32_t expert, const Context&) override;
  void on_evict(int32_t layer, int32_t expert, const Context&) override;
  size_t victim(std::span<const SlotRef> c, SlotRef incoming, const Context&) override;
  void after_layer(const Context& ctx, std::vector<Swap>& out) override;

 private:
  Params p_;
  CacheSetup setup_;
  std::vector<int64_t> score_, steps_;
  // Per (layer, expert): 1 when it entered by a load that was not one of
  // this policy's window swaps (a prefetch), 2 while a proposed swap brings it in.
  std::vector<uint8_t> origin_;
  bool running_ = false;  // false until the first gate: inserts before it are the placement's
};

}  // namespace moebench
