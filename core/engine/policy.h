// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The plug-in points of a strategy (docs/STRATEGIES.md, "Registered components"). Components
// only decide: they read one Context and return decisions (plans, victims,
// requests); the core validates every decision and executes it. A bad
// decision (an expert computed twice, a victim that is pinned, a load of a
// resident expert, GPU work on a machine without a GPU) is reported as an
// error naming the component.
//
// Hooks, in the order the core calls them for each MoE layer of a step:
//   CachePolicy::on_gate       routing of the layer revealed
//   CachePolicy::on_access     each activated expert, in expert-id order
//                              (residency.admission = "one-at-a-time": in
//                              routing order, each at its turn, after the
//                              loads before it, up to Assigner::plan)
//   Prefetcher::after_gate     predictions for later layers may be queued
//   Deferral::choose           decode only, not the last layer
//   Assigner::plan             CPU/GPU split, on-demand loads, lane order
//   CachePolicy::victim        whenever a slot must be freed
//   Prefetcher::after_gpu_experts   after the layer's GPU experts are scheduled, before its CPU
//   experts CachePolicy::after_layer   window-based swaps
// and after each step: Prefetcher::after_step, CachePolicy::after_step.
//
// Threading: a component instance belongs to one run (one case on one
// workload) and is called from that run's thread only, in the order above;
// it needs no locks and may keep any state between calls. `run_suite
// --jobs N` runs N cases at once, each with its own instances made from the
// one shared, immutable Registry (core/policy/registry.h). State shared
// between runs (a trained predictor's weights) goes through
// core/util/artefact_cache.h, which serialises writers across threads and
// processes.

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/engine/cost_model.h"
#include "core/engine/residency.h"
#include "core/engine/routing_data.h"
#include "core/experiment/experiment.h"
#include "core/policy/registry.h"

