// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <type_traits>
#include <unordered_map>

#include <fmt/format.h>

#include "core/engine/planned_future.h"
#include "core/engine/routing_cache.h"
#include "core/engine/scheduler/scheduler.h"
#include "core/util/cancel.h"
#include "core/util/error.h"
#include "core/util/memory.h"

namespace moebench {

namespace {

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

}  // namespace

namespace {

class Engine {
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
        step_(run_, Phase::kPrefill),
        link_(st.residency.link_order == "fifo" ? LinkOrder::kFifo : LinkOrder::kDemandFirst),
        res_(int32_t(run_.layers()), int32_t(run_.experts()), st.residency.slots(run_.experts()),
             prefetch_buffer_slots(st), st.residency.pool == "global") {
    L_ = int32_t(run_.layers());
    E_ = int32_t(run_.experts());
    one_at_a_time_ = st.residency.admission == "one-at-a-time";
    late_before_demand_ = st.residency.late_prefetch == "before-demand";
    real_backend_ = exec_->backend() == "real";
    k_ = int32_t(run_.top_k());
    if (L_ != model.moe_layers() || E_ != model.routed_experts || k_ != model.top_k) {
      throw Error(
          fmt::format("workload: expected routing of {} ({} MoE layers, {} experts, top-{}), found "
                      "a workload with {} "
                      "layers, {} experts, top-{} (model '{}')",
                      model.name, model.moe_layers(), model.routed_experts, model.top_k, L_, E_, k_,
                      source.info().model_name));
    }
    cpu_attention_ = st.residency.attention == "cpu";
    host_kv_gpu_ = st.residency.attention == "gpu-host-kv";
    kv_on_host_ = cpu_attention_ || host_kv_gpu_;
    pipelined_ = kv_on_host_ || st.residency.micro_batches > 1;
    writeback_ = st.residency.writeback;
    one_stream_ = st.residency.one_stream && hw.has_gpu();
    if (pipelined_ && real_backend_) {
      throw Error(fmt::format(
          "strategy '{}': residency.attention = \"{}\", micro_batches = {}: expected the "
          "simulated backend (a host-memory KV cache and micro-batches are simulated only), found "
          "the real backend",
          st.name, st.residency.attention, st.residency.micro_batches));
    }
    if (kv_on_host_ && !hw.has_gpu()) {
      throw Error(fmt::format(
          "strategy '{}': residency.attention = \"{}\" keeps the KV cache in host memory for "
          "a GPU; expected hardware with a GPU, found '{}' with none (without a GPU every layer "
          "already runs on the CPU)",
          st.name, st.residency.attention, hw.name));
    }
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
  };
  LayerRun gate_stage(int32_t l);
  // A micro-batch's state while the other micro-batches run: swapped with
  // the engine's step members (swap_micro_batch) around each of its layers.
  struct MicroBatch;
  void swap_micro_batch(MicroBatch& b);
  // The micro-batch's attention of layer `li` (block index; `l` its MoE
  // index, -1 for a dense layer) up to the output's return: on the GPU, or
  // the QKV projections, Q/K/V to the host, the CPU's attention and the
  // output back (the GPU's output projection and router follow in
  // finish_attention).
  void issue_attention(int32_t li, int32_t l, MicroBatch& b);
  double copy_kv_to_gpu(int32_t l, const MicroBatch& b);
  // The rest of an issued attention (the GPU's post-attention part when
  // attention is on the CPU); returns its end, and the last task's id in *task.
  double finish_attention(int32_t l, int64_t tokens, MicroBatch& b, int64_t* task, double* gpu_ns);
  void count_hits(int32_t l, const LayerRun& r);
  // One activated expert's access (tokens of the step that use it) and
  // whether it was a hit.
  void record_access(int32_t l, const LayerRun& r, int64_t tokens, bool hit);
  // admission = "one-at-a-time": the layer's experts in routing order, each
  // judged, loaded if it runs on the GPU and absent, and computed in turn.
  void admit_one_at_a_time(int32_t l, LayerRun& r);
  void decide(int32_t l, LayerRun& r);
  void validate_plan(int32_t l);
  void gpu_side(int32_t l, LayerRun& r);
  void pin_for_layer(int32_t l, int32_t e);
  bool demand_load(int32_t l, int32_t e, double t_gate);
  void run_gpu_expert(int32_t l, int32_t e, bool staged, LayerRun& r);
  void cpu_side(int32_t l, LayerRun& r);
  void after_layer(int32_t l, const LayerRun& r);
  void release_prefetch_buffer(int32_t l, double gpu_end);
  void cancel_stale_prefetches(int32_t l, double t_gate);
  void compute_active(int32_t l, std::vector<ActiveExpert>* out);
  // -------- helpers
  Context context(int32_t layer, double now) const;
  template <class F>
  void timed(int fam, F&& f);
  FifoLane& gpu_lane() { return hw_.has_gpu() ? gpu_ : cpu_; }
  Lane gpu_lane_id() const { return hw_.has_gpu() ? Lane::kGpu : Lane::kCpu; }
  // What a task waits for besides its lane: up to four tasks (ids from
  // submit, -1: none) and copies (the latest end among them, -inf: none).
  struct Waits {
    int64_t task[4] = {-1, -1, -1, -1};
    double copies_end = -std::numeric_limits<double>::infinity();
    int64_t copy = -1;  // a GPU expert's own copy (transfer id; timeline only), -1: none
  };
  static Waits after(int64_t a, int64_t b = -1, int64_t c = -1, int64_t d = -1) {
    Waits w;
    w.task[0] = a, w.task[1] = b, w.task[2] = c, w.task[3] = d;
    return w;
  }
  struct MicroBatch {
    explicit MicroBatch(const RunRouting& run) : step(run, Phase::kDecode) {}
    // Swapped with the engine's step members (swap_micro_batch).
    StepRouting step;
    StepTokens tokens;
    int64_t sequences = 0, context = 0;
    double nonmoe_ns = 0, layer_ready_ns = 0, deferred_done_ns = -1;
    Waits ready_waits;
    int64_t deferred_task = -1;
    // The current layer's issued attention (issue_attention): its end (the
    // output back on the GPU, or the GPU's attention), its last task, its
    // GPU time so far, whether the GPU's post-attention part is still to run.
    double att_end = 0, att_gpu_ns = 0;
    int64_t att_task = -1;
    bool post_pending = false;
  };
  // `tokens`: the tokens the task processes (timeline only; -1: none).
  // `ready` is what the task waits for (`waits`) as a time; the task's id is
  // last_task_ afterwards.
  double submit(FifoLane& lane, Lane id, TaskKind kind, double ready, double dur, int32_t layer,
                int32_t expert, const Waits& waits, int64_t tokens = -1, double* start = nullptr);
  void check_graph() const;
  void begin_executor();
  void advance_link(double now);
  // Copies queued from position `from` on may have moved: refresh their end
  // times in residency.
  void refresh_transfer_ends(size_t from, size_t to);
  // Frees a slot for (layer, expert) by asking the cache policy; returns the
  // evicted slot, or layer -1 when no victim is allowed. `extra_pinned`
  // lists experts of `layer` that must not be evicted.
  // A slot for (layer, expert) in the share its load goes to: the prefetch
  // buffer (into_buffer, prefetches of a strategy with one) or the cache
  // share; a victim, if needed, from that share only.
  SlotRef make_room(int32_t layer, int32_t expert, double now,
                    const std::vector<int32_t>& extra_pinned, bool into_buffer = false);
  // Issues a transfer of (layer, expert); returns its id.
  // writeback: the copy first writes an evicted expert back to host memory
  // (residency.writeback), in the same stream, so it takes that time too.
  // reduced: a reduced-precision copy (residency.reduced_copy_ratio of the
  // bytes: Fate's INT2 copies).
  int64_t load(int32_t layer, int32_t expert, TaskKind kind, double issue, double earliest,
               bool staging, int64_t target_step, int32_t target_layer, bool writeback = false,
               bool reduced = false);
  void issue_prefetches(const std::vector<PrefetchRequest>& reqs, double now);
  void recopy_computed(int32_t l, double gpu_end);
  // A demand load's copy time (reduced when residency.reduced_demand_loads).
  double demand_copy_ns() const {
    return cost_.h2d_expert_ns(st_.residency.reduced_demand_loads ? st_.residency.reduced_copy_ratio
                                                                  : 1.0);
  }
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
  SimExecutor sim_exec_;
  Executor* exec_;
  Needs needs_;
  // The workload's routing, shared with the other cases of this process that
  // read the same workload (core/engine/routing_cache.h).
  std::shared_ptr<const RunRouting> run_ptr_;
  const RunRouting& run_;
  StepRouting step_;
  Link link_;
  Residency res_;
  FifoLane gpu_, cpu_, d2h_, act_;
  int32_t L_ = 0, E_ = 0, k_ = 0;

  std::vector<StepPlan> steps_;
  // The step and layer running; while admit_one_at_a_time runs a layer, that
  // layer and each expert's rank in route_order_ while it is still to be
  // admitted (the oracles' next_use: the step still needs it).
  RunPosition pos_;
  int64_t step_sequences_ = 0, step_context_ = 0;
  double step_nonmoe_ns_ = 0;
  StepTokens step_tokens_;  // the step's tokens as attention sees them (the executor's)
  double step_start_ns_ = 0;
  // Gate time of each MoE layer in this step and in the step before (NaN
  // until set): the late-prefetch rule estimates a target layer's gate from
  // the previous step's gate-to-gate time.
  std::vector<double> gate_cur_, gate_prev_;
  double layer_interval_ns() const;
  bool lands_too_late(const PrefetchRequest& r, double now) const;
  double layer_ready_ns_ = 0;     // when the next layer's attention may start
  double deferred_done_ns_ = -1;  // deferred CPU work of the previous layer (-1: none)
  std::vector<std::vector<ActiveExpert>> active_;  // this step, per MoE layer
  std::vector<int32_t> workload_scratch_, rank_scratch_, touched_;
  std::vector<float> weight_scratch_;
  // Per-layer scratch indexed by expert.
  std::vector<int32_t> tokens_of_;
  std::vector<int64_t> xfer_of_;
  std::vector<double> compute_end_of_;
  std::vector<int32_t> pins_, keep_, computed_this_layer_;
  std::vector<int32_t>
      route_order_;  // admission "one-at-a-time": the layer's experts by first use (token, rank)
  bool one_at_a_time_ = false;       // residency.admission, parsed once
  bool late_before_demand_ = false;  // residency.late_prefetch == "before-demand", parsed once
  bool real_backend_ = false;        // the executor is the real backend's
  bool cpu_attention_ = false;       // residency.attention == "cpu"
  bool host_kv_gpu_ = false;         // residency.attention == "gpu-host-kv"
  bool kv_on_host_ = false;          // either: the KV cache in host memory
  bool pipelined_ = false;           // cpu attention or micro_batches > 1: decode steps pipelined
  bool writeback_ = false;           // residency.writeback: evicted experts copied back first
  bool one_stream_ = false;          // residency.one_stream: copies and GPU work in one stream
  bool last_micro_batch_ = true;     // the layer's last (or only) micro-batch is running
  MicroBatch* cur_mb_ = nullptr;     // the micro-batch running (its attention already issued)
  std::vector<MicroBatch> mbs_;
  std::vector<ActiveExpert> immediate_;
  std::vector<PrefetchRequest> gate_prefetches_;
  std::vector<double> staging_ring_;

