// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The engine's class, shared by the files that define its parts (inside the
// engine only; the rest of the project uses core/engine/engine.h):
//   engine.cc            setup, the run loop, a step's tokens, task submission
//   engine_layer.cc      a MoE layer's stages: gate, decide, GPU side, CPU side, after
//   engine_transfers.cc  the link: loads, prefetches, swaps, the prefetch buffer
//   engine_pipeline.cc   micro-batches (pipelined decode), the attention paths' port
//   variants/            copy variants and attention paths (one class per file, by name)
//   batch_state.h        the tokens running: a step or a micro-batch
//   planned_future.cc    the oracles' look-ahead (its own class)
//   task_log.cc          task ids, the task graph check, the timeline (its own class)
//   scheduler/           which tokens each step runs (a family made by name)
//   request_log.cc       each request's times in a served run (its own class)
//   run_modes.h          the residency modes a step reads, parsed once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include <fmt/format.h>

#include "core/engine/batch_state.h"
#include "core/engine/engine.h"
#include "core/engine/gate_stream.h"
#include "core/engine/planned_future.h"
#include "core/engine/request_log.h"
#include "core/engine/routing_cache.h"
#include "core/engine/run_modes.h"
#include "core/engine/task_log.h"
#include "core/engine/variants/admission.h"
#include "core/engine/variants/attention_path.h"
#include "core/engine/variants/copy_variant.h"
#include "core/engine/variants/late_prefetch.h"
#include "core/scheduler/scheduler.h"
#include "core/util/cancel.h"
#include "core/util/error.h"
#include "core/util/memory.h"

namespace moebench {

namespace engine_impl {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kFamPlacement = 0, kFamAssigner = 1, kFamCache = 2, kFamPrefetcher = 3,
              kFamPredictor = 4, kFamDeferral = 5;

// Handed to the prefetcher in place of the strategy's predictor: times each
// prediction separately. Predictions stand for GPU work of the simulated
// system (router or predictor matmuls, charged in simulated time through
// Predictor::gpu_ns), so their host time is reported as its own family and
// not as the prefetcher's decision time.
class TimedPredictor final : public Predictor {
 public:
  TimedPredictor(Predictor* inner, const bool* sample, double* fam_ns, double* nested_ns)
      : inner_(inner), sample_(sample), fam_ns_(fam_ns), nested_ns_(nested_ns) {
    set_name(inner->name());
  }
  void predict(const Context& ctx, int32_t target, int64_t offset,
               std::span<float> scores) override {
    if (!*sample_) {
      inner_->predict(ctx, target, offset, scores);
      return;
    }
    const auto t0 = Clock::now();
    inner_->predict(ctx, target, offset, scores);
    const double dt = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    *fam_ns_ += dt;
    *nested_ns_ += dt;
  }
  std::vector<double> layer_quality() const override { return inner_->layer_quality(); }
  double gpu_ns(const CostModel& c, int64_t tokens) const override {
    return inner_->gpu_ns(c, tokens);
  }

 private:
  Predictor* inner_;
  const bool* sample_;
  double* fam_ns_;
  double* nested_ns_;
};

}  // namespace engine_impl

namespace engine_impl {

// The host time of the components' decisions on sampled MoE layers
// (EngineOptions::decision_sample_every), per family, predictions apart.
class DecisionClock {
 public:
  // Whether this MoE layer's decisions are timed (every `every`-th; 0: none).
  bool sample_layer(int64_t every) {
    sample_ = every > 0 && (counter_++ % every) == 0;
    return sample_;
  }
  // Runs f, adding its host time to *fam_ns when the layer is sampled.
  template <class F>
  void timed(double* fam_ns, F&& f);
  // The predictor handed to the prefetcher: `inner`, its time into *fam_ns.
  Predictor* wrap(Predictor* inner, double* fam_ns) {
    predictor_ = std::make_unique<TimedPredictor>(inner, &sample_, fam_ns, &nested_ns_);
    return predictor_.get();
  }

