// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The engine: setup, the run loop, a step's tokens and task submission (its
// other parts: core/engine/engine_impl.h).
#include "core/engine/engine_impl.h"

namespace moebench {
namespace engine_impl {

void Engine::plan_steps() {
  // The scheduler forms the steps (core/scheduler/); the static one's
  // are known before the first, which the oracles' future reads.
  sched_ = make_scheduler(workload_.scheduler);
  SchedulerInput in;
  in.sequences.reserve(size_t(run_.sequences()));
  for (int64_t s = 0; s < run_.sequences(); ++s) in.sequences.push_back(run_.sequence(s));
  in.arrival_ns = opt_.arrival_ns;
  in.batch_size = workload_.batch_size;
  in.max_batch_tokens = workload_.max_batch_tokens;
  in.chunked_prefill = workload_.chunked_prefill;
  if (workload_.serving()) requests_.start(in);
  sched_->start(std::move(in));
  if (!sched_->plans_ahead()) {
    // The oracles read the planned future and the real executor sizes itself
    // from the planned steps: neither is there when steps follow the clock.
    if (needs_.future && opt_.served_future) {
      future_ = std::make_unique<PlannedFuture>(run_, *opt_.served_future, pos_, !judged_at_gate_);
    } else if (needs_.future) {
      throw Error(fmt::format(
          "strategy '{}': a component reads the future (an oracle), which the '{}' scheduler "
          "does not plan ahead (docs/SERVING.md, \"Oracles\")",
          st_.name, sched_->name()));
    }
    return;
  }
  StepPlan sp;
  while (sched_->next(0.0, &sp)) steps_.push_back(std::move(sp));
  if (needs_.future)
    future_ = std::make_unique<PlannedFuture>(run_, steps_, pos_, !judged_at_gate_);
}

// The next step to run: the planned one, or the scheduler's given the clock
// (the real backend's: the wall clock since the run began, `wall0`; it waits
// for an arrival in real time).
bool Engine::next_step(int64_t s, Clock::time_point wall0) {
  if (sched_->plans_ahead()) return s < int64_t(steps_.size());
  const bool real = mode_.real_backend;
  const auto since = [&] {
    return std::chrono::duration<double, std::nano>(Clock::now() - wall0).count();
  };
  StepPlan sp;
  if (!sched_->next(real ? since() : gpu_lane().free_ns(), &sp)) return false;
  if (real) {
    // Waits for the arrival in slices, so that a SIGINT or SIGTERM stops the
    // case within one (an arrival a day away once held the run for the day).
    const auto until = wall0 + std::chrono::nanoseconds(int64_t(std::ceil(sp.not_before_ns)));
    while (Clock::now() < until) {
      throw_if_cancelled();
      std::this_thread::sleep_until(std::min(until, Clock::now() + std::chrono::milliseconds(20)));
    }
  }
  steps_.push_back(std::move(sp));
  return true;
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
  pc.cost = &plan_cost();
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
  gate_stream_ = std::make_unique<GateStream>(source_, run_.sequences(), L_, st_.name);
}

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
  c.routing = &cur_.step;
  if (layer >= 0 && layer < int32_t(active_.size())) c.active = active_[layer];
  c.residency = &res_;
  c.cost = &plan_cost();
  c.lanes = {const_cast<Engine*>(this)->gpu_lane().free_ns(), lanes_.cpu.free_ns(),
             link_.free_ns()};
  c.layer_nonmoe_ns = cur_.nonmoe_ns;
  c.gates = source_.gate_weights();
  c.calibration = calib_;
  c.future = future_.get();
  return c;
}

double Engine::submit(FifoLane& lane, Lane id, TaskKind kind, double ready, double dur,
                      int32_t layer, int32_t expert, const Waits& waits, int64_t tokens,
                      double* start) {
  double end;
  Waits w = waits;
  if (id == Lane::kGpu) copies_.gpu_task(&ready, &w, link_.free_ns());  // a shared stream
  if (const double h = cost_.handoff_ns(); h > 0) {  // a wait across lanes: a host hand-off
    for (int64_t t : w.task) {
      if (t >= 0 && log_.lane_of(t) != id) ready = std::max(ready, log_.end_of(t) + h);
    }
  }
  dur = under_copy(kind, std::max(ready, lane.free_ns()), dur);
  const double s = lane.submit(ready, dur, &end);
  if (start) *start = s;
  static_assert(size_t(TaskKind::kCount) <= std::extent_v<decltype(RunMetrics::task_ns)>,
                "RunMetrics::task_ns (core/engine/metrics.h) holds a slot per task kind");
  m_.task_ns[size_t(kind)] += dur;
  log_.add_task(id, &lane, kind, s, end, dur, w, waits, pos_.step, layer, expert, tokens);
  return end;
}

// An expert task's time with the hardware's under-copy term: the part of it
// during which the link copies experts (the copies queued or done when it is
// submitted, at their times now) runs `factor` times slower; the stretched
// part is not looked at again (one pass).
double Engine::under_copy(TaskKind kind, double start, double dur) const {
  const bool cpu = kind == TaskKind::kCpuExpert || kind == TaskKind::kDeferredExpert;
  if (!(cpu || kind == TaskKind::kGpuExpert) || dur <= 0) return dur;
  const double f = cost_.under_copy_factor(cpu);
  if (f == 1.0) return dur;
  return dur + (f - 1.0) * link_.copying_ns(start, start + dur);
}

// The per-expert state, the placement, the predictor and the gate stream,
// before the first step.
void Engine::prepare_run() {
  sc_.workload.assign(E_, 0);
  sc_.rank.assign(E_, 0);
  sc_.weight.assign(E_, 0);
  sc_.mark.assign(E_, 0);
  sc_.keep_stamp.assign(E_, 0u);
  prefetch_of_.assign(size_t(L_) * E_, -1);
  m_.decode_layer_accesses.assign(L_, 0);
  m_.decode_layer_hits.assign(L_, 0);
  m_.prefetch_layer_loads.assign(L_, 0);
  active_.assign(L_, {});
  sc_.tokens_of.assign(E_, 0);
  sc_.xfer_of.assign(E_, -1);
  sc_.compute_end_of.assign(E_, -1.0);
  place();
  if (st_.predictor) st_.predictor->prepare(model_, calib_, source_.gate_weights());
  st_.prefetcher->set_predictor(
      st_.predictor ? clock_.wrap(st_.predictor.get(), &m_.decision_ns[kFamPredictor]) : nullptr);
  setup_gate_stream();
  // An expert beside a copy that completed before the expert was submitted
  // (the under-copy terms) needs the completed copies' times.
  link_.keep_history(cost_.under_copy_factor(true) != 1.0 || cost_.under_copy_factor(false) != 1.0);
}

SimulationResult Engine::run() {
  plan_steps();
  check_memory();
  prepare_run();
  double prefill_ns = 0, decode_ns = 0;
  begin_executor();
  // The real backend's headline times are the steps' measured wall clock;
  // the lanes' composition of the measured task durations is kept beside
  // them (composed_*): their difference is the composition error.
  const bool real = mode_.real_backend;
  const auto wall0 = Clock::now();
  for (int64_t s = 0; next_step(s, wall0); ++s) {
    pos_.step = s;
    throw_if_cancelled();
    exec_->begin_step(s);
    // A served run's machine may sit idle until the step's request arrives.
    const double t0 = std::max(gpu_lane().free_ns(), steps_[s].not_before_ns);
    link_.forget_before(t0);  // no task of this step starts earlier
    const double busy0[3] = {link_.busy_ns(), lanes_.gpu.busy_ns(), lanes_.cpu.busy_ns()};
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
      m_.decode_busy_ns[1] += lanes_.gpu.busy_ns() - busy0[1];
      m_.decode_busy_ns[2] += lanes_.cpu.busy_ns() - busy0[2];
      m_.tbt_ms.push_back(shown / 1e6);
      if (real) m_.composed_tbt_ms.push_back(dt / 1e6);
    }
    // A batch with no prompt still has a first token: its first decode step.
    if (first_token) {
      m_.ttft_ms.push_back(shown / 1e6);
      if (real) m_.composed_ttft_ms.push_back(dt / 1e6);
    }
    // The step's span: the real backend's on the wall clock (each served
    // request's times too), the simulated one's on the lanes' clock.
    const double w_start = std::chrono::duration<double, std::nano>(w0 - wall0).count();
    const std::pair<double, double> span =
        real ? std::pair{w_start, w_start + wall} : std::pair{t0, gpu_lane().free_ns()};
    if (opt_.return_steps) step_spans_.push_back(span);
    if (requests_.on()) requests_.step(sp, span.first, span.second);
  }
  m_.host_wall_ns = std::chrono::duration<double, std::nano>(Clock::now() - wall0).count();
  if (opt_.check_graph) log_.check();
  // Let queued transfers finish for the lane accounting.
  advance_link(kInf);
  m_.prefill_time_s = prefill_ns / 1e9;
  m_.decode_time_s = decode_ns / 1e9;
  m_.makespan_ns = std::max({lanes_.gpu.free_ns(), lanes_.cpu.free_ns(), link_.free_ns()});
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
  m_.busy_ns[1] = lanes_.gpu.busy_ns();
  m_.busy_ns[2] = lanes_.cpu.busy_ns();
  m_.busy_ns[3] = lanes_.d2h.busy_ns();
  m_.busy_ns[4] = lanes_.act.busy_ns();
  m_.cost_table_clamps = cost_.clamped_lookups();
  SimulationResult r;
  if (requests_.on()) r.warnings = requests_.finish(workload_.slo, &m_);
  r.metrics = std::move(m_);
  for (const std::string& n : exec_->notes()) r.warnings.push_back(n);
  if (run_.short_of_top_p() > 0) {
    r.warnings.push_back(
        fmt::format("a component asked for the top-{} router probabilities per token and layer, "
                    "the trace holds {}; it ran "
                    "with {}",
                    run_.short_of_top_p(), run_.top_p(), run_.top_p()));
  }
  if (opt_.return_steps) {
    r.steps = steps_;
    r.step_spans_ns = std::move(step_spans_);
  }
  if (opt_.timeline) {
    r.timeline = log_.take_timeline();
    r.measured = exec_->measured();
  }
  return r;
}

