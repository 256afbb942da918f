// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
// HybriMoE (DAC 2025): simulation-based hybrid scheduling, impact-driven
// prefetching and Minus Recent Score caching; plus the public code's
// variants (two-ended greedy assignment, MRS-ranked next-layer prefetch).

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/policy.h"
#include "core/policy/component_util.h"

namespace moebench {

// ---------------------------------------------------------------- the scheduler simulation
struct SchedExpert {
  int32_t expert = 0;
  int32_t load = 0;      // tokens routed to it (w_e)
  bool cached = false;   // resident or in flight
  double ready_ns = 0;   // cached: when its weights are usable (0 if resident)
  bool copying = false;  // set by the simulation: being copied by its link timeline
};

// The simulation's queue order: load descending, then expert id ascending.
inline bool sched_heavier(const SchedExpert& a, const SchedExpert& b) {
  return a.load != b.load ? a.load > b.load : a.expert < b.expert;
}

struct SchedTimes {
  double gpu = 0, cpu = 0, link = 0;  // when each timeline is free
};

struct SchedPlan {
  std::vector<int32_t> gpu, cpu, load;  // execution orders and the link order
  double gpu_end = 0, cpu_end = 0;
  double makespan() const { return std::max(gpu_end, cpu_end); }
};

// Costs the simulation uses: the core's cost model by default; tests pass
// their own (the paper's Fig. 5 uses constant GPU time, CPU time linear in
// load, transfers of 3 units).
struct SchedCosts {
  virtual ~SchedCosts() = default;
  virtual double gpu(int32_t load) const = 0;
  virtual double cpu(int32_t load, bool first) const = 0;
  virtual double h2d() const = 0;
};
// The cost model's times, memoised by load (a simulation asks for the same
// few loads many times).
struct CostModelSched : SchedCosts {
  explicit CostModelSched(const CostModel& c) : c_(c), h2d_(c.h2d_expert_ns()) {}
  double gpu(int32_t load) const override {
    return memo(gpu_, load, [&] { return c_.gpu_expert_ns(load); });
  }
  double cpu(int32_t load, bool first) const override {
    return memo(first ? cpu_first_ : cpu_, load, [&] { return c_.cpu_expert_ns(load, first); });
  }
  double h2d() const override { return h2d_; }