 private:
  bool sample_ = false;
  int64_t counter_ = 0;
  double nested_ns_ = 0;  // predictor time inside the current timed() call
  std::unique_ptr<TimedPredictor> predictor_;
};

// Buffers a MoE layer's stages reuse from layer to layer (sized per run).
struct LayerScratch {
  // Indexed by expert: compute_active's sums; each expert's tokens in the
  // layer, its demand load's transfer (-1: none), its GPU computation's end
  // (-1: none); marks; make_room's kept experts, stamped with keep_epoch.
  std::vector<int32_t> workload, rank, touched;
  std::vector<float> weight;
  std::vector<int32_t> tokens_of;
  std::vector<int64_t> xfer_of;
  std::vector<double> compute_end_of;
  std::vector<uint8_t> mark;
  std::vector<uint32_t> keep_stamp;
  uint32_t keep_epoch = 0;
  // Experts pinned for the layer, kept from eviction by a load (the
  // admission rule fills it: AdmissionPort::kept), computed in the layer so
  // far; pinned while prefetches are issued.
  std::vector<int32_t> pins, keep, computed, pinned_now;
  std::vector<SlotRef> cand;            // eviction candidates
  std::vector<int64_t> completed;       // transfers the link finished
  std::vector<double> staging_ring;     // staged GPU experts' ends (LayerPlan::staging_buffers)
  std::vector<ActiveExpert> immediate;  // the activated experts not deferred
};

// The components' decisions of the layer running (and of the after-step hooks).
struct Decisions {
  LayerPlan plan;
  std::vector<int32_t> deferred;
  std::vector<PrefetchRequest> prefetches, gate_prefetches;  // gate_: queued at the gate
  std::vector<CachePolicy::Swap> swaps;
};

// Each MoE layer's gate time in this step and in the step before (NaN until
// set): the late-prefetch rule estimates a target layer's gate from the
// previous step's gate-to-gate time.
struct GateTimes {
  std::vector<double> cur, prev;
  void begin_step(int32_t layers) {
    if (!cur.empty()) prev.swap(cur);
    cur.assign(size_t(layers), std::numeric_limits<double>::quiet_NaN());
  }
  // Mean gate-to-gate time of the previous step's MoE layers; NaN before a
  // previous step exists (or with one MoE layer).
  double interval_ns() const {
    const size_t n = prev.size();
    if (n < 2) return std::numeric_limits<double>::quiet_NaN();
    return (prev[n - 1] - prev[0]) / double(n - 1);
  }
};

class Engine final : private AttentionPort, private AdmissionPort {
 public:
  Engine(const ModelSpec& model, const HardwareProfile& hw, const WorkloadSpec& workload,
         StrategyInstance& st, const TraceSource& source, const CalibrationData* calib,
         const EngineOptions& opt)
      : model_(model),
        hw_(hw),
        workload_(workload),
        st_(st),
        source_(source),
        calib_(calib),
        opt_(opt),
        cost_(model, hw),
        exec_(opt.executor ? opt.executor : &sim_exec_),
        needs_(st.needs(model)),
        run_ptr_(shared_run_routing(source, needs_.top_p)),
        run_(*run_ptr_),
        cur_(run_, Phase::kPrefill),
        link_(st.residency.link_order == "fifo" ? LinkOrder::kFifo : LinkOrder::kDemandFirst),
        copies_(st.residency, hw),
        attention_(make_attention_path(st.residency.attention)),
        late_(make_late_prefetch_rule(st.residency.late_prefetch)),
        admission_(make_admission_rule(st.residency)),
        judged_at_gate_(admission_->judges_at_gate()),
        res_(int32_t(run_.layers()), int32_t(run_.experts()), st.residency.slots(run_.experts()),
             prefetch_buffer_slots(st), st.residency.pool == "global"),
        log_(opt.check_graph, opt.timeline) {
    L_ = int32_t(run_.layers());
    E_ = int32_t(run_.experts());
    k_ = int32_t(run_.top_k());
    if (L_ != model.moe_layers() || E_ != model.routed_experts || k_ != model.top_k) {
      throw Error(
          fmt::format("workload: expected routing of {} ({} MoE layers, {} experts, top-{}), found "
                      "a workload with {} "
                      "layers, {} experts, top-{} (model '{}')",
                      model.name, model.moe_layers(), model.routed_experts, model.top_k, L_, E_, k_,
                      source.info().model_name));
    }
    mode_ = run_modes(st, hw, exec_->backend() == "real", *attention_);
    if (cost_.handoff_ns() > 0) log_.keep_ends(cost_.handoff_ns());
    res_.read_ends_from(&link_);
    if (!hw.planning.exact())
      estimate_ = std::make_unique<CostModel>(planning_cost_model(model, hw));
    if (res_.buffer_slots() > 0 && res_.global_pool()) {
      throw Error(fmt::format(
          "strategy '{}': residency.prefetch_buffer: expected pool = \"per-layer\", found "
          "\"global\"",
          st.name));
    }
  }