namespace moebench {

// One activated expert of a layer in the current step.
struct ActiveExpert {
  int32_t expert = 0;
  int32_t tokens = 0;     // tokens routed to it in this step: its workload w_e
  float weight_sum = 0;   // sum of its combine weights over those tokens
  int32_t best_rank = 0;  // its best rank (0 = top score) in any token's top-k
};

// Activation counts of a calibration workload (disjoint from the
// evaluation workload), for components that need an offline profile.
struct CalibrationProfile {
  int64_t layers = 0, experts = 0, tokens = 0;
  std::vector<int64_t> counts;  // [L][E]
  int64_t count(int64_t l, int64_t e) const { return counts[l * experts + e]; }
};

// Lazily built calibration data: the profile, and the calibration trace
// itself for components that train on it (predictors).
class CalibrationData {
 public:
  virtual ~CalibrationData() = default;
  virtual const CalibrationProfile& profile() const = 0;
  virtual const TraceSource& trace() const = 0;
};

// Where the lanes stand when a hook runs.
struct LaneTimes {
  double gpu_free_ns = 0, cpu_free_ns = 0, h2d_free_ns = 0;
};

struct LayerPlan;

// Everything a component may read at a hook; valid only during the call.
struct Context {
  Phase phase = Phase::kDecode;
  int64_t step = 0;          // global step index (prefill and decode steps counted together)
  int64_t decode_step = -1;  // index of the decode iteration within its batch (-1 in prefill)
  int32_t layer = 0;         // MoE layer of the hook (0-based)
  int32_t moe_layers = 0, experts = 0, top_k = 0;
  double now_ns = 0;                     // simulated time of the hook
  const StepRouting* routing = nullptr;  // this step's tokens; layers <= `layer` revealed
  std::span<const ActiveExpert> active;  // `layer`'s activated experts, by expert id
  const ResidencyView* residency = nullptr;
  const CostModel* cost =
      nullptr;  // what the components plan with (hardware.planning; by default the cost model)
  LaneTimes lanes;
  double layer_nonmoe_ns =
      0;  // this step's attention/norm/router time per layer (the GPU's non-MoE work)
  const GateWeights* gates = nullptr;  // the trace's routers (nullptr if none)
  const CalibrationData* calibration = nullptr;
  // Oracle access: routing of any (step, token) of the run. Non-null only
  // for components that declared needs_future().
  const class FutureView* future = nullptr;
  // CachePolicy::after_layer: the layer's plan as the assigner made it (which
  // experts ran on the GPU, which on the CPU); nullptr at every other hook.
  const LayerPlan* plan = nullptr;
};

// Look-ahead for oracle components (Belady, perfect prediction).
class FutureView {
 public:
  // next_use of an expert never used again.
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max() / 4;
  virtual ~FutureView() = default;
  // Steps from the current position until expert e of layer l is next
  // activated (the current step counts from layers after the current one);
  // a large number if never.
  virtual int64_t next_use(int32_t layer, int32_t expert) const = 0;
  // Where, within step current + step_offset and layer l, expert e is first
  // used: 0 when the layer's experts are admitted together at its gate;
  // with residency.admission = "one-at-a-time", its rank in the order the
  // layer's experts are admitted (a large number if it is not used there).
  // With next_use and the layer it orders every future use exactly, which
  // an optimal replacement needs (Belady's MIN breaks no tie by name).
  virtual int64_t use_position(int64_t step_offset, int32_t layer, int32_t expert) const = 0;
  // Activated experts (with workloads) of layer l in step current + offset.
  virtual std::span<const ActiveExpert> active(int64_t step_offset, int32_t layer) const = 0;
};

// What a component may ask of the core before the run.
struct Needs {
  int64_t top_p = 0;         // router scores of the top-p experts per token and layer
  bool gate_inputs = false;  // gate input vectors (and gate weights)
  bool calibration = false;  // a calibration workload profile / trace
  bool future = false;       // oracle look-ahead
};

// ---------------------------------------------------------------- Residency choice

// What a component may read to choose the run's residency settings once,
// before the run (MoE-Lightning's policy search, docs/STRATEGIES.md): the
// model, the hardware as the strategy's implementation runs on it, the
// strategy's own settings, the decode shape, and the GPU memory any
// settings would need (the core's footprint, core/engine/engine.h).
struct ResidencyQuestion {
  const ModelSpec* model = nullptr;
  const CostModel* cost =
      nullptr;  // what the components plan with (hardware.planning; by default the cost model)
  ResidencySpec base;           // the strategy's own residency settings
  int64_t batch = 0;            // sequences decoded together (one new token each per step)
  int64_t prompt_len = 0;       // tokens per prompt
  int64_t decode_len = 0;       // tokens generated per sequence
  double gpu_capacity_gib = 0;  // the GPU's memory
  std::function<double(const ResidencySpec&)> gpu_gib;  // GPU memory the settings would need
};

// A component's answer: the settings it chose (only attention, micro_batches
// and cache_ratio may differ from the base; the core checks them and their
// GPU memory) with its own estimate of a decode step and why.
struct ResidencyChoice {
  ResidencySpec residency;
  double estimate_ns_per_step = 0;
  std::string why;
};

class PolicyComponent : public Component {
 public:
  virtual Needs needs(const ModelSpec&) const { return {}; }
  // Called once before the run, in family order; at most one component of a
  // strategy may answer (the core refuses two). nullopt: the strategy's own
  // settings stand.
  virtual std::optional<ResidencyChoice> choose_residency(const ResidencyQuestion&) const {
    return std::nullopt;
  }
};

// ---------------------------------------------------------------- Placement

struct PlacementContext {
  const ModelSpec* model = nullptr;
  const CostModel* cost =
      nullptr;  // what the components plan with (hardware.planning; by default the cost model)
  int64_t slots_per_layer = 0;  // cache capacity (per layer; global pools hold layers x this)
  bool global_pool = false;
  const CalibrationData* calibration = nullptr;
  const FutureView* future = nullptr;
  // Per-layer cache shares the placement asked for (Placement::layer_shares);
  // empty: slots_per_layer in every layer.
  std::vector<int64_t> layer_slots;
  int64_t slots(int32_t layer) const {
    return layer_slots.empty() ? slots_per_layer : layer_slots[size_t(layer)];
  }
};

// Decides the initial GPU residency (before the first step).
class Placement : public PolicyComponent {
 public:
  // Per-layer cache shares of a per-layer pool, asked for before place():
  // layer l's cache holds shares[l] experts (each at most the layer's
  // experts, together at most layers x slots_per_layer; the core refuses
  // more). Empty (the default): slots_per_layer in every layer.
  virtual std::vector<int64_t> layer_shares(const PlacementContext&) { return {}; }
  // Appends (layer, expert) pairs to place. The core rejects more than the
  // pool holds and duplicates.
  virtual void place(const PlacementContext& ctx, std::vector<SlotRef>& out) = 0;
};

// ---------------------------------------------------------------- Assigner

// Where each activated expert of a layer runs and in which order.
struct LayerPlan {
  std::vector<int32_t> gpu;   // experts computed on the GPU, in GPU order
  std::vector<int32_t> cpu;   // experts computed on the CPU, in CPU order
  std::vector<int32_t> load;  // GPU experts not cached now, loaded on demand, in link order
  // CPU experts start only after the GPU experts finish (no CPU/GPU overlap
  // inside the layer: llama.cpp's sequential execution, Fiddler's sum rule).
  bool serialize = false;
  // On-demand loads that do not enter the cache go through this many
  // staging buffers (SMoE's ping-pong pair = 2): the load into a buffer
  // cannot start before the GPU expert that last used it has finished.
  // 0 = unlimited.
  int32_t staging_buffers = 0;
  // The layer's GPU experts start only after every transfer into this
  // layer's slots that is in flight at the gate has finished (SMoE: the GPU
  // waits for the layer's pending cache update; the wait is reported).
  bool wait_layer_transfers = false;
  // When the layer is done, every expert of this MoE layer is copied into a
  // buffer that no expert reads (-1: none): link time and bytes, no
  // residency. The HybriMoE code's prefill buffer for layer l + 2, cleared
  // at the end of layer l + 1 before layer l + 2 could use it.
  int32_t unread_buffer_layer = -1;
  void clear() {
    gpu.clear();
    cpu.clear();
    load.clear();
    serialize = false;
    staging_buffers = 0;
    wait_layer_transfers = false;
    unread_buffer_layer = -1;
  }
};

class Assigner : public PolicyComponent {
 public:
  // Plans ctx.active (minus deferred experts, which the core runs on the CPU).
  virtual void plan(const Context& ctx, LayerPlan& out) = 0;
};

// ---------------------------------------------------------------- CachePolicy

struct CacheSetup {
  int32_t layers = 0, experts = 0;
  int64_t slots_per_layer = 0;
  bool global_pool = false;
  std::vector<int64_t> layer_slots;  // per-layer cache shares (empty: slots_per_layer each)
};

// A cache policy ranks; the core owns residency, pinning and capacity.
class CachePolicy : public PolicyComponent {
 public:
  // Before the run, after placement.
  virtual void reset(const CacheSetup&) {}
  // Routing of ctx.layer revealed (scores for MRS, counts for LFU).
  virtual void on_gate(const Context&) {}
  // An activated expert is accessed (a use: recency and frequency policies
  // count it here, not in on_gate, so that under admission "one-at-a-time"
  // an expert whose turn has not come is not yet counted as used).
  virtual void on_access(int32_t /*layer*/, const ActiveExpert& /*a*/, const Context&) {}
  // An activated expert was found cached (resident or in flight), right
  // after its on_access.
  virtual void on_hit(int32_t /*layer*/, int32_t /*expert*/, const Context&) {}
  // An expert entered a slot (placement, load, prefetch, swap).
  virtual void on_insert(int32_t /*layer*/, int32_t /*expert*/, const Context&) {}
  virtual void on_evict(int32_t /*layer*/, int32_t /*expert*/, const Context&) {}
  // Chooses which of `candidates` (resident, unpinned, never empty) to evict
  // so that `incoming` of layer ctx.layer... fits. Returns an index into
  // candidates. Ties must be broken deterministically.
  virtual size_t victim(std::span<const SlotRef> candidates, SlotRef incoming,
                        const Context& ctx) = 0;
  // Optional swaps proposed after a layer (window-based policies): load
  // `incoming`, evicting `outgoing` (which must be resident and unpinned).
  // on_device (after_layer only): the incoming expert's weights are on the
  // GPU already, because it ran there in this layer from a copy that was not
  // kept (a full-layer buffer, KTransformers' dynamic expert update): it
  // becomes resident by a copy inside GPU memory, with no link transfer.
  struct Swap {
    SlotRef outgoing, incoming;
    bool on_device = false;
  };
  virtual void after_layer(const Context&, std::vector<Swap>&) {}
  // After each step (e.g. SMoE fills the decode cache after prefill).
  virtual void after_step(const Context&, std::vector<Swap>&) {}
  // With a prefetch buffer (residency.prefetch_buffer): whether a prefetched
  // expert its layer used enters the cache share when the layer is done
  // (the core asks victim() for a slot of the share when it is full, then
  // calls on_insert), rather than leaving with the buffer. While it is in
  // the buffer, ctx.residency->buffered() says so (its load's on_insert
  // included).
  virtual bool admits_prefetched() const { return false; }
};

// ---------------------------------------------------------------- Prefetcher

struct PrefetchRequest {
  int32_t layer = 0;  // MoE layer whose expert to load
  int32_t expert = 0;
  int64_t target_step_offset = 0;  // 0 = this step, 1 = the next step (token-wise)
  // A reduced-precision copy (residency.reduced_copy_ratio of the bytes:
  // Fate's INT2 copies of its least-predicted experts).
  bool reduced = false;
};

class Predictor;

class Prefetcher : public PolicyComponent {
 public:
  virtual void set_predictor(Predictor* p) { predictor_ = p; }
  // After ctx.layer's gate (the link queue and lane times are in ctx).
  virtual void after_gate(const Context&, std::vector<PrefetchRequest>&) {}
  // After ctx.layer's GPU experts are scheduled (ctx.now_ns = their end),
  // before its CPU experts are (ctx.lanes.cpu_free_ns does not count them):
  // the copies it asks for run beside them.
  virtual void after_gpu_experts(const Context&, std::vector<PrefetchRequest>&) {}
  // After each step.
  virtual void after_step(const Context&, std::vector<PrefetchRequest>&) {}
  // Extra GPU work the prefetcher's predictions cost, per layer and step (ns).
  virtual double predict_gpu_ns(const Context&) const { return 0.0; }
  // The most experts it requests for one layer and step (0: none or
  // unbounded); sizes the prefetch buffer (residency.prefetch_buffer).
  virtual int64_t max_per_layer() const { return 0; }
  // Whether it chooses what to load by the strategy's predictor (
  // with predictor "none" such a prefetcher loads nothing, and the strategy
  // is refused at creation rather than run as a silent no-op).
  virtual bool predicts() const { return false; }
  // Whether it asks the predictor for later layers of the current token
  // (target_step_offset 0), which a predictor that only repeats what is
  // already routed cannot score (Predictor::scores_later_layers).
  virtual bool asks_later_layers() const { return false; }
  // Whether it may ask for reduced-precision copies (PrefetchRequest::reduced;
  // a strategy whose residency reduces no copy is refused at creation).
  virtual bool requests_reduced() const { return false; }