 private:
  template <class F>
  static double memo(std::vector<double>& v, int32_t load, F&& f) {
    if (load < 0 || load >= 4096) return f();
    if (size_t(load) >= v.size()) v.resize(size_t(load) + 1, -1.0);
    double& x = v[size_t(load)];
    if (x < 0) x = f();
    return x;
  }
  const CostModel& c_;
  double h2d_;
  mutable std::vector<double> gpu_, cpu_, cpu_first_;
};

// Which timeline takes the next task in HybriMoE's simulation. The paper
// (section IV-B): "the system selects the timeline with the earliest
// completion time". kCompletion reads it as the timeline whose next task
// would finish first (ties: the one free earliest, then GPU, CPU, link);
// kFree as the timeline free earliest (ties: GPU, CPU, link), under which an
// idle link copies the heaviest uncached expert at every gate.
// docs/STRATEGIES.md ("HybriMoE's simulation: which timeline acts").
enum class SchedRule { kCompletion, kFree };
SchedRule sched_rule(const std::string& name);  // "completion" or "free"

// HybriMoE's scheduling simulation (section IV-B): a GPU queue of cached
// experts by load (descending) and a CPU queue of uncached experts by load
// (ascending). Repeatedly one timeline (chosen by `rule`) takes its next
// task: the GPU the head of its queue (waiting for the copy of a
// transferred expert), the CPU the head of its queue or, when that is
// empty, the tail of the GPU queue (lowest load), the link the tail of the
// CPU queue (highest-load uncached expert), which then joins the GPU queue
// by load (the CPU never takes an expert the link is copying). Ends when
// every expert is assigned. `has_gpu` = false puts everything on the CPU;
// `load_misses` = false leaves the link out (every uncached expert on the
// CPU, which may still take cached ones from the GPU queue's tail).
SchedPlan simulate_schedule(const std::vector<SchedExpert>& experts, const SchedCosts& costs,
                            SchedTimes start, bool has_gpu, SchedRule rule,
                            bool load_misses = true);

// max(GPU end, CPU end) of the same simulation, without recording the plan.
double schedule_makespan(const std::vector<SchedExpert>& experts, const SchedCosts& costs,
                         SchedTimes start, bool has_gpu, SchedRule rule, bool load_misses = true);

// The simulation's "misses" setting: "schedule" (load an uncached expert or
// run it on the CPU, whichever the simulation picks) or "cpu" (never load).
bool sched_loads_misses(const std::string& misses);

// The public code's decode assignment: Q = cached by load desc ++ uncached by
// load desc, equal loads in the order given (a stable sort, as the code's;
// the hybrimoe-greedy assigner gives them in router order); the GPU takes
// from the front (cost g, plus waiting for a serialized copy if the front is
// not cached) or the CPU from the back (cost c, with the CPU's warm-up on
// its first expert), whichever finishes earlier; ties go to the GPU.
SchedPlan greedy_two_ended(const std::vector<SchedExpert>& experts, const SchedCosts& costs,
                           SchedTimes start, bool has_gpu);

// Reorders `v` into router order: the experts of the first token's top-k
// in rank order, then each later token's not yet listed (`ids_of(t)` gives
// token t's k ids in rank order); experts no token lists keep their order
// at the end. The public code's list order.
void order_by_router(std::vector<SchedExpert>& v, int64_t tokens, int64_t k,
                     const std::function<const int32_t*(int64_t)>& ids_of);

// The experts of ctx.active as scheduler input, and the timelines at the gate.
std::vector<SchedExpert> sched_experts(const Context& ctx, std::span<const ActiveExpert> active);
SchedTimes sched_start(const Context& ctx);

// ---------------------------------------------------------------- assigners
class HybriMoeAssigner : public Assigner {
 public:
  struct Params {
    std::string timeline = "completion";  // which timeline acts: "completion" (the paper) or "free"
    std::string misses = "schedule";      // an uncached expert: "schedule" (the paper) or "cpu"
    static const cfg::Schema<Params>& schema();
  };
  explicit HybriMoeAssigner(const Params& p)
      : rule_(sched_rule(p.timeline)), load_misses_(sched_loads_misses(p.misses)) {}
  void plan(const Context& ctx, LayerPlan& out) override;

 private:
  SchedRule rule_;
  bool load_misses_;
};

class HybriMoeGreedyAssigner : public Assigner {
 public:
  struct Params {
    std::string prefill =
        "gpu-ondemand";  // the code: prefill runs every expert on the GPU, misses loaded
    // The code schedules only single-token steps (`generate = size(0) == 1`):
    // a decode step of several tokens takes the prefill path too.
    bool single_token_schedule = true;
    // The code's prefill buffer: after each layer l of a multi-token step,
    // every expert of layer l + 2 is copied into a buffer that is cleared
    // before layer l + 2 runs (LayerPlan::unread_buffer_layer).
    bool prefill_buffer = true;
    static const cfg::Schema<Params>& schema();
  };
  explicit HybriMoeGreedyAssigner(const Params& p) : p_(p) {}
  void plan(const Context& ctx, LayerPlan& out) override;

 private:
  Params p_;
};

// ---------------------------------------------------------------- MRS
// Minus Recent Score: per layer S = alpha * TopP(s) + (1 - alpha) * S after
// each gate evaluation, TopP keeping the p largest router probabilities.
struct MrsParams {
  double alpha = 0.5;  // the public code's value (the paper states none)
  int64_t p = -1;      // -1: 2k
  std::string update =
      "mean";  // "mean": s = the step's tokens' TopP averaged; "first-token": the code
  bool id_order_bug =
      false;  // the code: top-p values given to the chosen ids in ascending-id order
};
class MrsScores {
 public:
  void reset(int32_t layers, int32_t experts);
  int64_t p_of(int64_t k) const { return params_.p < 0 ? 2 * k : params_.p; }
  // The update rule is read here once, not per layer.
  void set_params(const MrsParams& p) {
    params_ = p;
    first_token_only_ = p.update == "first-token";
  }
  // Applies the update for ctx.layer from the step's top-p router scores.
  void update(const Context& ctx);
  float score(int32_t layer, int32_t expert) const { return S_[size_t(layer) * E_ + expert]; }