  // The oracles' look-ahead over the planned steps (a run with an oracle only).
  std::unique_ptr<PlannedFuture> future_;

  // Gate inputs streamed per sequence.
  std::vector<std::unique_ptr<SequenceReader>> gate_readers_;
  std::vector<int64_t> gate_pos_;
  TokenRecord gate_rec_;

  // Prefetch bookkeeping: the step a prefetch that brought (layer, expert)
  // targeted, until it is judged at that layer's gate (-1: none).
  std::vector<int64_t> prefetch_of_;  // [L*E] target step or -1
  Context hook_ctx_;                  // the current layer's context, reused by evictions and loads

  RunMetrics m_;
  std::vector<TaskRecord> timeline_;
  // The task graph (EngineOptions::check_graph).
  struct GraphTask {
    Lane lane;
    const FifoLane* on;
    TaskKind kind;
    double start, end;
    Waits waits;
  };
  std::vector<GraphTask> graph_;
  int64_t last_task_ = -1;  // id of the task submitted last
  Waits ready_waits_;       // what the next layer's attention waits for (layer_ready_ns_)
  int64_t deferred_task_ =
      -1;  // the previous layer's deferred outputs' copy back (deferred_done_ns_)
  int64_t task_seq_ = 0;
  int64_t decision_counter_ = 0;
  bool sample_ = false;
  double nested_ns_ = 0;  // predictor time inside the current timed() call
  std::unique_ptr<TimedPredictor> timed_predictor_;
  std::vector<SlotRef> cand_;
  LayerPlan plan_;
  std::vector<int32_t> deferred_;
  std::vector<PrefetchRequest> prefetch_reqs_;
  std::vector<CachePolicy::Swap> swaps_;
  std::vector<int32_t> pinned_now_;
  std::vector<int64_t> completed_;
  std::vector<uint8_t> mark_;         // [E] scratch
  std::vector<uint32_t> keep_stamp_;  // [E] make_room's kept experts, stamped with keep_epoch_
  uint32_t keep_epoch_ = 0;
};

// ---------------------------------------------------------------- setup

void Engine::plan_steps() {
  // The scheduler forms the steps (core/engine/scheduler/); the static one's
  // are known before the first, which the oracles' future reads.
  std::unique_ptr<Scheduler> sched = make_scheduler("static");
  std::vector<SequenceInfo> seqs;
  seqs.reserve(size_t(run_.sequences()));
  for (int64_t s = 0; s < run_.sequences(); ++s) seqs.push_back(run_.sequence(s));
  sched->start(std::move(seqs), workload_.batch_size);
  if (!sched->plans_ahead()) {
    throw InternalError("scheduler '" + sched->name() + "': the engine runs planned steps only");
  }
  StepPlan sp;
  while (sched->next(0.0, &sp)) steps_.push_back(std::move(sp));
  if (needs_.future) future_ = std::make_unique<PlannedFuture>(run_, steps_, pos_, one_at_a_time_);
}

void Engine::check_memory() {
  RunShape shape;
  shape.sequences = run_.sequences();
  shape.batch_size = workload_.batch_size;
  for (int64_t s = 0; s < run_.sequences(); ++s) {
    shape.max_tokens = std::max(shape.max_tokens, run_.sequence(s).tokens());
    shape.total_tokens += run_.sequence(s).tokens();
  }
  const CaseFootprint f = case_footprint(model_, hw_, st_, shape);
  m_.run_attention = st_.residency.attention;
  m_.run_micro_batches = st_.residency.micro_batches;
  m_.run_cache_ratio = st_.residency.cache_ratio;
  m_.residency_chosen_by = st_.residency_chosen_by;
  m_.residency_estimate_ns = st_.residency_estimate_ns;
  m_.residency_why = st_.residency_why;
  m_.gpu_cache_slots = f.gpu_cache_slots;
  m_.gpu_mem_required_gib = f.gpu_total_gib;
  // GPU memory only: the host's was checked before the routing was read
  // (run_case), and the memory available now no longer counts it.
  check_footprint(f, model_, hw_, st_, /*host=*/false);
}

void Engine::place() {
  PlacementContext pc;
  pc.model = &model_;
  pc.cost = &cost_;
  // The prefetch buffer starts empty: placement fills the cache share only.
  pc.slots_per_layer = res_.cache_slots();
  pc.global_pool = res_.global_pool();
  pc.calibration = calib_;
  pc.future = future_.get();
  std::vector<SlotRef> out;
  const auto t0 = Clock::now();
  std::vector<int64_t> shares = st_.placement->layer_shares(pc);
  if (!shares.empty()) {
    int64_t sum = 0;
    for (int64_t n : shares) sum += n;
    if (res_.global_pool() || int64_t(shares.size()) != L_ ||
        std::any_of(shares.begin(), shares.end(), [&](int64_t n) { return n < 0 || n > E_; }) ||
        sum > int64_t(L_) * res_.cache_slots()) {
      bad_decision("placement",
                   fmt::format("asked for per-layer cache shares: expected {} shares of 0..{} "
                               "experts, {} in all at most, in a per-layer pool; found {} "
                               "shares, {} in all{}",
                               L_, E_, int64_t(L_) * res_.cache_slots(), shares.size(), sum,
                               res_.global_pool() ? ", a global pool" : ""));
    }
    res_.set_cache_shares(shares);
    pc.layer_slots = shares;
  }
  st_.placement->place(pc, out);
  m_.decision_ns[kFamPlacement] =
      std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  for (const auto& s : out) {
    if (s.layer < 0 || s.layer >= L_ || s.expert < 0 || s.expert >= E_) {
      bad_decision("placement",
                   fmt::format("placed expert {} of layer {} (model has {} layers of {} experts)",
                               s.expert, s.layer, L_, E_));
    }
    if (res_.cached(s.layer, s.expert)) {
      bad_decision("placement",
                   fmt::format("placed expert {} of layer {} twice", s.expert, s.layer));
    }
    if (!res_.has_room_in(s.layer, false)) {
      bad_decision(
          "placement",
          fmt::format(
              "placed more experts than the cache holds ({} slots{})",
              res_.global_pool() ? res_.capacity(s.layer) : res_.cache_share(s.layer),
              res_.global_pool() ? " in the global pool" : fmt::format(" in layer {}", s.layer)));
    }
    res_.place(s.layer, s.expert);
  }
  CacheSetup cs{L_, E_, res_.cache_slots(), res_.global_pool(),
                shares};  // the cache share, not the prefetch buffer
  st_.cache->reset(cs);
  Context ctx = context(0, 0);
  hook_ctx_ = ctx;
  for (const auto& s : out) st_.cache->on_insert(s.layer, s.expert, ctx);
}

void Engine::setup_gate_stream() {
  if (!needs_.gate_inputs) return;
  if (source_.info().h_trace <= 0 || !source_.gate_weights()) {
    throw Error(
        fmt::format("strategy '{}': expected a workload with gate inputs and gate weights (a "
                    "predictor uses them), found a trace without them",
                    st_.name));
  }
  gate_readers_.resize(run_.sequences());
  gate_pos_.assign(run_.sequences(), 0);
}

// ---------------------------------------------------------------- helpers

[[noreturn]] void Engine::bad_decision(const std::string& family, const std::string& what) const {
  std::string kind;
  if (family == "placement") kind = st_.placement->name();
  if (family == "assigner") kind = st_.assigner->name();
  if (family == "cache") kind = st_.cache->name();
  if (family == "prefetcher") kind = st_.prefetcher->name();
  if (family == "deferral") kind = st_.deferral->name();
  throw InternalError(fmt::format("strategy '{}': {} '{}' made an invalid decision at step {}: {}",
                                  st_.name, family, kind, pos_.step, what));
}

Context Engine::context(int32_t layer, double now) const {
  Context c;
  const bool have_step = pos_.step < int64_t(steps_.size());
  c.phase = have_step ? steps_[pos_.step].phase : Phase::kDecode;
  c.step = pos_.step;
  c.decode_step = have_step ? steps_[pos_.step].decode_step : -1;
  c.layer = layer;
  c.moe_layers = L_;
  c.experts = E_;
  c.top_k = k_;
  c.now_ns = now;
  c.routing = &step_;
  if (layer >= 0 && layer < int32_t(active_.size())) c.active = active_[layer];
  c.residency = &res_;
  c.cost = &cost_;
  c.lanes = {const_cast<Engine*>(this)->gpu_lane().free_ns(), cpu_.free_ns(), link_.free_ns()};
  c.layer_nonmoe_ns = step_nonmoe_ns_;
  c.gates = source_.gate_weights();
  c.calibration = calib_;
  c.future = future_.get();
  return c;
}

void Engine::check_graph() const {
  std::map<const FifoLane*, double> lane_end;
  for (size_t i = 0; i < graph_.size(); ++i) {
    const GraphTask& t = graph_[i];
    double expect = lane_end[t.on];
    for (int64_t d : t.waits.task) {
      if (d < 0) continue;
      if (d >= int64_t(i))
        throw InternalError(fmt::format("task graph: task {} waits for a later task {}", i, d));
      expect = std::max(expect, graph_[size_t(d)].end);
    }
    expect = std::max(expect, t.waits.copies_end);
    if (t.start != expect) {
      throw InternalError(fmt::format(
          "task graph: task {} ({} on lane {}) starts at {} ns, but its lane and what it "
          "waits for give {} ns",
          i, to_string(t.kind), to_string(t.lane), t.start, expect));
    }
    lane_end[t.on] = t.end;
  }
}

template <class F>
void Engine::timed(int fam, F&& f) {
  if (!sample_) {
    f();
    return;
  }
  const double nested0 = nested_ns_;
  const auto t0 = Clock::now();
  f();
  const double dt = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  m_.decision_ns[fam] += dt - (nested_ns_ - nested0);  // predictions are timed on their own
}

double Engine::submit(FifoLane& lane, Lane id, TaskKind kind, double ready, double dur,
                      int32_t layer, int32_t expert, const Waits& waits, int64_t tokens,
                      double* start) {
  double end;
  Waits w = waits;
  if (one_stream_ && id == Lane::kGpu) {  // behind every copy issued so far (one stream)
    const double copies = link_.free_ns();
    w.copies_end = std::max(w.copies_end, copies);
    ready = std::max(ready, copies);
  }
  const double s = lane.submit(ready, dur, &end);
  if (start) *start = s;
  ++last_task_;
  if (opt_.check_graph) graph_.push_back({id, &lane, kind, s, end, w});
  static_assert(size_t(TaskKind::kKvToGpu) < std::extent_v<decltype(RunMetrics::task_ns)>);
  m_.task_ns[size_t(kind)] += dur;
  if (opt_.timeline && dur > 0) {
    timeline_.push_back({id,
                         kind,
                         s,
                         end,
                         task_seq_++,
                         pos_.step,
                         layer,
                         expert,
                         tokens,
                         last_task_,
                         {waits.task[0], waits.task[1], waits.task[2], waits.task[3]},
                         waits.copy});
  }
  return end;
}

void Engine::advance_link(double now) {
  completed_.clear();
  link_.advance(now, &completed_);
  for (int64_t id : completed_) {
    const Transfer& t = link_.get(id);
    if (!t.staging && res_.in_flight(t.layer, t.expert) && res_.transfer(t.layer, t.expert) == id) {
      res_.complete(t.layer, t.expert);
    }
    if (opt_.timeline) {
      timeline_.push_back({Lane::kH2D,
                           t.kind,
                           t.start_ns,
                           t.end_ns,
                           task_seq_++,
                           t.step,
                           t.layer,
                           t.expert,
                           -1,
                           -1,
                           {-1, -1, -1, -1},
                           id});
      timeline_.back().reduced = t.reduced;
      timeline_.back().writeback = t.writeback;
    }
  }
}

SlotRef Engine::make_room(int32_t layer, int32_t expert, double now,
                          const std::vector<int32_t>& extra_pinned, bool into_buffer) {
  if (res_.has_room_in(layer, into_buffer)) return SlotRef{-2, -2};  // free slot, nothing evicted
  res_.candidates(layer, &cand_);
  // In a walk over the layer's GPU order, an expert already computed in this
  // layer may give up its slot even while its own copy is still counted as
  // in flight: the next copy into that slot waits for the computation.
  for (int32_t e : computed_this_layer_) {
    if (res_.in_flight(layer, e) && !res_.pinned(layer, e)) cand_.push_back({layer, e});
  }
  if (res_.buffer_slots() > 0) {
    // A share's load evicts from that share only.
    std::erase_if(
        cand_, [&](const SlotRef& c) { return res_.buffered(c.layer, c.expert) != into_buffer; });
  }
  // Experts of `layer` the caller keeps are not offered (a stamp per expert
  // instead of pinning and unpinning each one).
  if (!extra_pinned.empty()) {
    if (++keep_epoch_ == 0) {
      std::fill(keep_stamp_.begin(), keep_stamp_.end(), 0u);
      keep_epoch_ = 1;
    }
    for (int32_t e : extra_pinned) keep_stamp_[e] = keep_epoch_;
    size_t w = 0;
    for (const SlotRef& c : cand_) {
      if (c.layer != layer || keep_stamp_[c.expert] != keep_epoch_) cand_[w++] = c;
    }
    cand_.resize(w);
  }
  if (cand_.empty()) return SlotRef{-1, -1};
  size_t v = 0;
  Context& ctx = hook_ctx_;
  ctx.now_ns = now;
  timed(kFamCache, [&] { v = st_.cache->victim(cand_, SlotRef{layer, expert}, ctx); });
  if (v >= cand_.size()) {
    bad_decision("cache", fmt::format("victim index {} of {} candidates", v, cand_.size()));
  }
  const SlotRef out = cand_[v];
  res_.evict(out.layer, out.expert);
  st_.cache->on_evict(out.layer, out.expert, ctx);
  prefetch_of_[size_t(out.layer) * E_ + out.expert] = -1;
  return out;
}

int64_t Engine::load(int32_t layer, int32_t expert, TaskKind kind, double issue, double earliest,
                     bool staging, int64_t target_step, int32_t target_layer, bool writeback,
                     bool reduced) {
  Transfer t;
  t.layer = layer;
  t.expert = expert;
  t.kind = kind;
  t.issue_ns = issue;
  t.earliest_ns = earliest;
  if (one_stream_) t.earliest_ns = std::max(earliest, gpu_.free_ns());  // behind the GPU's work
  const double ratio = reduced ? st_.residency.reduced_copy_ratio : 1.0;
  t.duration_ns = cost_.h2d_expert_ns(ratio);
  t.bytes =
      reduced ? int64_t(std::llround(ratio * double(cost_.expert_bytes()))) : cost_.expert_bytes();
  t.reduced = reduced;
  t.writeback = writeback;
  if (reduced) ++m_.reduced_copies;
  if (writeback) {  // Mixtral-Offloading's swap: both copies in one stream
    t.duration_ns += cost_.d2h_expert_ns();
    ++m_.writeback_copies;
  }
  t.staging = staging;
  t.step = pos_.step;
  t.target_step = target_step;
  t.target_layer = target_layer;
  size_t pos = 0, moved_to = 0;
  const int64_t id = link_.issue(t, &pos, &moved_to);
  refresh_transfer_ends(pos + 1, moved_to);  // issuing may move the transfers queued behind it
  if (kind == TaskKind::kRecopy) {           // already cached: in flight again, the cache not told
    res_.refresh(layer, expert, id, link_.get(id).end_ns);
  } else if (!staging) {
    res_.set_buffered(layer, expert, kind == TaskKind::kPrefetchLoad && res_.buffer_slots() > 0);
    res_.begin_transfer(layer, expert, id, link_.get(id).end_ns);
    hook_ctx_.now_ns = issue;
    st_.cache->on_insert(layer, expert, hook_ctx_);
  }
  m_.h2d_bytes += t.bytes;
  switch (kind) {
    case TaskKind::kDemandLoad:
      ++m_.demand_loads;
      break;
    case TaskKind::kPrefetchLoad:
      ++m_.prefetch_loads;
      ++m_.prefetch_layer_loads[layer];
      break;
    case TaskKind::kBufferCopy:
      ++m_.buffer_copies;
      break;
    case TaskKind::kRecopy:
      ++m_.recopies;
      break;
    default:
      ++m_.swap_loads;
      break;
  }
  if (staging && kind != TaskKind::kBufferCopy) ++m_.staging_loads;
  return id;
}

void Engine::refresh_transfer_ends(size_t from, size_t to) {
  const auto& queue = link_.queue();
  for (size_t i = from; i < std::min(to, queue.size()); ++i) {
    const int64_t q = queue[i];
    const Transfer& x = link_.get(q);
    if (!x.staging && res_.in_flight(x.layer, x.expert) && res_.transfer(x.layer, x.expert) == q) {
      res_.update_transfer_end(x.layer, x.expert, x.end_ns);
    }
  }
}

double Engine::layer_interval_ns() const {
  // Mean gate-to-gate time of the previous step's MoE layers; NaN before a
  // previous step exists (or with one MoE layer).
  if (L_ < 2 || gate_prev_.empty()) return std::numeric_limits<double>::quiet_NaN();
  return (gate_prev_[size_t(L_ - 1)] - gate_prev_[0]) / double(L_ - 1);
}

bool Engine::lands_too_late(const PrefetchRequest& r, double now) const {
  const double dt = layer_interval_ns();
  if (!(dt >= 0) || gate_cur_.empty()) return false;  // no estimate yet: issue
  // From the current layer's gate; after the last layer (the step's end,
  // pos_.layer = L_) from now, the next step's first gate about one interval on.
  const bool step_end = pos_.layer >= L_;
  const double ref = step_end ? now : gate_cur_[size_t(pos_.layer)];
  if (!(ref >= 0)) return false;
  const double layers_ahead = double(r.target_step_offset) * double(L_) +
                              double(r.layer - pos_.layer) + (step_end ? 1.0 : 0.0);
  double deadline = ref + layers_ahead * dt;
  // "before-demand": it must land before a demand load issued at that gate would.
  if (late_before_demand_) deadline += demand_copy_ns();
  const double lands = std::max(now, link_.free_ns()) +
                       cost_.h2d_expert_ns(r.reduced ? st_.residency.reduced_copy_ratio : 1.0);
  return lands > deadline;
}

void Engine::issue_prefetches(const std::vector<PrefetchRequest>& reqs, double now) {
  const bool drop_late = st_.residency.late_prefetch != "issue";
  for (const auto& r : reqs) {
    if (r.layer < 0 || r.layer >= L_ || r.expert < 0 || r.expert >= E_ ||
        r.target_step_offset < 0) {
      bad_decision("prefetcher", fmt::format("requested expert {} of layer {} (step offset {})",
                                             r.expert, r.layer, r.target_step_offset));
    }
    if (res_.cached(r.layer, r.expert)) continue;  // already there or on its way
    // The prefetch rule (docs/STRATEGIES.md): a copy that cannot land before
    // its target layer's gate is dropped before it evicts anything.
    if (drop_late && lands_too_late(r, now)) {
      ++m_.prefetch_dropped_late;
      continue;
    }
    // The experts the current layer uses stay; so do the other requests' targets.
    pinned_now_.clear();
    for (const auto& q : reqs) {
      if (q.layer == r.layer && res_.resident(q.layer, q.expert)) pinned_now_.push_back(q.expert);
    }
    const SlotRef freed = make_room(r.layer, r.expert, now, pinned_now_, res_.buffer_slots() > 0);
    if (freed.layer == -1) continue;  // nothing may be evicted: drop the request
    // An expert evicted from the cache share is written back first; one
    // leaving the prefetch buffer was a copy (its host copy stays).
    load(r.layer, r.expert, TaskKind::kPrefetchLoad, now, now, false,
         pos_.step + r.target_step_offset, r.layer,
         writeback_ && freed.layer >= 0 && res_.buffer_slots() == 0, r.reduced);
    prefetch_of_[size_t(r.layer) * E_ + r.expert] = pos_.step + r.target_step_offset;
  }
}

void Engine::issue_swaps(const std::vector<CachePolicy::Swap>& swaps, double now,
                         const std::string& hook, int32_t layer) {
  for (const auto& s : swaps) {
    const SlotRef in = s.incoming, out = s.outgoing;
    if (in.layer < 0 || in.layer >= L_ || in.expert < 0 || in.expert >= E_) {
      bad_decision("cache",
                   fmt::format("{} swap loads expert {} of layer {}", hook, in.expert, in.layer));
    }
    if (res_.cached(in.layer, in.expert)) continue;
    if (s.on_device &&
        (layer < 0 || in.layer != layer ||
         std::find(plan_.gpu.begin(), plan_.gpu.end(), in.expert) == plan_.gpu.end())) {
      bad_decision(
          "cache",
          fmt::format("{} swap takes expert {} of layer {} from GPU memory (on_device), but "
                      "it did not run on the GPU in this layer{}",
                      hook, in.expert, in.layer,
                      layer < 0 ? fmt::format(" (on_device swaps come after a layer, "
                                              "not from {})",
                                              hook)
                                : fmt::format(" (layer {})", layer)));
    }
    if (out.layer >= 0) {
      if (!res_.resident(out.layer, out.expert) || res_.pinned(out.layer, out.expert)) {
        bad_decision(
            "cache",
            fmt::format("{} swap evicts expert {} of layer {}, which is not resident and unpinned",
                        hook, out.expert, out.layer));
      }
      if (!res_.global_pool() && out.layer != in.layer) {
        bad_decision(
            "cache",
            fmt::format("{} swap moves a slot from layer {} to layer {} in a per-layer pool", hook,
                        out.layer, in.layer));
      }
      if (res_.buffered(out.layer, out.expert)) {
        bad_decision(
            "cache",
            fmt::format("{} swap evicts expert {} of layer {} from the prefetch buffer (a swap "
                        "exchanges experts of the cache share)",
                        hook, out.expert, out.layer));
      }
      Context ctx = context(out.layer, now);
      res_.evict(out.layer, out.expert);
      st_.cache->on_evict(out.layer, out.expert, ctx);
      prefetch_of_[size_t(out.layer) * E_ + out.expert] = -1;
    } else if (!res_.has_room_in(in.layer, false)) {
      bad_decision(
          "cache",
          fmt::format("{} swap loads expert {} of layer {} without evicting, but the {} is full",
                      hook, in.expert, in.layer, res_.buffer_slots() > 0 ? "cache share" : "pool"));
    }
    if (s.on_device) {
      // A copy inside GPU memory (its time, bytes over HBM bandwidth, is not
      // charged: microseconds for an expert), no link transfer.
      res_.place(in.layer, in.expert);
      Context ctx = context(in.layer, now);
      st_.cache->on_insert(in.layer, in.expert, ctx);
      ++m_.device_swaps;
      continue;
    }
    load(in.layer, in.expert, TaskKind::kSwapLoad, now, now, false, -1, -1,
         writeback_ && out.layer >= 0);
  }
}

// ---------------------------------------------------------------- oracle view

// ---------------------------------------------------------------- run

void Engine::compute_active(int32_t l, std::vector<ActiveExpert>* out) {
  out->clear();
  auto& work = const_cast<std::vector<int32_t>&>(workload_scratch_);
  auto& best = const_cast<std::vector<int32_t>&>(rank_scratch_);
  auto& wsum = const_cast<std::vector<float>&>(weight_scratch_);
  auto& touched = const_cast<std::vector<int32_t>&>(touched_);
  touched.clear();
  for (int64_t t = 0; t < step_.tokens(); ++t) {
    const int32_t* ids = step_.ids(t, l);
    // A hole (the trace lacks this token's routing at this layer): no
    // expert runs for it and no access is counted (RunMetrics::hole_rows).
    if (ids[0] == kHoleId) {
      ++m_.hole_rows[step_.phase() == Phase::kDecode ? 1 : 0];
      continue;
    }
    const float* w = step_.weights(t, l);
    for (int32_t j = 0; j < k_; ++j) {
      const int32_t e = ids[j];
      if (work[e] == 0) {
        touched.push_back(e);
        best[e] = j;
      }
      ++work[e];
      wsum[e] += w[j];
      best[e] = std::min(best[e], j);
    }
  }
  std::sort(touched.begin(), touched.end());
  for (int32_t e : touched) {
    out->push_back({e, work[e], wsum[e], best[e]});
    work[e] = 0;
    wsum[e] = 0;
  }
}

SimulationResult Engine::run() {
  plan_steps();
  check_memory();
  workload_scratch_.assign(E_, 0);
  rank_scratch_.assign(E_, 0);
  weight_scratch_.assign(E_, 0);
  mark_.assign(E_, 0);
  keep_stamp_.assign(E_, 0u);
  prefetch_of_.assign(size_t(L_) * E_, -1);
  m_.decode_layer_accesses.assign(L_, 0);
  m_.decode_layer_hits.assign(L_, 0);
  m_.prefetch_layer_loads.assign(L_, 0);
  active_.assign(L_, {});
  tokens_of_.assign(E_, 0);
  xfer_of_.assign(E_, -1);
  compute_end_of_.assign(E_, -1.0);
  place();
  if (st_.predictor) st_.predictor->prepare(model_, calib_, source_.gate_weights());
  if (st_.predictor) {
    timed_predictor_ = std::make_unique<TimedPredictor>(
        st_.predictor.get(), &sample_, &m_.decision_ns[kFamPredictor], &nested_ns_);
  }
  st_.prefetcher->set_predictor(timed_predictor_.get());
  setup_gate_stream();

  double prefill_ns = 0, decode_ns = 0;
  begin_executor();
  // The real backend's headline times are the steps' measured wall clock;
  // the lanes' composition of the measured task durations is kept beside
  // them (composed_*): their difference is the composition error.
  const bool real = real_backend_;
  const auto wall0 = Clock::now();
  for (int64_t s = 0; s < int64_t(steps_.size()); ++s) {
    pos_.step = s;
    throw_if_cancelled();
    exec_->begin_step(s);
    const double t0 = gpu_lane().free_ns();
    const double busy0[3] = {link_.busy_ns(), gpu_.busy_ns(), cpu_.busy_ns()};
    const auto w0 = Clock::now();
    run_step(s);
    const double wall = std::chrono::duration<double, std::nano>(Clock::now() - w0).count();
    const double dt = gpu_lane().free_ns() - t0;
    const double shown = real ? wall : dt;
    const StepPlan& sp = steps_[s];
    const bool first_token = sp.phase == Phase::kPrefill ||
                             (sp.decode_step == 0 && (s == 0 || steps_[s - 1].batch != sp.batch));
    if (sp.phase == Phase::kPrefill) {
      prefill_ns += shown;
      m_.prefill_tokens += int64_t(sp.tokens.size());
    } else {
      decode_ns += shown;
      m_.decode_tokens += int64_t(sp.tokens.size());
      m_.decode_busy_ns[0] += link_.busy_ns() - busy0[0];
      m_.decode_busy_ns[1] += gpu_.busy_ns() - busy0[1];
      m_.decode_busy_ns[2] += cpu_.busy_ns() - busy0[2];
      m_.tbt_ms.push_back(shown / 1e6);
      if (real) m_.composed_tbt_ms.push_back(dt / 1e6);
    }
    // A batch with no prompt still has a first token: its first decode step.
    if (first_token) {
      m_.ttft_ms.push_back(shown / 1e6);
      if (real) m_.composed_ttft_ms.push_back(dt / 1e6);
    }
  }
  m_.host_wall_ns = std::chrono::duration<double, std::nano>(Clock::now() - wall0).count();
  if (opt_.check_graph) check_graph();
  // Let queued transfers finish for the lane accounting.
  advance_link(kInf);
  m_.prefill_time_s = prefill_ns / 1e9;
  m_.decode_time_s = decode_ns / 1e9;
  m_.makespan_ns = std::max({gpu_.free_ns(), cpu_.free_ns(), link_.free_ns()});
  m_.total_time_s = m_.makespan_ns / 1e9;
  // A rate so small that a task outlasts what a double holds (a bandwidth of
  // 1e-308 GB/s) makes the clocks infinite: the case has no result.
  for (const auto& [what, x] : {std::pair<const char*, double>{"prefill time", prefill_ns},
                                {"decode time", decode_ns},
                                {"makespan", m_.makespan_ns}}) {
    if (!std::isfinite(x)) {
      throw Error(fmt::format(
          "the simulated {} is not a finite number ({}): a rate or bandwidth of hardware '{}' "
          "is too small for a task to end (check cpu.*, gpu.* and link.* against the "
          "machine's specifications)",
          what, x, hw_.name));
    }
  }
  m_.busy_ns[0] = link_.busy_ns();
  m_.busy_ns[1] = gpu_.busy_ns();
  m_.busy_ns[2] = cpu_.busy_ns();
  m_.busy_ns[3] = d2h_.busy_ns();
  m_.busy_ns[4] = act_.busy_ns();
  m_.cost_table_clamps = cost_.clamped_lookups();
  SimulationResult r;
  r.metrics = std::move(m_);
  for (const std::string& n : exec_->notes()) r.warnings.push_back(n);
  if (run_.short_of_top_p() > 0) {
    r.warnings.push_back(
        fmt::format("a component asked for the top-{} router probabilities per token and layer, "
                    "the trace holds {}; it ran "
                    "with {}",
                    run_.short_of_top_p(), run_.top_p(), run_.top_p()));
  }
  if (opt_.timeline) {
    std::stable_sort(timeline_.begin(), timeline_.end(),
                     [](const TaskRecord& a, const TaskRecord& b) {
                       return event_before(a.start_ns, a.lane, a.seq, b.start_ns, b.lane, b.seq);
                     });
    r.timeline = std::move(timeline_);
    r.measured = exec_->measured();
  }
  return r;
}

// Tells the executor the run's largest step, sequence count and position
// (the real one sizes its KV cache and scratch from them, before any step).
void Engine::begin_executor() {
  int64_t max_seqs = 1, max_pos = 1, max_tokens = 1;
  for (const StepPlan& sp : steps_) {
    int64_t seqs = 0, last = -1;
    for (const auto& [seq, pos] : sp.tokens) {
      if (seq != last) ++seqs;
      last = seq;
      max_pos = std::max(max_pos, pos + 1);
    }
    max_seqs = std::max(max_seqs, seqs);
    max_tokens = std::max(max_tokens, int64_t(sp.tokens.size()));
  }
  exec_->begin_run(max_seqs, max_pos, max_tokens, opt_.timeline);
}

void Engine::load_tokens(const StepPlan& sp, int64_t from, int64_t to, const StepRouting* gates) {
  step_.reset(sp.phase);
  for (int64_t i = from; i < to; ++i)
    step_.add(sp.tokens[size_t(i)].first, sp.tokens[size_t(i)].second);
  if (needs_.gate_inputs) {
    const int64_t H = source_.info().h_trace;
    auto& g = step_.gate_storage(H);
    g.resize(size_t(step_.tokens()) * L_ * H);
    if (gates) {
      const auto& src = gates->gate_data();
      std::copy(src.begin() + from * L_ * H, src.begin() + to * L_ * H, g.begin());
    } else {
      for (int64_t t = 0; t < step_.tokens(); ++t) {
        const int64_t seq = step_.seq(t), pos = step_.pos(t);
        if (!gate_readers_[seq]) gate_readers_[seq] = source_.open(seq, kGateInput | kNoRouting);
        while (gate_pos_[seq] <= pos) {
          if (!gate_readers_[seq]->next(gate_rec_))
            throw InternalError("gate input stream ended early");
          ++gate_pos_[seq];
        }
        std::copy(gate_rec_.gate_input.begin(), gate_rec_.gate_input.end(), g.begin() + t * L_ * H);
      }
    }
  }
  const int64_t n = step_.tokens();
  const auto first = sp.tokens.begin() + std::ptrdiff_t(from);
  const auto last_tok = sp.tokens.begin() + std::ptrdiff_t(to);
  // Attention's view: each token's sequence slot (a new slot where the
  // sequence changes) and position; the slots count the step's sequences.
  step_tokens_.slot.clear();
  step_tokens_.pos.clear();
  {
    int64_t last = -1;
    int32_t slot = -1;
    for (auto it = first; it != last_tok; ++it) {
      if (it->first != last) ++slot;
      last = it->first;
      step_tokens_.slot.push_back(slot);
      step_tokens_.pos.push_back(it->second);
    }
    step_tokens_.sequences = slot + 1;
  }
  step_sequences_ = step_tokens_.sequences;
  step_context_ = 0;
  if (sp.phase == Phase::kPrefill) {
    // Causal attention: each prompt token attends to half the prompt on average.
    step_context_ = std::max<int64_t>(1, (n / std::max<int64_t>(1, step_sequences_) + 1) / 2);
  } else {
    for (auto it = first; it != last_tok; ++it)
      step_context_ = std::max(step_context_, it->second + 1);
  }
  step_nonmoe_ns_ = cost_.layer_nonmoe_ns(n, step_sequences_, step_context_);
}

void Engine::run_step(int64_t s) {
  const StepPlan& sp = steps_[s];
  load_tokens(sp, 0, int64_t(sp.tokens.size()), nullptr);
  const int64_t n = step_.tokens();
  step_start_ns_ = gpu_lane().free_ns();
  layer_ready_ns_ = step_start_ns_;
  if (!gate_cur_.empty()) gate_prev_.swap(gate_cur_);
  gate_cur_.assign(size_t(L_), std::numeric_limits<double>::quiet_NaN());
  deferred_done_ns_ = -1;
  deferred_task_ = -1;
  ready_waits_ = Waits{};  // the step's first task waits for its lane only
  if (pipelined_ && sp.phase == Phase::kDecode) {
    run_decode_pipelined(sp);
  } else {
    const double nonmoe = step_nonmoe_ns_;
    int32_t moe = 0;
    for (int64_t li = 0; li < model_.num_layers; ++li) {
      if ((li & 7) == 7) throw_if_cancelled();  // a long prefill step stops within a few layers
      if (li < model_.first_dense_layers) {
        const double a =
            submit(gpu_lane(), gpu_lane_id(), TaskKind::kAttention, layer_ready_ns_,
                   exec_->attention_ns(int32_t(li), step_tokens_, nonmoe), -1, -1, ready_waits_, n);
        const int64_t att = last_task_;
        if (kv_on_host_) {  // the prefill's KV entries of this layer to the host
          submit(d2h_, Lane::kD2H, TaskKind::kActToCpu, a, cost_.kv_d2h_ns(n), -1, -1, after(att));
          m_.d2h_bytes += n * model_.kv_bytes_per_token();
        }
        layer_ready_ns_ = submit(gpu_lane(), gpu_lane_id(), TaskKind::kDenseFfn, a,
                                 exec_->dense_ffn_ns(int32_t(li), n, cost_.dense_ffn_ns(n)), -1, -1,
                                 after(att), n);
        ready_waits_ = after(last_task_);
        continue;
      }
      pos_.layer = moe;
      run_moe_layer(moe++);
    }
    // The last layer's deferred work (if any) is part of the step.
    Waits head = ready_waits_;
    if (deferred_done_ns_ >= 0) {
      layer_ready_ns_ = std::max(layer_ready_ns_, deferred_done_ns_);
      head.task[3] = deferred_task_;
    }
    submit(gpu_lane(), gpu_lane_id(), TaskKind::kLmHead, layer_ready_ns_,
           exec_->lm_head_ns(n, cost_.lm_head_ns(n)), -1, -1, head, n);
  }
  const double end = gpu_lane().free_ns();
  advance_link(end);
  pos_.layer = L_;
  step_.reveal(L_ - 1);
  Context ctx = context(L_ - 1, end);
  hook_ctx_ = ctx;
  prefetch_reqs_.clear();
  swaps_.clear();
  timed(kFamPrefetcher, [&] { st_.prefetcher->after_step(ctx, prefetch_reqs_); });
  timed(kFamCache, [&] { st_.cache->after_step(ctx, swaps_); });
  issue_prefetches(prefetch_reqs_, end);
  issue_swaps(swaps_, end, "after_step");
}

void Engine::swap_micro_batch(MicroBatch& b) {
  std::swap(step_, b.step);
  std::swap(step_tokens_, b.tokens);
  std::swap(step_sequences_, b.sequences);
  std::swap(step_context_, b.context);
  std::swap(step_nonmoe_ns_, b.nonmoe_ns);
  std::swap(layer_ready_ns_, b.layer_ready_ns);
  std::swap(ready_waits_, b.ready_waits);
  std::swap(deferred_done_ns_, b.deferred_done_ns);
  std::swap(deferred_task_, b.deferred_task);
}

void Engine::issue_attention(int32_t li, int32_t l, MicroBatch& b) {
  const int64_t n = b.step.tokens();
  if (!cpu_attention_) {
    double ready = b.layer_ready_ns;
    Waits w = b.ready_waits;
    if (host_kv_gpu_) {  // the micro-batch's KV entries of this layer to the GPU first
      const double kv_end = copy_kv_to_gpu(l, b);
      ready = std::max(ready, kv_end);
      w.copies_end = std::max(w.copies_end, kv_end);
    }
    b.att_gpu_ns = exec_->attention_ns(li, b.tokens, b.nonmoe_ns);
    b.att_end =
        submit(gpu_lane(), gpu_lane_id(), TaskKind::kAttention, ready, b.att_gpu_ns, l, -1, w, n);
    b.att_task = last_task_;
    b.post_pending = false;
    if (host_kv_gpu_) {  // the new entries back to the host, waited for by nothing
      submit(d2h_, Lane::kD2H, TaskKind::kActToCpu, b.att_end, cost_.kv_d2h_ns(n), l, -1,
             after(b.att_task));
      m_.d2h_bytes += n * model_.kv_bytes_per_token();
    }
    return;
  }
  b.att_gpu_ns = cost_.attention_pre_ns(n);
  const double pre = submit(gpu_lane(), gpu_lane_id(), TaskKind::kAttention, b.layer_ready_ns,
                            b.att_gpu_ns, l, -1, b.ready_waits, n);
  const double qkv = submit(d2h_, Lane::kD2H, TaskKind::kActToCpu, pre, cost_.qkv_d2h_ns(n), l, -1,
                            after(last_task_), n);
  m_.d2h_bytes += cost_.qkv_bytes(n);
  const double cpu =
      submit(cpu_, Lane::kCpu, TaskKind::kAttention, qkv,
             cost_.cpu_attention_ns(n, b.sequences, b.context), l, -1, after(last_task_), n);
  b.att_end = submit(act_, Lane::kActH2D, TaskKind::kActToGpu, cpu, cost_.h2d_activations_ns(n), l,
                     -1, after(last_task_), n);
  m_.act_h2d_bytes += cost_.activation_bytes(n);
  b.att_task = last_task_;
  b.post_pending = true;
}

// residency.attention = "gpu-host-kv": the micro-batch's KV entries of this
// layer copied host to device on the link, placed as a demand copy (it
// passes queued copies that have not started, the attention waiting for it)
// and fixed at once. Issued when the micro-batch's previous layer is done
// (FlexGen loads the next GPU batch's cache while this one computes; the
// read buffer is free once the layer before has attended). Not an expert:
// the residency is not touched. Returns when the copy lands.
double Engine::copy_kv_to_gpu(int32_t l, const MicroBatch& b) {
  Transfer t;
  t.layer = l;
  t.kind = TaskKind::kKvToGpu;
  t.issue_ns = b.layer_ready_ns;
  t.earliest_ns = b.layer_ready_ns;
  t.duration_ns = cost_.kv_h2d_ns(b.sequences, b.context);
  t.bytes = cost_.kv_bytes(b.sequences, b.context);
  t.staging = true;
  t.step = pos_.step;
  size_t pos = 0, moved_to = 0;
  const int64_t id = link_.issue(t, &pos, &moved_to);
  refresh_transfer_ends(pos + 1, moved_to);
  link_.fix(id);
  m_.kv_h2d_bytes += t.bytes;
  return link_.get(id).end_ns;
}

double Engine::finish_attention(int32_t l, int64_t tokens, MicroBatch& b, int64_t* task,
                                double* gpu_ns) {
  double end = b.att_end;
  *task = b.att_task;
  *gpu_ns = b.att_gpu_ns;
  if (b.post_pending) {
    const double post = cost_.attention_post_ns(tokens);
    end = submit(gpu_lane(), gpu_lane_id(), TaskKind::kAttention, b.att_end, post, l, -1,
                 after(b.att_task), tokens);
    *task = last_task_;
    *gpu_ns += post;
    b.post_pending = false;
  }
  return end;
}

// A decode step in micro-batches (residency.micro_batches; one when only
// the attention moves to the CPU), layer by layer: the first micro-batch's
// attention is issued, then for each micro-batch the next one's attention
// (so the CPU computes it while the GPU runs this one's experts: CGOPipe's
// order), then this one's MoE layer as any step's (gate, hits, decisions,
// GPU and CPU experts, hooks) over its own tokens. A micro-batch's next
// layer waits for its own previous layer only. The prefetch buffer's
// experts leave after the layer's last micro-batch.
void Engine::run_decode_pipelined(const StepPlan& sp) {
  const int64_t n = int64_t(sp.tokens.size());
  const int64_t m = std::max<int64_t>(1, std::min<int64_t>(st_.residency.micro_batches, n));
  // The full step's state stays in the members for the after-step hooks;
  // each micro-batch is loaded into them and swapped out.
  mbs_.clear();
  for (int64_t j = 0; j < m; ++j) {
    mbs_.emplace_back(run_);
    MicroBatch& b = mbs_.back();
    swap_micro_batch(b);  // members <- b's (empty) state, b <- the full step's
    load_tokens(sp, j * n / m, (j + 1) * n / m, &b.step);
    layer_ready_ns_ = step_start_ns_;
    ready_waits_ = Waits{};
    deferred_done_ns_ = -1;
    deferred_task_ = -1;
    swap_micro_batch(b);  // b <- the micro-batch, members <- the full step
  }
  int32_t moe = 0;
  for (int64_t li = 0; li < model_.num_layers; ++li) {
    if ((li & 7) == 7) throw_if_cancelled();
    if (li < model_.first_dense_layers) {
      for (auto& b : mbs_) {
        issue_attention(int32_t(li), -1, b);
        int64_t task = -1;
        double gpu_ns = 0;
        const int64_t nb = b.step.tokens();
        const double a = finish_attention(-1, nb, b, &task, &gpu_ns);
        b.layer_ready_ns = submit(gpu_lane(), gpu_lane_id(), TaskKind::kDenseFfn, a,
                                  exec_->dense_ffn_ns(int32_t(li), nb, cost_.dense_ffn_ns(nb)), -1,
                                  -1, after(task), nb);
        b.ready_waits = after(last_task_);
      }
      continue;
    }
    const int32_t l = moe++;
    pos_.layer = l;
    const bool ahead = st_.residency.attention_order != "serial";
    issue_attention(int32_t(li), l, mbs_[0]);
    for (int64_t j = 0; j < m; ++j) {
      if (j > 0 && !ahead) issue_attention(int32_t(li), l, mbs_[size_t(j)]);
      if (j + 1 < m && ahead) issue_attention(int32_t(li), l, mbs_[size_t(j + 1)]);
      MicroBatch& b = mbs_[size_t(j)];
      swap_micro_batch(b);
      cur_mb_ = &b;
      last_micro_batch_ = j + 1 == m;
      run_moe_layer(l);
      cur_mb_ = nullptr;
      last_micro_batch_ = true;
      swap_micro_batch(b);
    }
  }
  // The after-step hooks see the whole step: every layer's activated experts
  // over all micro-batches (each micro-batch's layer run left its own).
  step_.reveal(L_ - 1);
  const int64_t holes[2] = {m_.hole_rows[0], m_.hole_rows[1]};  // counted by the micro-batches
  for (int32_t l = 0; l < L_; ++l) compute_active(l, &active_[size_t(l)]);
  m_.hole_rows[0] = holes[0];
  m_.hole_rows[1] = holes[1];
  // Each micro-batch's lm head after its last layer (and its deferred work).
  for (auto& b : mbs_) {
    Waits head = b.ready_waits;
    double ready = b.layer_ready_ns;
    if (b.deferred_done_ns >= 0) {
      ready = std::max(ready, b.deferred_done_ns);
      head.task[3] = b.deferred_task;
    }
    const int64_t nb = b.step.tokens();
    submit(gpu_lane(), gpu_lane_id(), TaskKind::kLmHead, ready,
           exec_->lm_head_ns(nb, cost_.lm_head_ns(nb)), -1, -1, head, nb);
  }
}

// A MoE layer in stages: the gate (attention, routing revealed, hits), the
// decisions (cache hooks, prefetcher, deferral, assigner), their validation,
// the GPU side, the CPU side, and the bookkeeping after the layer. Each stage
// reads and writes the layer's small state (LayerRun); the order of every
// submission, hook and counter is the one the single function had.
void Engine::run_moe_layer(int32_t l) {
  LayerRun r = gate_stage(l);
  count_hits(l, r);
  decide(l, r);
  validate_plan(l);
  for (const auto& a : active_[l])
    tokens_of_[a.expert] = a.tokens;  // workload of each expert in this layer
  gpu_side(l, r);
  cpu_side(l, r);
  after_layer(l, r);
  cancel_stale_prefetches(l, r.t_gate);
}

// 1. attention, norms and router; transfers completed by the gate; routing revealed.
Engine::LayerRun Engine::gate_stage(int32_t l) {
  const StepPlan& sp = steps_[pos_.step];
  LayerRun r;
  r.decode = sp.phase == Phase::kDecode;
  r.ph = r.decode ? 1 : 0;
  r.n = step_.tokens();
  sample_ =
      opt_.decision_sample_every > 0 && (decision_counter_++ % opt_.decision_sample_every) == 0;
  if (sample_) ++m_.decision_samples;
  ++m_.moe_layer_steps;
  double att;
  if (cur_mb_) {  // a pipelined decode step: the attention was issued ahead (issue_attention)
    int64_t task = -1;
    r.t_gate = finish_attention(l, r.n, *cur_mb_, &task, &att);
    r.att_task = r.gpu_end_task = task;
  } else {
    att =
        exec_->attention_ns(int32_t(model_.first_dense_layers) + l, step_tokens_, step_nonmoe_ns_);
    r.t_gate = submit(gpu_lane(), gpu_lane_id(), TaskKind::kAttention, layer_ready_ns_, att, l, -1,
                      ready_waits_, r.n);
    r.att_task = r.gpu_end_task = last_task_;
    if (kv_on_host_) {  // a prefill: this layer's new KV entries to the host
      submit(d2h_, Lane::kD2H, TaskKind::kActToCpu, r.t_gate, cost_.kv_d2h_ns(r.n), l, -1,
             after(r.att_task));
      m_.d2h_bytes += r.n * model_.kv_bytes_per_token();
    }
  }
  gate_cur_[size_t(l)] = r.t_gate;
  if (r.decode) m_.bd_attention_ns += att;
  advance_link(r.t_gate);
  step_.reveal(l);
  compute_active(l, &active_[l]);
  return r;
}

// 2. hits of the activated experts, and the prefetches that targeted this (step, layer) judged.
// (With admission "one-at-a-time" the accesses are judged later, in turn:
// admit_one_at_a_time.)
void Engine::count_hits(int32_t l, const LayerRun& r) {
  const auto& active = active_[l];
  if (!one_at_a_time_) {
    for (const auto& a : active) record_access(l, r, a.tokens, res_.resident(l, a.expert));
  }
  for (int32_t e : res_.holders(l)) {
    int64_t& target = prefetch_of_[size_t(l) * E_ + e];
    if (target < 0 || target > pos_.step) continue;
    const ActiveExpert* it = activated(l, e);
    if (target == pos_.step && it) {
      ++m_.prefetch_useful;
      if (res_.in_flight(l, e)) ++m_.prefetch_late;
      if (r.decode && res_.resident(l, e)) m_.prefetch_covered += it->tokens;
    } else if (target == pos_.step && !last_micro_batch_) {
      continue;  // a later micro-batch of this layer may use it
    }
    target = -1;
  }
}

void Engine::record_access(int32_t l, const LayerRun& r, int64_t tokens, bool hit) {
  m_.expert_accesses[r.ph] += 1;
  m_.token_accesses[r.ph] += tokens;
  if (hit) {
    m_.expert_hits[r.ph] += 1;
    m_.token_hits[r.ph] += tokens;
  }
  if (r.decode) {
    m_.decode_layer_accesses[l] += tokens;
    if (hit) m_.decode_layer_hits[l] += tokens;
    const size_t at =
        size_t(steps_[pos_.step].decode_step / RunMetrics::kStepGroup) * size_t(L_) + size_t(l);
    if (m_.decode_group_accesses.size() <= at) {
      m_.decode_group_accesses.resize(at - size_t(l) + size_t(L_), 0);
      m_.decode_group_hits.resize(at - size_t(l) + size_t(L_), 0);
    }
    m_.decode_group_accesses[at] += tokens;
    if (hit) m_.decode_group_hits[at] += tokens;
  }
}

// 3. the components decide: cache hooks at the gate, prefetch requests
// (issued after this layer's own loads), deferral, the assigner's plan.
void Engine::decide(int32_t l, LayerRun& r) {
  const auto& active = active_[l];
  hook_ctx_ = context(l, r.t_gate);
  Context ctx = hook_ctx_;
  timed(kFamCache, [&] {
    st_.cache->on_gate(ctx);
    if (!one_at_a_time_) {  // else each access is reported in its turn
      for (const auto& a : active) {
        st_.cache->on_access(l, a, ctx);
        if (res_.cached(l, a.expert)) st_.cache->on_hit(l, a.expert, ctx);
      }
    }
  });
  prefetch_reqs_.clear();
  step_.set_reader(&st_.prefetcher->name());
  timed(kFamPrefetcher, [&] { st_.prefetcher->after_gate(ctx, prefetch_reqs_); });
  gate_prefetches_ = prefetch_reqs_;
  r.predict = st_.prefetcher->predict_gpu_ns(ctx);

  deferred_.clear();
  if (r.decode && l + 1 < L_) {
    step_.set_reader(&st_.deferral->name());
    timed(kFamDeferral, [&] { st_.deferral->choose(ctx, deferred_); });
  }
  std::fill(mark_.begin(), mark_.end(), 0);
  for (const auto& a : active) mark_[a.expert] = 1;
  for (int32_t e : deferred_) {
    if (e < 0 || e >= E_ || mark_[e] != 1) {
      bad_decision(
          "deferral",
          fmt::format("deferred expert {} of layer {}, which is not activated (or twice)", e, l));
    }
    mark_[e] = 2;
  }
  if (!deferred_.empty()) {
    immediate_.clear();
    for (const auto& a : active) {
      if (mark_[a.expert] == 1) immediate_.push_back(a);
    }
    ctx.active = immediate_;
  }
  plan_.clear();
  step_.set_reader(&st_.assigner->name());
  timed(kFamAssigner, [&] { st_.assigner->plan(ctx, plan_); });
  step_.set_reader(nullptr);
}

// The plan against the layer's activated experts (mark_: 1 activated, 2
// deferred, set by decide): every expert on exactly one side, loads only of
// uncached GPU experts, a GPU expert cached or loaded.
void Engine::validate_plan(int32_t l) {
  for (int32_t e : plan_.gpu) {
    if (e < 0 || e >= E_ || mark_[e] != 1) {
      bad_decision(
          "assigner",
          fmt::format("layer {}: GPU expert {} is not an activated, non-deferred expert or "
                      "is planned twice",
                      l, e));
    }
    mark_[e] = 3;
  }
  for (int32_t e : plan_.cpu) {
    if (e < 0 || e >= E_ || mark_[e] != 1) {
      bad_decision(
          "assigner",
          fmt::format("layer {}: CPU expert {} is not an activated, non-deferred expert or "
                      "is planned twice",
                      l, e));
    }
    mark_[e] = 4;
  }
  for (const auto& a : active_[l]) {
    if (mark_[a.expert] == 1) {
      bad_decision("assigner",
                   fmt::format("layer {}: activated expert {} is neither on the GPU nor on the CPU",
                               l, a.expert));
    }
  }
  if (!plan_.gpu.empty() && !hw_.has_gpu()) {
    throw Error(fmt::format(
        "strategy '{}': expected a hardware profile with a GPU (its assigner '{}' runs experts "
        "on the GPU), found '{}' with none",
        st_.name, st_.assigner->name(), hw_.name));
  }
  for (int32_t e : plan_.load) {
    if (e < 0 || e >= E_ || mark_[e] != 3) {
      bad_decision(
          "assigner",
          fmt::format("layer {}: loads expert {} which is not a GPU expert (or loads it twice)", l,
                      e));
    }
    if (res_.cached(l, e)) {
      bad_decision("assigner",
                   fmt::format("layer {}: loads expert {} which is already cached", l, e));
    }
    mark_[e] = 5;
  }
  for (int32_t e : plan_.gpu) {
    if (mark_[e] == 3 && !res_.cached(l, e)) {
      bad_decision(
          "assigner",
          fmt::format("layer {}: runs expert {} on the GPU but neither has it cached nor loads it",
                      l, e));
    }
  }
}

void Engine::pin_for_layer(int32_t l, int32_t e) {
  if (res_.cached(l, e) && !res_.pinned(l, e)) {
    res_.pin(l, e);
    pins_.push_back(e);
  }
}

// An on-demand copy of GPU expert e of layer l (into the cache share when the
// strategy admits on demand and a victim is allowed, else into a staging
// buffer); returns whether it is staged.
bool Engine::demand_load(int32_t l, int32_t e, double t_gate) {
  bool staging = !st_.residency.admit_on_demand;
  SlotRef freed{-2, -2};
  if (!staging) {
    freed = make_room(l, e, t_gate, keep_);
    if (freed.layer == -1) staging = true;
  }
  double earliest = t_gate;
  if (freed.layer == l && compute_end_of_[freed.expert] >= 0) {
    earliest =
        std::max(earliest, compute_end_of_[freed.expert]);  // its slot's last user must finish
  }
  if (staging && plan_.staging_buffers > 0 &&
      int64_t(staging_ring_.size()) >= plan_.staging_buffers) {
    earliest =
        std::max(earliest, staging_ring_[staging_ring_.size() - size_t(plan_.staging_buffers)]);
  }
  xfer_of_[e] = load(l, e, TaskKind::kDemandLoad, t_gate, earliest, staging, pos_.step, l,
                     writeback_ && freed.layer >= 0, st_.residency.reduced_demand_loads);
  return staging;
}

// GPU expert e of layer l, once its copy (if any) and the layer's barrier allow.
void Engine::run_gpu_expert(int32_t l, int32_t e, bool staged, LayerRun& r) {
  double ready = r.barrier;
  Waits w =
      after(r.att_task);  // the barrier: the gate, then the copies behind it (barrier_copies_end)
  w.copies_end = r.barrier_copies_end;
  int64_t xid = xfer_of_[e];
  if (xid < 0 && res_.in_flight(l, e)) xid = res_.transfer(l, e);
  if (xid >= 0) {
    link_.fix(xid);
    ready = std::max(ready, link_.get(xid).end_ns);
    w.copies_end = std::max(w.copies_end, link_.get(xid).end_ns);
    w.copy = xid;
  }
  const double free = gpu_lane().free_ns();
  if (ready > free) r.wait += ready - std::max(free, r.t_gate);
  const double dur = cost_.gpu_expert_ns(tokens_of_[e]);
  r.gpu_end =
      submit(gpu_lane(), gpu_lane_id(), TaskKind::kGpuExpert, ready, dur, l, e, w, tokens_of_[e]);
  r.gpu_end_task = last_task_;
  compute_end_of_[e] = r.gpu_end;
  computed_this_layer_.push_back(e);
  if (staged) staging_ring_.push_back(r.gpu_end);
  r.gpu_compute += dur;
  m_.gpu_expert_tokens += tokens_of_[e];
}

// 4. GPU side: the predictor's and shared experts' GPU time, the on-demand
// copies and the GPU experts, in the order the residency rules give.
void Engine::gpu_side(int32_t l, LayerRun& r) {
  const auto& active = active_[l];
  r.gpu_end = r.t_gate;
  if (r.predict > 0) {
    r.gpu_end = submit(gpu_lane(), gpu_lane_id(), TaskKind::kPredict, r.t_gate, r.predict, l, -1,
                       after(r.att_task));
    r.gpu_end_task = last_task_;
    if (r.decode) m_.bd_predict_ns += r.predict;
  }
  const double shared = exec_->shared_experts_ns(cost_, l, r.n);
  if (shared > 0) {
    r.gpu_end = submit(gpu_lane(), gpu_lane_id(), TaskKind::kSharedExperts, r.t_gate, shared, l, -1,
                       after(r.att_task), r.n);
    r.gpu_end_task = last_task_;
    if (r.decode) m_.bd_shared_ns += shared;
  }
  pins_.clear();
  staging_ring_.clear();
  // SMoE: the GPU experts wait for every copy into this layer's slots that
  // was in flight at the gate.
  r.barrier = r.t_gate;
  if (plan_.wait_layer_transfers && !plan_.gpu.empty()) {
    for (int32_t e : res_.holders(l)) {
      if (!res_.in_flight(l, e)) continue;
      const int64_t xid = res_.transfer(l, e);
      link_.fix(xid);
      r.barrier = std::max(r.barrier, link_.get(xid).end_ns);
      r.barrier_copies_end = std::max(r.barrier_copies_end, link_.get(xid).end_ns);
    }
  }
  const bool walk = !st_.residency.pin_active_token || plan_.staging_buffers > 0;
  computed_this_layer_.clear();
  if (one_at_a_time_) {
    admit_one_at_a_time(l, r);
  } else if (!walk) {
    // Every activated expert keeps its slot; loads go in the assigner's link
    // order, then the GPU experts run in GPU order.
    for (const auto& a : active) pin_for_layer(l, a.expert);
    keep_.clear();
    for (const auto& a : active) keep_.push_back(a.expert);
    for (int32_t e : plan_.load) demand_load(l, e, r.t_gate);
    for (int32_t e : plan_.gpu) run_gpu_expert(l, e, false, r);
  } else {
    // Walk the GPU order, loading each expert when its turn comes: an expert
    // computed earlier in this layer may give its slot to a later one (the
    // copy then waits for that computation). Loads follow the GPU order.
    std::fill(mark_.begin(), mark_.end(), 0);
    for (int32_t e : plan_.load) mark_[e] = 1;
    for (size_t i = 0; i < plan_.gpu.size(); ++i) {
      const int32_t e = plan_.gpu[i];
      bool staged = false;
      if (mark_[e] == 1) {
        keep_.clear();
        if (st_.residency.pin_active_token) {
          for (const auto& a : active) keep_.push_back(a.expert);
        } else {
          keep_.assign(plan_.gpu.begin() + std::ptrdiff_t(i), plan_.gpu.end());
        }
        staged = demand_load(l, e, r.t_gate);
      }
      run_gpu_expert(l, e, staged, r);
    }
  }
  // Until this layer's hooks are done, its GPU experts keep their slots
  // (loaded ones too).
  computed_this_layer_.clear();
  for (int32_t e : plan_.gpu) pin_for_layer(l, e);
  if (r.decode) {
    m_.bd_gpu_compute_ns += r.gpu_compute;
    m_.bd_wait_cache_ns += r.wait;
  } else {
    m_.pbd_gpu_compute_ns += r.gpu_compute;
    m_.pbd_wait_pcie_ns += r.wait;
    m_.prefill_expert_pairs += int64_t(active.size());
    m_.prefill_gpu_expert_pairs += int64_t(plan_.gpu.size());
  }
  for (int32_t e : plan_.gpu) {
    xfer_of_[e] = -1;
    compute_end_of_[e] = -1;
  }
}

// The layer's experts one at a time, in routing order (each token's experts
// by rank, tokens in the step's order; an expert is taken at its first use):
// each is judged a hit if it is resident when its turn comes; a GPU expert
// that is not there (a planned load, or one a load before it evicted) is
// loaded then, with nothing kept but pinned experts, and computed before the
// next. CPU and deferred experts are judged in turn but never admitted. The
// assigner's plan decides the side; its GPU and link orders give way to the
// routing order.
void Engine::admit_one_at_a_time(int32_t l, LayerRun& r) {
  std::fill(mark_.begin(), mark_.end(), 0);
  for (int32_t e : plan_.gpu) mark_[e] = 1;
  route_order_.clear();
  for (int64_t t = 0; t < step_.tokens(); ++t) {
    const int32_t* ids = step_.ids(t, l);
    if (ids[0] == kHoleId) continue;  // a hole: nothing to admit
    for (int32_t j = 0; j < k_; ++j) {
      if (mark_[ids[j]] & 2) continue;
      mark_[ids[j]] |= 2;
      route_order_.push_back(ids[j]);
    }
  }
  keep_.clear();
  pos_.pending_rank.assign(size_t(E_), -1);
  for (size_t i = 0; i < route_order_.size(); ++i)
    pos_.pending_rank[size_t(route_order_[i])] = int32_t(i);
  pos_.admitting_layer = l;
  for (int32_t e : route_order_) {
    pos_.pending_rank[size_t(e)] = -1;  // in its turn now: its use is this one
    const ActiveExpert* it = activated(l, e);
    const bool hit = res_.resident(l, e);
    record_access(l, r, it->tokens, hit);
    timed(kFamCache, [&] {
      st_.cache->on_access(l, *it, hook_ctx_);
      if (res_.cached(l, e)) st_.cache->on_hit(l, e, hook_ctx_);
    });
    if (!(mark_[e] & 1)) continue;  // on the CPU (or deferred)
    const bool staged = res_.cached(l, e) ? false : demand_load(l, e, r.t_gate);
    run_gpu_expert(l, e, staged, r);
  }
  pos_.admitting_layer = -1;
}

// 5. CPU side: the activations to the CPU, the immediate experts and their
// outputs back, then the deferred ones (their outputs join the next layer).
void Engine::cpu_side(int32_t l, LayerRun& r) {
  double imm_done = -1, def_done = -1;
  int64_t imm_task = -1, def_task = -1, last_cpu = -1;
  const int64_t n = r.n;
  if (!plan_.cpu.empty() || !deferred_.empty()) {
    const double to_cpu = cost_.d2h_activations_ns(n);
    double ready =
        submit(d2h_, Lane::kD2H, TaskKind::kActToCpu, r.t_gate, to_cpu, l, -1, after(r.att_task));
    const Waits cpu_waits = after(last_task_, plan_.serialize ? r.gpu_end_task : -1);
    m_.d2h_bytes += hw_.has_gpu() ? cost_.activation_bytes(n) : 0;
    if (plan_.serialize) ready = std::max(ready, r.gpu_end);
    bool first = true;
    double cpu_end = ready;
    for (int32_t e : plan_.cpu) {
      cpu_end = submit(cpu_, Lane::kCpu, TaskKind::kCpuExpert, ready,
                       exec_->cpu_expert_ns(cost_, l, e, tokens_of_[e], first), l, e, cpu_waits,
                       tokens_of_[e]);
      first = false;
      m_.cpu_expert_tokens += tokens_of_[e];
    }
    if (!plan_.cpu.empty()) {
      imm_done = submit(act_, Lane::kActH2D, TaskKind::kActToGpu, cpu_end,
                        cost_.h2d_activations_ns(n), l, -1, after(last_task_));
      imm_task = last_task_;
      m_.act_h2d_bytes += hw_.has_gpu() ? cost_.activation_bytes(n) : 0;
    }
    for (int32_t e : deferred_) {
      cpu_end = submit(cpu_, Lane::kCpu, TaskKind::kDeferredExpert, ready,
                       exec_->cpu_expert_ns(cost_, l, e, tokens_of_[e], first), l, e, cpu_waits,
                       tokens_of_[e]);
      last_cpu = last_task_;
      first = false;
      m_.cpu_expert_tokens += tokens_of_[e];
      m_.deferred_expert_tokens += tokens_of_[e];
    }
    if (!deferred_.empty()) {
      def_done = submit(act_, Lane::kActH2D, TaskKind::kActToGpu, cpu_end,
                        cost_.h2d_activations_ns(n), l, -1, after(last_cpu));
      def_task = last_task_;
      m_.act_h2d_bytes += hw_.has_gpu() ? cost_.activation_bytes(n) : 0;
    }
  }
  r.done = r.gpu_end;
  if (imm_done >= 0) r.done = std::max(r.done, imm_done);
  if (deferred_done_ns_ >= 0)
    r.done = std::max(r.done, deferred_done_ns_);  // previous layer's deferred outputs
  if (imm_done > r.gpu_end) {
    (r.decode ? m_.bd_cpu_other_ns : m_.pbd_wait_cpu_ns) +=
        imm_done - std::max(r.gpu_end, r.t_gate);
  }
  // What the next layer waits for: this layer's GPU side, its CPU outputs
  // back, the previous layer's deferred outputs.
  ready_waits_ = after(r.gpu_end_task, imm_done >= 0 ? imm_task : -1,
                       deferred_done_ns_ >= 0 ? deferred_task_ : -1);
  deferred_done_ns_ = def_done;
  deferred_task_ = def_task;
  layer_ready_ns_ = r.done;
}

// 6. prefetches queued at the gate, then after the GPU experts; the prefetch
// buffer's used experts leave; window swaps; an unread buffer's copies.
void Engine::after_layer(int32_t l, const LayerRun& r) {
  issue_prefetches(gate_prefetches_, r.t_gate);
  // The layer's GPU experts have finished by gpu_end: later requests (issued
  // at gpu_end or after) may take their slots.
  for (int32_t e : pins_) res_.unpin(l, e);
  pins_.clear();
  if (res_.buffer_slots() > 0 && last_micro_batch_) release_prefetch_buffer(l, r.gpu_end);
  recopy_computed(l, r.gpu_end);
  prefetch_reqs_.clear();
  Context after = context(l, r.gpu_end);
  step_.set_reader(&st_.prefetcher->name());
  timed(kFamPrefetcher, [&] { st_.prefetcher->after_gpu_experts(after, prefetch_reqs_); });
  step_.set_reader(nullptr);
  issue_prefetches(prefetch_reqs_, r.gpu_end);
  swaps_.clear();
  Context end_ctx = context(l, r.done);
  end_ctx.plan = &plan_;
  timed(kFamCache, [&] { st_.cache->after_layer(end_ctx, swaps_); });
  issue_swaps(swaps_, r.done, "after_layer", l);
  // A buffer nothing reads (LayerPlan::unread_buffer_layer): every expert of
  // that layer is copied when this layer is done; link time and bytes only.
  if (plan_.unread_buffer_layer >= 0 && hw_.has_gpu()) {
    if (plan_.unread_buffer_layer >= L_) {
      bad_decision("assigner",
                   fmt::format("unread buffer of layer {} (the model has {} MoE layers)",
                               plan_.unread_buffer_layer, L_));
    }
    for (int32_t e = 0; e < E_; ++e) {
      load(plan_.unread_buffer_layer, e, TaskKind::kBufferCopy, r.done, r.done, true, pos_.step,
           plan_.unread_buffer_layer);
    }
  }
}

// The prefetch buffer is used once: its experts of this layer whose target
// gate has passed leave now. A copy not started yet is cancelled; one
// already on the link is abandoned (the link finishes it, the slot is
// free for the next prefetch). One loaded for a later step (token-wise)
// stays.
void Engine::release_prefetch_buffer(int32_t l, double gpu_end) {
  advance_link(gpu_end);  // copies that landed while the layer computed are resident now
  Context c = context(l, gpu_end);
  const bool admit = st_.cache->admits_prefetched();
  const Context saved = hook_ctx_;
  if (admit) hook_ctx_ = c;  // make_room's victim() reads it
  for (int32_t e : std::vector<int32_t>(res_.holders(l).begin(), res_.holders(l).end())) {
    if (!res_.buffered(l, e) || res_.pinned(l, e) || prefetch_of_[size_t(l) * E_ + e] >= 0)
      continue;
    // A cache that admits what its layer used (CachePolicy::admits_prefetched)
    // takes the expert into the cache share, evicting its victim there when
    // the share is full; with nothing evictable the expert leaves.
    if (admit && res_.resident(l, e) && activated(l, e) &&
        make_room(l, e, gpu_end, {}, /*into_buffer=*/false).layer != -1) {
      res_.set_buffered(l, e, false);
      st_.cache->on_insert(l, e, c);
      ++m_.prefetch_admitted;
      continue;
    }
    if (res_.in_flight(l, e) && link_.cancel(res_.transfer(l, e), gpu_end)) {
      ++m_.prefetch_cancelled;
      m_.h2d_bytes -= link_.get(res_.transfer(l, e)).bytes;  // a cancelled copy moves nothing
      refresh_transfer_ends(0, link_.queue().size());  // the transfers behind it moved earlier
    }
    res_.evict(l, e);  // clears its buffered mark
    st_.cache->on_evict(l, e, c);
  }
  if (admit) hook_ctx_ = saved;
}

// Fate's code (residency.recopy_from_layer): each expert the layer computed on
// the GPU that stays in the cache share is copied again, whole, when the
// layer's GPU work is done; until it lands the expert is in flight (a later
// use waits for it; it cannot be evicted meanwhile).
void Engine::recopy_computed(int32_t l, double gpu_end) {
  const int64_t from = st_.residency.recopy_from_layer;
  if (from < 0 || l < from || !hw_.has_gpu()) return;
  advance_link(gpu_end);  // copies that landed while the layer computed are resident now
  for (int32_t e : plan_.gpu) {
    if (!res_.resident(l, e) || res_.buffered(l, e)) continue;
    load(l, e, TaskKind::kRecopy, gpu_end, gpu_end, false, pos_.step, l);
  }
}

// Queued prefetches for layers that have now started are useless.
void Engine::cancel_stale_prefetches(int32_t l, double t_gate) {
  if (!st_.residency.cancel_stale_prefetch) return;
  for (int64_t q : std::vector<int64_t>(link_.queue().begin(), link_.queue().end())) {
    const Transfer& t = link_.get(q);
    if (t.kind != TaskKind::kPrefetchLoad || t.target_step != pos_.step || t.target_layer > l)
      continue;
    if (link_.cancel(q, t_gate)) {
      ++m_.prefetch_cancelled;
      m_.h2d_bytes -= t.bytes;  // a cancelled copy moves nothing
      if (res_.in_flight(t.layer, t.expert) && res_.transfer(t.layer, t.expert) == q) {
        Context c = context(t.layer, t_gate);
        res_.evict(t.layer, t.expert);
        st_.cache->on_evict(t.layer, t.expert, c);
      }
    }
  }
}

}  // namespace

SimulationResult simulate(const ModelSpec& model, const HardwareProfile& hw,
                          const WorkloadSpec& workload, StrategyInstance& strategy,
                          const TraceSource& source, const CalibrationData* calibration,
                          const EngineOptions& opt) {
  Engine sim(model, hw, workload, strategy, source, calibration, opt);
  return sim.run();
}

}  // namespace moebench