// Tells the executor the run's largest step, sequence count and position
// (the real one sizes its KV cache and scratch from them, before any step).
void Engine::begin_executor() {
  int64_t max_seqs = 1, max_pos = 1, max_tokens = 1;
  if (!sched_->plans_ahead()) {
    // Steps that follow the clock: the scheduler's limits bound them.
    int64_t prompts = 0, longest_prompt = 0;
    for (int64_t s = 0; s < run_.sequences(); ++s) {
      const SequenceInfo& q = run_.sequence(s);
      max_pos = std::max(max_pos, q.tokens());
      prompts += q.prompt_len;
      longest_prompt = std::max(longest_prompt, q.prompt_len);
    }
    max_seqs = std::max<int64_t>(1, std::min(workload_.batch_size, run_.sequences()));
    max_tokens =
        std::max({max_seqs, longest_prompt, std::min(prompts, workload_.max_batch_tokens)});
    exec_->begin_run(max_seqs, max_pos, max_tokens, opt_.timeline);
    return;
  }
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
  cur_.step.reset(sp.phase);
  for (int64_t i = from; i < to; ++i)
    cur_.step.add(sp.tokens[size_t(i)].first, sp.tokens[size_t(i)].second);
  if (needs_.gate_inputs) {
    const int64_t H = gate_stream_->h();
    if (gates) {
      // A micro-batch: its tokens' rows of the whole step's gate inputs.
      const auto& src = gates->gate_data();
      auto& g = cur_.step.gate_storage(H);
      g.resize(size_t(cur_.step.tokens()) * L_ * H);
      std::copy(src.begin() + from * L_ * H, src.begin() + to * L_ * H, g.begin());
    } else {
      cur_.step.defer_gate_inputs(gate_stream_.get(), H);
    }
  }
  const int64_t n = cur_.step.tokens();
  const auto first = sp.tokens.begin() + std::ptrdiff_t(from);
  const auto last_tok = sp.tokens.begin() + std::ptrdiff_t(to);
  // Attention's view: each token's sequence slot (a new slot where the
  // sequence changes) and position; the slots count the step's sequences.
  cur_.tokens.slot.clear();
  cur_.tokens.pos.clear();
  {
    int64_t last = -1;
    int32_t slot = -1;
    for (auto it = first; it != last_tok; ++it) {
      if (it->first != last) ++slot;
      last = it->first;
      cur_.tokens.slot.push_back(slot);
      cur_.tokens.pos.push_back(it->second);
    }
    cur_.tokens.sequences = slot + 1;
  }
  cur_.sequences = cur_.tokens.sequences;
  cur_.context = 0;
  // Whole prompts from their first token (every static and unchunked step),
  // or chunks and decode tokens together (chunked prefill).
  bool whole_prompts = sp.phase == Phase::kPrefill;
  for (auto it = first; it != last_tok && whole_prompts; ++it) {
    const bool starts = it == first || std::prev(it)->first != it->first;
    whole_prompts =
        it->second < run_.sequence(it->first).prompt_len && (!starts || it->second == 0);
  }
  if (whole_prompts) {
    // Causal attention: each prompt token attends to half the prompt on average.
    cur_.context = std::max<int64_t>(1, (n / std::max<int64_t>(1, cur_.sequences) + 1) / 2);
  } else if (sp.phase == Phase::kPrefill) {
    // A chunked step: each token attends to its position and those before,
    // on average over the step's tokens (docs/SERVING.md, "Chunked prefill").
    double sum = 0;
    for (auto it = first; it != last_tok; ++it) sum += double(it->second + 1);
    cur_.context = std::max<int64_t>(1, int64_t(std::ceil(sum / double(std::max<int64_t>(1, n)))));
  } else {
    for (auto it = first; it != last_tok; ++it)
      cur_.context = std::max(cur_.context, it->second + 1);
  }
  cur_.nonmoe_ns = cost_.layer_nonmoe_ns(n, cur_.sequences, cur_.context);
}