  SimulationResult run();

 private:
  // -------- setup
  void plan_steps();
  void prepare_run();
  bool next_step(int64_t s, Clock::time_point wall0);
  void check_memory();
  void place();
  void setup_gate_stream();
  // -------- per step
  void run_step(int64_t s);
  // The step's tokens (or a micro-batch's, `from` .. `to` of the step):
  // routing, gate inputs (copied from `gates` when given, else read from the
  // streams), sequences, context, non-MoE time, attention's token view.
  void load_tokens(const StepPlan& sp, int64_t from, int64_t to, const StepRouting* gates);
  // residency.attention = "cpu" or micro_batches > 1: a decode step's
  // micro-batches through each layer in turn (MicroBatch).
  void run_decode_pipelined(const StepPlan& sp);
  void run_moe_layer(int32_t l);
  // A MoE layer's small state, passed from stage to stage.
  struct LayerRun {
    bool decode = false;
    int ph = 0;          // 0 prefill, 1 decode (metric index)
    int64_t n = 0;       // tokens of the step
    double t_gate = 0;   // when the router's output is known
    double predict = 0;  // the prefetcher's GPU prediction time
    double barrier =
        0;  // SMoE: the GPU experts start after this layer's copies in flight at the gate
    double gpu_end = 0;                        // the GPU lane's last task of the layer
    double gpu_compute = 0;                    // GPU expert time of the layer
    double wait = 0;                           // GPU time waiting for copies
    double done = 0;                           // when the layer's outputs are combined
    int64_t att_task = -1, gpu_end_task = -1;  // task ids: the attention, the GPU lane's last task
    double barrier_copies_end =
        -std::numeric_limits<double>::infinity();  // the copies behind `barrier`
    // The layer's GPU expert submitted last: its task id (-1: none), expert,
    // start, time before the gpu-under-copy term, and whether it read a
    // staging buffer.
    struct LastExpert {
      int64_t task = -1;
      int32_t expert = -1;
      double start = 0, base = 0;
      bool staged = false;
    } last_expert;
  };
  LayerRun gate_stage(int32_t l);
  void swap_micro_batch(MicroBatch& b) { std::swap(cur_, static_cast<BatchState&>(b)); }
  // -------- what an attention path may ask (AttentionPort; core/engine/variants/)
  double task(Lane lane, TaskKind kind, double ready, double dur, int32_t layer, const Waits& w,
              int64_t tokens) override;
  int64_t last_task() const override { return log_.last(); }
  void attention_shape(int64_t task, const BatchState& b) override {
    log_.shape_attention(task, b.sequences, b.context);
  }
  double kv_to_gpu(int32_t layer, const BatchState& b) override;
  const CostModel& cost() const override { return cost_; }
  Executor& executor() override { return *exec_; }
  RunMetrics& metrics() override { return m_; }
  // -------- what an admission rule may ask (AdmissionPort; core/engine/variants/),
  // about the layer in admitting_ (engine_layer.cc)
  int32_t layer() const override { return admitting_.layer; }
  const std::vector<ActiveExpert>& active() const override {
    return active_[size_t(admitting_.layer)];
  }
  const LayerPlan& plan() const override { return dec_.plan; }
  const StepRouting& step() const override { return cur_.step; }
  int32_t experts() const override { return E_; }
  bool cached(int32_t e) const override { return res_.cached(admitting_.layer, e); }
  void pin(int32_t e) override { pin_for_layer(admitting_.layer, e); }
  std::vector<int32_t>& kept() override { return sc_.keep; }
  bool load_on_demand(int32_t e) override;
  void see_later_copies() override;
  void compute(int32_t e, bool staged) override;
  void judge(int32_t e) override;
  void admitting(std::span<const int32_t> order) override;
  void admitted(int32_t e) override { pos_.pending_rank[size_t(e)] = -1; }
  void admitting_done() override { pos_.admitting_layer = -1; }
  void count_hits(int32_t l, const LayerRun& r);
  // One activated expert's access (tokens of the step that use it) and
  // whether it was a hit.
  void record_access(int32_t l, const LayerRun& r, int64_t tokens, bool hit);
  void decide(int32_t l, LayerRun& r);
  void validate_plan(int32_t l);
  void gpu_side(int32_t l, LayerRun& r);
  void pin_for_layer(int32_t l, int32_t e);
  bool demand_load(int32_t l, int32_t e, double t_gate);
  void run_gpu_expert(int32_t l, int32_t e, bool staged, LayerRun& r);
  void see_later_copies(LayerRun& r);
  void issue_layer_prefetches(int32_t l, const LayerRun& r);
  void cpu_side(int32_t l, LayerRun& r);
  void after_layer(int32_t l, const LayerRun& r);
  void release_prefetch_buffer(int32_t l, double gpu_end);
  void cancel_stale_prefetches(int32_t l, double t_gate);
  void compute_active(int32_t l, std::vector<ActiveExpert>* out);
  // -------- helpers
  Context context(int32_t layer, double now) const;
  template <class F>
  void timed(int fam, F&& f) {
    clock_.timed(&m_.decision_ns[fam], std::forward<F>(f));
  }
  FifoLane& gpu_lane() { return hw_.has_gpu() ? lanes_.gpu : lanes_.cpu; }
  Lane gpu_lane_id() const { return hw_.has_gpu() ? Lane::kGpu : Lane::kCpu; }
  // What a task waits for besides its lane: Waits (core/engine/task_log.h).
  static Waits after(int64_t a, int64_t b = -1, int64_t c = -1, int64_t d = -1) {
    Waits w;
    w.task[0] = a, w.task[1] = b, w.task[2] = c, w.task[3] = d;
    return w;
  }
  // `tokens`: the tokens the task processes (timeline only; -1: none).
  // `ready` is what the task waits for (`waits`) as a time; the task's id is
  // log_.last() afterwards.
  double submit(FifoLane& lane, Lane id, TaskKind kind, double ready, double dur, int32_t layer,
                int32_t expert, const Waits& waits, int64_t tokens = -1, double* start = nullptr);
  double under_copy(TaskKind kind, double start, double dur) const;
  void begin_executor();
  void advance_link(double now);
  // Frees a slot for (layer, expert) by asking the cache policy; returns the
  // evicted slot, or layer -1 when no victim is allowed. `extra_pinned`
  // lists experts of `layer` that must not be evicted.
  // A slot for (layer, expert) in the share its load goes to: the prefetch
  // buffer (into_buffer, prefetches of a strategy with one) or the cache
  // share; a victim, if needed, from that share only.
  SlotRef make_room(int32_t layer, int32_t expert, double now,
                    const std::vector<int32_t>& extra_pinned, bool into_buffer = false);
  // Issues a copy of (layer, expert), shaped by the strategy's copy variants
  // (copies_); returns its transfer id. evicts_cached: it takes the slot of
  // an expert evicted from the cache share; reduced_asked: a prefetch its
  // prefetcher marked reduced.
  int64_t load(int32_t layer, int32_t expert, TaskKind kind, double issue, double earliest,
               bool staging, int64_t target_step, int32_t target_layer, bool evicts_cached = false,
               bool reduced_asked = false);
  void issue_prefetches(const std::vector<PrefetchRequest>& reqs, double now);
  // Whether a prefetch lands too late by the strategy's rule (late_,
  // residency.late_prefetch); gates_ gives the gate's estimate.
  bool lands_too_late(const PrefetchRequest& r, double now) const;
  void recopy_computed(int32_t l, double gpu_end);
  // A demand load's copy time (as the copy variants shape it, without a write-back).
  double demand_copy_ns() const { return copies_.copy_ns(TaskKind::kDemandLoad, false, cost_); }
  // `layer`: the MoE layer just done (after_layer; -1 after a step): on_device
  // swaps are taken only from the experts its plan ran on the GPU.
  void issue_swaps(const std::vector<CachePolicy::Swap>& swaps, double now, const std::string& hook,
                   int32_t layer = -1);
  [[noreturn]] void bad_decision(const std::string& family, const std::string& what) const;
  // Expert e of layer l among the step's activated experts (by expert id), or nullptr.
  const ActiveExpert* activated(int32_t l, int32_t e) const {
    const auto& a = active_[size_t(l)];
    const auto it = std::lower_bound(a.begin(), a.end(), e,
                                     [](const ActiveExpert& x, int32_t y) { return x.expert < y; });
    return it != a.end() && it->expert == e ? &*it : nullptr;
  }