 protected:
  Predictor* predictor_ = nullptr;
};

// ---------------------------------------------------------------- Predictor

// Scores the experts a future layer (or the next token) will activate.
class Predictor : public PolicyComponent {
 public:
  // Called once before the run (training, residual vectors).
  virtual void prepare(const ModelSpec&, const CalibrationData*, const GateWeights*) {}
  // Scores[E] for layer `target` of the current step's tokens, summed over
  // tokens (a workload estimate), from what is known at ctx.layer. For
  // token-wise prediction target_step_offset = 1 (the next token).
  virtual void predict(const Context& ctx, int32_t target, int64_t target_step_offset,
                       std::span<float> scores) = 0;
  // Per-layer prediction quality measured on calibration data during
  // prepare() (e.g. validation top-k recall of a trained predictor); empty
  // when the predictor has none. SMoE-Flex ranks layers by it.
  virtual std::vector<double> layer_quality() const { return {}; }
  // GPU time of one prediction for `tokens` tokens (ns), charged by the
  // prefetcher that uses it.
  virtual double gpu_ns(const CostModel&, int64_t /*tokens*/) const { return 0.0; }
  // Whether it can score a later layer of the current token (offset 0);
  // one that predicts from layers already routed (last-iteration) cannot.
  virtual bool scores_later_layers() const { return true; }
};

// ---------------------------------------------------------------- Deferral

class Deferral : public PolicyComponent {
 public:
  // Experts of ctx.layer whose CPU computation is deferred to the next layer.
  virtual void choose(const Context& ctx, std::vector<int32_t>& deferred) = 0;
};

}  // namespace moebench
