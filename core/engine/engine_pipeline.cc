// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The engine's pipelined decode: micro-batches through each layer in turn, attention on the
// host or with a host KV cache (residency.attention, micro_batches; core/engine/engine_impl.h).
#include "core/engine/engine_impl.h"

namespace moebench {
namespace engine_impl {

// A KV cache in host memory (core/engine/variants/attention_host_kv.cc): a
// batch's KV entries of this layer copied host to device on the link, placed
// as a demand copy (it passes queued copies that have not started, the
// attention waiting for it) and fixed at once. Issued when the batch's
// previous layer is done (the read buffer is free once the layer before has
// attended). Not an expert: the residency is not touched. Returns when the
// copy lands.
double Engine::kv_to_gpu(int32_t l, const BatchState& b) {
  Transfer t;
  t.layer = l;
  t.kind = TaskKind::kKvToGpu;
  t.issue_ns = b.layer_ready_ns;
  t.earliest_ns = b.layer_ready_ns;
  t.duration_ns = cost_.kv_h2d_ns(b.sequences, b.context);
  t.bytes = cost_.kv_bytes(b.sequences, b.context);
  t.staging = true;
  t.step = pos_.step;
  const int64_t id = link_.issue(t);
  link_.fix(id);
  m_.kv_h2d_bytes += t.bytes;
  return link_.get(id).end_ns;
}

double Engine::task(Lane lane, TaskKind kind, double ready, double dur, int32_t layer,
                    const Waits& w, int64_t tokens) {
  switch (lane) {
    case Lane::kGpu:
      return submit(gpu_lane(), gpu_lane_id(), kind, ready, dur, layer, -1, w, tokens);
    case Lane::kCpu:
      return submit(lanes_.cpu, Lane::kCpu, kind, ready, dur, layer, -1, w, tokens);
    case Lane::kD2H:
      return submit(lanes_.d2h, Lane::kD2H, kind, ready, dur, layer, -1, w, tokens);
    case Lane::kActH2D:
      return submit(lanes_.act, Lane::kActH2D, kind, ready, dur, layer, -1, w, tokens);
    case Lane::kH2D:
      break;
  }
  throw InternalError(
      "an attention path submitted a task to the link (copies go through kv_to_gpu)");
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
  // The full step's state stays in the engine's batch (cur_) for the
  // after-step hooks; each micro-batch is loaded into it and swapped out.
  pipe_.batches.clear();
  for (int64_t j = 0; j < m; ++j) {
    pipe_.batches.emplace_back(run_);
    MicroBatch& b = pipe_.batches.back();
    swap_micro_batch(b);  // cur_ <- b's (empty) state, b <- the full step's
    load_tokens(sp, j * n / m, (j + 1) * n / m, &b.step);
    cur_.layer_ready_ns = step_start_ns_;
    cur_.ready_waits = Waits{};
    cur_.deferred_done_ns = -1;
    cur_.deferred_task = -1;
    swap_micro_batch(b);  // b <- the micro-batch, cur_ <- the full step
  }
  int32_t moe = 0;
  for (int64_t li = 0; li < model_.num_layers; ++li) {
    if ((li & 7) == 7) throw_if_cancelled();
    if (li < model_.first_dense_layers) {
      for (auto& b : pipe_.batches) {
        attention_->issue(int32_t(li), -1, b, *this);
        int64_t task = -1;
        double gpu_ns = 0;
        const int64_t nb = b.step.tokens();
        const double a = attention_->finish(-1, nb, b, &task, &gpu_ns, *this);
        b.layer_ready_ns = submit(gpu_lane(), gpu_lane_id(), TaskKind::kDenseFfn, a,
                                  exec_->dense_ffn_ns(int32_t(li), nb, cost_.dense_ffn_ns(nb)), -1,
                                  -1, after(task), nb);
        b.ready_waits = after(log_.last());
      }
      continue;
    }
    const int32_t l = moe++;
    pos_.layer = l;
    const bool ahead = mode_.attention_ahead;
    attention_->issue(int32_t(li), l, pipe_.batches[0], *this);
    for (int64_t j = 0; j < m; ++j) {
      if (j > 0 && !ahead) attention_->issue(int32_t(li), l, pipe_.batches[size_t(j)], *this);
      if (j + 1 < m && ahead)
        attention_->issue(int32_t(li), l, pipe_.batches[size_t(j + 1)], *this);
      MicroBatch& b = pipe_.batches[size_t(j)];
      swap_micro_batch(b);
      pipe_.running = &b;
      pipe_.last = j + 1 == m;
      run_moe_layer(l);
      pipe_.running = nullptr;
      pipe_.last = true;
      swap_micro_batch(b);
    }
  }
  // The after-step hooks see the whole step: every layer's activated experts
  // over all micro-batches (each micro-batch's layer run left its own).
  cur_.step.reveal(L_ - 1);
  const int64_t holes[2] = {m_.hole_rows[0], m_.hole_rows[1]};  // counted by the micro-batches
  for (int32_t l = 0; l < L_; ++l) compute_active(l, &active_[size_t(l)]);
  m_.hole_rows[0] = holes[0];
  m_.hole_rows[1] = holes[1];
  // Each micro-batch's lm head after its last layer (and its deferred work).
  for (auto& b : pipe_.batches) {
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

}  // namespace engine_impl
}  // namespace moebench