  const ModelSpec& model_;
  const HardwareProfile& hw_;
  const WorkloadSpec& workload_;
  StrategyInstance& st_;
  const TraceSource& source_;
  const CalibrationData* calib_;
  EngineOptions opt_;
  CostModel cost_;
  // What the components plan with when it is not cost_ (HardwareProfile::
  // planning); plan_cost() is the one they read.
  std::unique_ptr<CostModel> estimate_;
  const CostModel& plan_cost() const { return estimate_ ? *estimate_ : cost_; }
  SimExecutor sim_exec_;
  Executor* exec_;
  Needs needs_;
  // The workload's routing, shared with the other cases of this process that
  // read the same workload (core/engine/routing_cache.h).
  std::shared_ptr<const RunRouting> run_ptr_;
  const RunRouting& run_;
  BatchState cur_;  // the step, or the micro-batch running
  Link link_;
  CopyVariants copies_;                       // how expert copies are made (core/engine/variants/)
  std::unique_ptr<AttentionPath> attention_;  // where attention runs and the KV cache lives
  std::unique_ptr<LatePrefetchRule> late_;    // when a prefetch is too late (variants/)
  std::unique_ptr<AdmissionRule> admission_;  // when accesses are judged, how GPU experts load
  bool judged_at_gate_;                       // admission_->judges_at_gate(), read every layer
  // The layer whose GPU side the admission rule runs (gpu_side sets it; the
  // AdmissionPort's calls are about it).
  struct Admitting {
    int32_t layer = -1;
    LayerRun* run = nullptr;
  } admitting_;
  Residency res_;
  struct {
    FifoLane gpu, cpu, d2h, act;  // the GPU, the CPU, device to host, activations to the GPU
  } lanes_;
  int32_t L_ = 0, E_ = 0, k_ = 0;