void Engine::run_step(int64_t s) {
  const StepPlan& sp = steps_[s];
  load_tokens(sp, 0, int64_t(sp.tokens.size()), nullptr);
  const int64_t n = cur_.step.tokens();
  step_start_ns_ = std::max(gpu_lane().free_ns(), sp.not_before_ns);
  cur_.layer_ready_ns = step_start_ns_;
  gates_.begin_step(L_);
  cur_.deferred_done_ns = -1;
  cur_.deferred_task = -1;
  cur_.ready_waits = Waits{};  // the step's first task waits for its lane only
  if (mode_.pipelined && sp.phase == Phase::kDecode) {
    run_decode_pipelined(sp);
  } else {
    const double nonmoe = cur_.nonmoe_ns;
    int32_t moe = 0;
    for (int64_t li = 0; li < model_.num_layers; ++li) {
      if ((li & 7) == 7) throw_if_cancelled();  // a long prefill step stops within a few layers
      if (li < model_.first_dense_layers) {
        const double a = submit(
            gpu_lane(), gpu_lane_id(), TaskKind::kAttention, cur_.layer_ready_ns,
            exec_->attention_ns(int32_t(li), cur_.tokens, nonmoe), -1, -1, cur_.ready_waits, n);
        const int64_t att = log_.last();
        attention_shape(att, cur_);
        attention_->store_kv(a, att, -1, n, *this);  // a KV cache in host memory
        cur_.layer_ready_ns = submit(gpu_lane(), gpu_lane_id(), TaskKind::kDenseFfn, a,
                                     exec_->dense_ffn_ns(int32_t(li), n, cost_.dense_ffn_ns(n)), -1,
                                     -1, after(att), n);
        cur_.ready_waits = after(log_.last());
        continue;
      }
      pos_.layer = moe;
      run_moe_layer(moe++);
    }
    // The last layer's deferred work (if any) is part of the step.
    Waits head = cur_.ready_waits;
    if (cur_.deferred_done_ns >= 0) {
      cur_.layer_ready_ns = std::max(cur_.layer_ready_ns, cur_.deferred_done_ns);
      head.task[3] = cur_.deferred_task;
    }
    submit(gpu_lane(), gpu_lane_id(), TaskKind::kLmHead, cur_.layer_ready_ns,
           exec_->lm_head_ns(n, cost_.lm_head_ns(n)), -1, -1, head, n);
  }
  const double end = gpu_lane().free_ns();
  advance_link(end);
  pos_.layer = L_;
  cur_.step.reveal(L_ - 1);
  Context ctx = context(L_ - 1, end);
  hook_ctx_ = ctx;
  dec_.prefetches.clear();
  dec_.swaps.clear();
  timed(kFamPrefetcher, [&] { st_.prefetcher->after_step(ctx, dec_.prefetches); });
  timed(kFamCache, [&] { st_.cache->after_step(ctx, dec_.swaps); });
  issue_prefetches(dec_.prefetches, end);
  issue_swaps(dec_.swaps, end, "after_step");
}

}  // namespace engine_impl

SimulationResult simulate(const ModelSpec& model, const HardwareProfile& hw,
                          const WorkloadSpec& workload, StrategyInstance& strategy,
                          const TraceSource& source, const CalibrationData* calibration,
                          const EngineOptions& opt) {
  engine_impl::Engine sim(model, hw, workload, strategy, source, calibration, opt);
  return sim.run();
}

}  // namespace moebench
