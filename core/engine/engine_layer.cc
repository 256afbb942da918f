// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// A MoE layer's stages in the engine: the gate, the strategy's decisions, the GPU side, the
// CPU side, what follows the layer (core/engine/engine_impl.h).
#include "core/engine/engine_impl.h"

namespace moebench {
namespace engine_impl {

void Engine::compute_active(int32_t l, std::vector<ActiveExpert>* out) {
  out->clear();
  auto& work = sc_.workload;
  auto& best = sc_.rank;
  auto& wsum = sc_.weight;
  auto& touched = sc_.touched;
  touched.clear();
  for (int64_t t = 0; t < cur_.step.tokens(); ++t) {
    const int32_t* ids = cur_.step.ids(t, l);
    // A hole (the trace lacks this token's routing at this layer): no
    // expert runs for it and no access is counted (RunMetrics::hole_rows).
    if (ids[0] == kHoleId) {
      ++m_.hole_rows[cur_.step.phase() == Phase::kDecode ? 1 : 0];
      continue;
    }
    const float* w = cur_.step.weights(t, l);
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
    sc_.tokens_of[a.expert] = a.tokens;  // workload of each expert in this layer
  gpu_side(l, r);
  // The copies issued at the gate and after the GPU experts go on the link
  // before the CPU experts are submitted, so that an expert computing beside
  // them sees them (the cpu-under-copy term); nothing of the CPU side is read
  // by what they decide.
  issue_layer_prefetches(l, r);
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
  r.n = cur_.step.tokens();
  if (clock_.sample_layer(opt_.decision_sample_every)) ++m_.decision_samples;
  ++m_.moe_layer_steps;
  double att;
  if (pipe_.running) {  // a pipelined decode step: the attention was issued ahead (AttentionPath)
    int64_t task = -1;
    r.t_gate = attention_->finish(l, r.n, *pipe_.running, &task, &att, *this);
    r.att_task = r.gpu_end_task = task;
  } else {
    att = exec_->attention_ns(int32_t(model_.first_dense_layers) + l, cur_.tokens, cur_.nonmoe_ns);
    r.t_gate = submit(gpu_lane(), gpu_lane_id(), TaskKind::kAttention, cur_.layer_ready_ns, att, l,
                      -1, cur_.ready_waits, r.n);
    r.att_task = r.gpu_end_task = log_.last();
    attention_shape(r.att_task, cur_);
    attention_->store_kv(r.t_gate, r.att_task, l, r.n, *this);  // a KV cache in host memory
  }
  gates_.cur[size_t(l)] = r.t_gate;
  if (r.decode) m_.bd_attention_ns += att;
  advance_link(r.t_gate);
  cur_.step.reveal(l);
  compute_active(l, &active_[l]);
  return r;
}

// 2. hits of the activated experts, and the prefetches that targeted this (step, layer) judged.
// (An admission rule that does not judge at the gate judges each access in
// its turn: AdmissionPort::judge.)
void Engine::count_hits(int32_t l, const LayerRun& r) {
  const auto& active = active_[l];
  if (judged_at_gate_) {
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
    } else if (target == pos_.step && !pipe_.last) {
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
    if (judged_at_gate_) {  // else each access is reported in its turn
      for (const auto& a : active) {
        st_.cache->on_access(l, a, ctx);
        if (res_.cached(l, a.expert)) st_.cache->on_hit(l, a.expert, ctx);
      }
    }
  });
  dec_.prefetches.clear();
  cur_.step.set_reader(&st_.prefetcher->name());
  timed(kFamPrefetcher, [&] { st_.prefetcher->after_gate(ctx, dec_.prefetches); });
  dec_.gate_prefetches = dec_.prefetches;
  r.predict = st_.prefetcher->predict_gpu_ns(ctx);

  dec_.deferred.clear();
  if (r.decode && l + 1 < L_) {
    cur_.step.set_reader(&st_.deferral->name());
    timed(kFamDeferral, [&] { st_.deferral->choose(ctx, dec_.deferred); });
  }
  std::fill(sc_.mark.begin(), sc_.mark.end(), 0);
  for (const auto& a : active) sc_.mark[a.expert] = 1;
  for (int32_t e : dec_.deferred) {
    if (e < 0 || e >= E_ || sc_.mark[e] != 1) {
      bad_decision(
          "deferral",
          fmt::format("deferred expert {} of layer {}, which is not activated (or twice)", e, l));
    }
    sc_.mark[e] = 2;
  }
  if (!dec_.deferred.empty()) {
    sc_.immediate.clear();
    for (const auto& a : active) {
      if (sc_.mark[a.expert] == 1) sc_.immediate.push_back(a);
    }
    ctx.active = sc_.immediate;
  }
  dec_.plan.clear();
  cur_.step.set_reader(&st_.assigner->name());
  timed(kFamAssigner, [&] { st_.assigner->plan(ctx, dec_.plan); });
  cur_.step.set_reader(nullptr);
}

// The plan against the layer's activated experts (sc_.mark: 1 activated, 2
// deferred, set by decide): every expert on exactly one side, loads only of
// uncached GPU experts, a GPU expert cached or loaded.
void Engine::validate_plan(int32_t l) {
  for (int32_t e : dec_.plan.gpu) {
    if (e < 0 || e >= E_ || sc_.mark[e] != 1) {
      bad_decision(
          "assigner",
          fmt::format("layer {}: GPU expert {} is not an activated, non-deferred expert or "
                      "is planned twice",
                      l, e));
    }
    sc_.mark[e] = 3;
  }
  for (int32_t e : dec_.plan.cpu) {
    if (e < 0 || e >= E_ || sc_.mark[e] != 1) {
      bad_decision(
          "assigner",
          fmt::format("layer {}: CPU expert {} is not an activated, non-deferred expert or "
                      "is planned twice",
                      l, e));
    }
    sc_.mark[e] = 4;
  }
  for (const auto& a : active_[l]) {
    if (sc_.mark[a.expert] == 1) {
      bad_decision("assigner",
                   fmt::format("layer {}: activated expert {} is neither on the GPU nor on the CPU",
                               l, a.expert));
    }
  }
  if (!dec_.plan.gpu.empty() && !hw_.has_gpu()) {
    throw Error(fmt::format(
        "strategy '{}': expected a hardware profile with a GPU (its assigner '{}' runs experts "
        "on the GPU), found '{}' with none",
        st_.name, st_.assigner->name(), hw_.name));
  }
  for (int32_t e : dec_.plan.load) {
    if (e < 0 || e >= E_ || sc_.mark[e] != 3) {
      bad_decision(
          "assigner",
          fmt::format("layer {}: loads expert {} which is not a GPU expert (or loads it twice)", l,
                      e));
    }
    if (res_.cached(l, e)) {
      bad_decision("assigner",
                   fmt::format("layer {}: loads expert {} which is already cached", l, e));
    }
    sc_.mark[e] = 5;
  }
  for (int32_t e : dec_.plan.gpu) {
    if (sc_.mark[e] == 3 && !res_.cached(l, e)) {
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
    sc_.pins.push_back(e);
  }
}

// An on-demand copy of GPU expert e of layer l (into the cache share when the
// strategy admits on demand and a victim is allowed, else into a staging
// buffer); returns whether it is staged.
bool Engine::demand_load(int32_t l, int32_t e, double t_gate) {
  bool staging = !st_.residency.admit_on_demand;
  SlotRef freed{-2, -2};
  if (!staging) {
    freed = make_room(l, e, t_gate, sc_.keep);
    if (freed.layer == -1) staging = true;
  }
  double earliest = t_gate;
  if (freed.layer == l && sc_.compute_end_of[freed.expert] >= 0) {
    earliest =
        std::max(earliest, sc_.compute_end_of[freed.expert]);  // its slot's last user must finish
  }
  if (staging && dec_.plan.staging_buffers > 0 &&
      int64_t(sc_.staging_ring.size()) >= dec_.plan.staging_buffers) {
    earliest = std::max(
        earliest, sc_.staging_ring[sc_.staging_ring.size() - size_t(dec_.plan.staging_buffers)]);
  }
  sc_.xfer_of[e] =
      load(l, e, TaskKind::kDemandLoad, t_gate, earliest, staging, pos_.step, l, freed.layer >= 0);
  return staging;
}

// GPU expert e of layer l, once its copy (if any) and the layer's barrier allow.
void Engine::run_gpu_expert(int32_t l, int32_t e, bool staged, LayerRun& r) {
  double ready = r.barrier;
  Waits w =
      after(r.att_task);  // the barrier: the gate, then the copies behind it (barrier_copies_end)
  w.copies_end = r.barrier_copies_end;
  int64_t xid = sc_.xfer_of[e];
  if (xid < 0 && res_.in_flight(l, e)) xid = res_.transfer(l, e);
  if (xid >= 0) {
    link_.fix(xid);
    ready = std::max(ready, link_.get(xid).end_ns);
    w.copies_end = std::max(w.copies_end, link_.get(xid).end_ns);
    w.copy = xid;
  }
  const double free = gpu_lane().free_ns();
  if (ready > free) r.wait += ready - std::max(free, r.t_gate);
  const double dur = cost_.gpu_expert_ns(sc_.tokens_of[e]);
  double start = 0;
  r.gpu_end = submit(gpu_lane(), gpu_lane_id(), TaskKind::kGpuExpert, ready, dur, l, e, w,
                     sc_.tokens_of[e], &start);
  r.gpu_end_task = log_.last();
  r.last_expert = {r.gpu_end_task, e, start, dur, staged};
  sc_.compute_end_of[e] = r.gpu_end;
  sc_.computed.push_back(e);
  if (staged) sc_.staging_ring.push_back(r.gpu_end);
  r.gpu_compute += dur;
  m_.gpu_expert_tokens += sc_.tokens_of[e];
}

// In a walk, the GPU expert before computes beside the load issued for the
// next one: the gpu-under-copy term, which saw the copies queued when that
// expert was submitted, looks again at its window at the link's present
// times, while it is still the last task submitted (nothing has waited for
// it). A load that waits for its end (its slot) does not overlap it.
void Engine::see_later_copies(LayerRun& r) {
  const double f = cost_.under_copy_factor(false);
  const LayerRun::LastExpert& x = r.last_expert;
  if (f == 1.0 || x.task < 0 || x.task != log_.last() || gpu_lane().free_ns() != r.gpu_end) return;
  const double seen = x.base + (f - 1.0) * link_.copying_ns(x.start, x.start + x.base);
  const double extra = x.start + seen - r.gpu_end;
  if (!(extra > 0)) return;
  gpu_lane().extend_last(extra);
  log_.extend_last(x.task, extra);
  m_.task_ns[size_t(TaskKind::kGpuExpert)] += extra;
  r.gpu_end += extra;
  sc_.compute_end_of[x.expert] = r.gpu_end;
  if (x.staged) sc_.staging_ring.back() = r.gpu_end;
}

// 4. GPU side: the predictor's and shared experts' GPU time, the on-demand
// copies and the GPU experts, in the order the residency rules give.
void Engine::gpu_side(int32_t l, LayerRun& r) {
  const auto& active = active_[l];
  r.gpu_end = r.t_gate;
  if (r.predict > 0) {
    r.gpu_end = submit(gpu_lane(), gpu_lane_id(), TaskKind::kPredict, r.t_gate, r.predict, l, -1,
                       after(r.att_task));
    r.gpu_end_task = log_.last();
    if (r.decode) m_.bd_predict_ns += r.predict;
  }
  const double shared = exec_->shared_experts_ns(cost_, l, r.n);
  if (shared > 0) {
    r.gpu_end = submit(gpu_lane(), gpu_lane_id(), TaskKind::kSharedExperts, r.t_gate, shared, l, -1,
                       after(r.att_task), r.n);
    r.gpu_end_task = log_.last();
    if (r.decode) m_.bd_shared_ns += shared;
  }
  sc_.pins.clear();
  sc_.staging_ring.clear();
  // SMoE: the GPU experts wait for every copy into this layer's slots that
  // was in flight at the gate.
  r.barrier = r.t_gate;
  if (dec_.plan.wait_layer_transfers && !dec_.plan.gpu.empty()) {
    for (int32_t e : res_.holders(l)) {
      if (!res_.in_flight(l, e)) continue;
      const int64_t xid = res_.transfer(l, e);
      link_.fix(xid);
      r.barrier = std::max(r.barrier, link_.get(xid).end_ns);
      r.barrier_copies_end = std::max(r.barrier_copies_end, link_.get(xid).end_ns);
    }
  }
  // The loads and GPU experts, in the order the admission rule gives
  // (core/engine/variants/admission.h), through this engine's AdmissionPort.
  sc_.computed.clear();
  admitting_ = {l, &r};
  admission_->run(*this);
  admitting_ = {};
  // Until this layer's hooks are done, its GPU experts keep their slots
  // (loaded ones too).
  sc_.computed.clear();
  for (int32_t e : dec_.plan.gpu) pin_for_layer(l, e);
  if (r.decode) {
    m_.bd_gpu_compute_ns += r.gpu_compute;
    m_.bd_wait_cache_ns += r.wait;
  } else {
    m_.pbd_gpu_compute_ns += r.gpu_compute;
    m_.pbd_wait_pcie_ns += r.wait;
    m_.prefill_expert_pairs += int64_t(active.size());
    m_.prefill_gpu_expert_pairs += int64_t(dec_.plan.gpu.size());
  }
  for (int32_t e : dec_.plan.gpu) {
    sc_.xfer_of[e] = -1;
    sc_.compute_end_of[e] = -1;
  }
}

// 5. CPU side: the activations to the CPU, the immediate experts and their
// outputs back, then the deferred ones (their outputs join the next layer).
void Engine::cpu_side(int32_t l, LayerRun& r) {
  double imm_done = -1, def_done = -1;
  int64_t imm_task = -1, def_task = -1, last_cpu = -1;
  const int64_t n = r.n;
  if (!dec_.plan.cpu.empty() || !dec_.deferred.empty()) {
    const double to_cpu = cost_.d2h_activations_ns(n);
    double ready = submit(lanes_.d2h, Lane::kD2H, TaskKind::kActToCpu, r.t_gate, to_cpu, l, -1,
                          after(r.att_task));
    const Waits cpu_waits = after(log_.last(), dec_.plan.serialize ? r.gpu_end_task : -1);
    m_.d2h_bytes += hw_.has_gpu() ? cost_.activation_bytes(n) : 0;
    if (dec_.plan.serialize) ready = std::max(ready, r.gpu_end);
    bool first = true;
    double cpu_end = ready;
    for (int32_t e : dec_.plan.cpu) {
      cpu_end = submit(lanes_.cpu, Lane::kCpu, TaskKind::kCpuExpert, ready,
                       exec_->cpu_expert_ns(cost_, l, e, sc_.tokens_of[e], first), l, e, cpu_waits,
                       sc_.tokens_of[e]);
      first = false;
      m_.cpu_expert_tokens += sc_.tokens_of[e];
    }
    if (!dec_.plan.cpu.empty()) {
      imm_done = submit(lanes_.act, Lane::kActH2D, TaskKind::kActToGpu, cpu_end,
                        cost_.h2d_activations_ns(n), l, -1, after(log_.last()));
      imm_task = log_.last();
      m_.act_h2d_bytes += hw_.has_gpu() ? cost_.activation_bytes(n) : 0;
    }
    for (int32_t e : dec_.deferred) {
      cpu_end = submit(lanes_.cpu, Lane::kCpu, TaskKind::kDeferredExpert, ready,
                       exec_->cpu_expert_ns(cost_, l, e, sc_.tokens_of[e], first), l, e, cpu_waits,
                       sc_.tokens_of[e]);
      last_cpu = log_.last();
      first = false;
      m_.cpu_expert_tokens += sc_.tokens_of[e];
      m_.deferred_expert_tokens += sc_.tokens_of[e];
    }
    if (!dec_.deferred.empty()) {
      def_done = submit(lanes_.act, Lane::kActH2D, TaskKind::kActToGpu, cpu_end,
                        cost_.h2d_activations_ns(n), l, -1, after(last_cpu));
      def_task = log_.last();
      m_.act_h2d_bytes += hw_.has_gpu() ? cost_.activation_bytes(n) : 0;
    }
  }
  r.done = r.gpu_end;
  if (imm_done >= 0) r.done = std::max(r.done, imm_done);
  if (cur_.deferred_done_ns >= 0)
    r.done = std::max(r.done, cur_.deferred_done_ns);  // previous layer's deferred outputs
  if (imm_done > r.gpu_end) {
    (r.decode ? m_.bd_cpu_other_ns : m_.pbd_wait_cpu_ns) +=
        imm_done - std::max(r.gpu_end, r.t_gate);
  }
  // What the next layer waits for: this layer's GPU side, its CPU outputs
  // back, the previous layer's deferred outputs.
  cur_.ready_waits = after(r.gpu_end_task, imm_done >= 0 ? imm_task : -1,
                           cur_.deferred_done_ns >= 0 ? cur_.deferred_task : -1);
  cur_.deferred_done_ns = def_done;
  cur_.deferred_task = def_task;
  cur_.layer_ready_ns = r.done;
}

// 5a. prefetches queued at the gate, then after the GPU experts (whose hook
// sees the CPU lane as it stood before this layer's CPU experts); the
// prefetch buffer's used experts leave.
void Engine::issue_layer_prefetches(int32_t l, const LayerRun& r) {
  issue_prefetches(dec_.gate_prefetches, r.t_gate);
  // The layer's GPU experts have finished by gpu_end: later requests (issued
  // at gpu_end or after) may take their slots.
  for (int32_t e : sc_.pins) res_.unpin(l, e);
  sc_.pins.clear();
  if (res_.buffer_slots() > 0 && pipe_.last) release_prefetch_buffer(l, r.gpu_end);
  recopy_computed(l, r.gpu_end);
  dec_.prefetches.clear();
  Context after = context(l, r.gpu_end);
  cur_.step.set_reader(&st_.prefetcher->name());
  timed(kFamPrefetcher, [&] { st_.prefetcher->after_gpu_experts(after, dec_.prefetches); });
  cur_.step.set_reader(nullptr);
  issue_prefetches(dec_.prefetches, r.gpu_end);
}

// 6. window swaps when the layer is done; an unread buffer's copies.
void Engine::after_layer(int32_t l, const LayerRun& r) {
  dec_.swaps.clear();
  Context end_ctx = context(l, r.done);
  end_ctx.plan = &dec_.plan;
  timed(kFamCache, [&] { st_.cache->after_layer(end_ctx, dec_.swaps); });
  issue_swaps(dec_.swaps, r.done, "after_layer", l);
  // A buffer nothing reads (LayerPlan::unread_buffer_layer): every expert of
  // that layer is copied when this layer is done; link time and bytes only.
  if (dec_.plan.unread_buffer_layer >= 0 && hw_.has_gpu()) {
    if (dec_.plan.unread_buffer_layer >= L_) {
      bad_decision("assigner",
                   fmt::format("unread buffer of layer {} (the model has {} MoE layers)",
                               dec_.plan.unread_buffer_layer, L_));
    }
    for (int32_t e = 0; e < E_; ++e) {
      load(dec_.plan.unread_buffer_layer, e, TaskKind::kBufferCopy, r.done, r.done, true, pos_.step,
           dec_.plan.unread_buffer_layer);
    }
  }
}

// -------- what an admission rule may ask (AdmissionPort), about the layer
// whose GPU side runs (admitting_)

bool Engine::load_on_demand(int32_t e) {
  return demand_load(admitting_.layer, e, admitting_.run->t_gate);
}

void Engine::see_later_copies() {
  see_later_copies(*admitting_.run);
}

void Engine::compute(int32_t e, bool staged) {
  run_gpu_expert(admitting_.layer, e, staged, *admitting_.run);
}

void Engine::judge(int32_t e) {
  const int32_t l = admitting_.layer;
  const ActiveExpert* it = activated(l, e);
  const bool hit = res_.resident(l, e);
  record_access(l, *admitting_.run, it->tokens, hit);
  timed(kFamCache, [&] {
    st_.cache->on_access(l, *it, hook_ctx_);
    if (res_.cached(l, e)) st_.cache->on_hit(l, e, hook_ctx_);
  });
}

void Engine::admitting(std::span<const int32_t> order) {
  pos_.pending_rank.assign(size_t(E_), -1);
  for (size_t i = 0; i < order.size(); ++i) pos_.pending_rank[size_t(order[i])] = int32_t(i);
  pos_.admitting_layer = admitting_.layer;
}

}  // namespace engine_impl
}  // namespace moebench