  // The steps run so far and, for a scheduler that plans ahead, every step
  // of the run (planned before the first); a served run asks sched_ for each.
  std::vector<StepPlan> steps_;
  std::unique_ptr<Scheduler> sched_;
  RequestLog requests_;
  std::vector<std::pair<double, double>> step_spans_;  // with EngineOptions::return_steps
  // The step and layer running; while an admission rule admits a layer's
  // experts in turn (AdmissionPort::admitting), that layer and each expert's
  // rank in that turn while it is still to be admitted (the oracles'
  // next_use: the step still needs it).
  RunPosition pos_;
  double step_start_ns_ = 0;
  GateTimes gates_;
  std::vector<std::vector<ActiveExpert>> active_;  // this step, per MoE layer
  RunModes mode_;  // the residency settings that change how a step runs
  // A pipelined decode step's micro-batches (run_decode_pipelined).
  struct Pipeline {
    std::vector<MicroBatch> batches;
    MicroBatch* running = nullptr;  // its attention already issued; null outside a pipelined step
    bool last = true;               // the layer's last (or only) micro-batch is running
  } pipe_;
  LayerScratch sc_;
  Decisions dec_;

  // The oracles' look-ahead over the planned steps (a run with an oracle only).
  std::unique_ptr<PlannedFuture> future_;

  // Gate inputs streamed per sequence, into a step when first read.
  std::unique_ptr<GateStream> gate_stream_;

  // Prefetch bookkeeping: the step a prefetch that brought (layer, expert)
  // targeted, until it is judged at that layer's gate (-1: none).
  std::vector<int64_t> prefetch_of_;  // [L*E] target step or -1
  Context hook_ctx_;                  // the current layer's context, reused by evictions and loads

  RunMetrics m_;
  TaskLog log_;          // every task's id; the task graph and the timeline when asked for
  DecisionClock clock_;  // the components' host time on sampled layers
};

template <class F>
void DecisionClock::timed(double* fam_ns, F&& f) {
  if (!sample_) {
    f();
    return;
  }
  const double nested0 = nested_ns_;
  const auto t0 = Clock::now();
  f();
  const double dt = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  *fam_ns += dt - (nested_ns_ - nested0);  // predictions are timed on their own
}

}  // namespace engine_impl

}  // namespace moebench
