// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The engine's pipelined decode: micro-batches through each layer in turn, attention on the
// host or with a host KV cache (residency.attention, micro_batches; core/engine/engine_impl.h).
#include "core/engine/engine_impl.h"

namespace moebench {
namespace engine_impl {

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
  if (!mode_.cpu_attention) {
    double ready = b.layer_ready_ns;
    Waits w = b.ready_waits;
    if (mode_.host_kv_gpu) {  // the micro-batch's KV entries of this layer to the GPU first
      const double kv_end = copy_kv_to_gpu(l, b);
      ready = std::max(ready, kv_end);
      w.copies_end = std::max(w.copies_end, kv_end);
    }
    b.att_gpu_ns = exec_->attention_ns(li, b.tokens, b.nonmoe_ns);
    b.att_end =
        submit(gpu_lane(), gpu_lane_id(), TaskKind::kAttention, ready, b.att_gpu_ns, l, -1, w, n);
    b.att_task = log_.last();
    b.post_pending = false;
    if (mode_.host_kv_gpu) {  // the new entries back to the host, waited for by nothing
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
                            after(log_.last()), n);
  m_.d2h_bytes += cost_.qkv_bytes(n);
  const double cpu =
      submit(cpu_, Lane::kCpu, TaskKind::kAttention, qkv,
             cost_.cpu_attention_ns(n, b.sequences, b.context), l, -1, after(log_.last()), n);
  b.att_end = submit(act_, Lane::kActH2D, TaskKind::kActToGpu, cpu, cost_.h2d_activations_ns(n), l,
                     -1, after(log_.last()), n);
  m_.act_h2d_bytes += cost_.activation_bytes(n);
  b.att_task = log_.last();
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
  const int64_t id = link_.issue(t);
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
    *task = log_.last();
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
        b.ready_waits = after(log_.last());
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

}  // namespace engine_impl
}  // namespace moebench