 private:
  MrsParams params_;
  bool first_token_only_ = false;  // params_.update == "first-token"
  int32_t E_ = 0;
  std::vector<float> S_, step_;
  std::vector<int32_t> ids_;
  std::vector<float> vals_;
};

class MrsCache : public CachePolicy {
 public:
  struct Params : MrsParams {
    static const cfg::Schema<Params>& schema();
  };
  explicit MrsCache(const Params& p) : p_(p) { scores_.set_params(p); }
  Needs needs(const ModelSpec& m) const override {
    Needs n;
    n.top_p = scores_.p_of(m.top_k);
    return n;
  }
  void reset(const CacheSetup& s) override { scores_.reset(s.layers, s.experts); }
  void on_gate(const Context& ctx) override { scores_.update(ctx); }
  size_t victim(std::span<const SlotRef> c, SlotRef incoming, const Context& ctx) override;
  const MrsScores& scores() const { return scores_; }

 private:
  Params p_;
  MrsScores scores_;
};

// ---------------------------------------------------------------- prefetchers
// Impact-driven prefetching: after layer l's gate, the predictor gives the
// expected workloads of layers l+1..l+depth; for each predicted expert not
// cached, its impact is the reduction of that layer's simulated latency
// (simulate_schedule) if it were resident. Requests go out in order of
// impact while the link can finish them before the target layer is
// expected to start (now + (j - l) x (this layer's non-MoE time + its
// simulated MoE time)).
class ImpactPrefetcher : public Prefetcher {
 public:
  bool predicts() const override { return true; }
  bool asks_later_layers() const override { return true; }
  struct Params {
    int64_t depth = 3;          // layers ahead (the paper: the next three)
    int64_t max_prefetch = -1;  // requests per layer (-1: as many as the link fits)
    int64_t max_candidates =
        32;  // predicted experts evaluated per target layer (by predicted workload)
    std::string timeline = "completion";  // the simulation's rule, as the assigner's
    std::string misses = "schedule";      // the simulation's uncached experts, as the assigner's
    // A prefetch into layer j never evicts an expert of j that the prediction
    // for j uses (the impact simulation assumes they stay cached).
    bool protect_predicted = true;
    static const cfg::Schema<Params>& schema();
  };
  explicit ImpactPrefetcher(const Params& p)
      : p_(p), rule_(sched_rule(p.timeline)), load_misses_(sched_loads_misses(p.misses)) {}
  void after_gate(const Context& ctx, std::vector<PrefetchRequest>& out) override;
  double predict_gpu_ns(const Context& ctx) const override;

 private:
  Params p_;
  SchedRule rule_;
  bool load_misses_;
  std::vector<float> scores_;
  std::vector<SchedExpert> pred_;
  std::vector<SchedExpert> sorted_;  // pred_ in the simulation's order (load desc, expert id)
  std::vector<size_t> order_,
      at_;  // sorted_[r] = pred_[order_[r]]; at_[i]: pred_[i]'s place in sorted_
  struct Cand {
    int32_t layer, expert;
    double impact;
  };
  std::vector<Cand> cands_;
  std::vector<SlotRef> held_;  // predicted experts already cached, per target layer
};

// The public code's prefetch: in decode, when the layer has at least one GPU
// expert, load the top `prefetch_size` experts of layer l+1 by MRS score that
// are not cached (its own MRS tracker with the cache's parameters).
class MrsNextPrefetcher : public Prefetcher {
 public:
  struct Params : MrsParams {
    int64_t prefetch_size = 0;  // the code's default
    static const cfg::Schema<Params>& schema();
  };
  explicit MrsNextPrefetcher(const Params& p) : p_(p) { scores_.set_params(p); }
  Needs needs(const ModelSpec& m) const override {
    Needs n;
    n.top_p = scores_.p_of(m.top_k);
    return n;
  }
  void after_gate(const Context& ctx, std::vector<PrefetchRequest>& out) override;

 private:
  Params p_;
  MrsScores scores_;
  bool ready_ = false;
  std::vector<int32_t> order_;
};

}  // namespace moebench
