// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// residency.attention = "cpu" (MoE-Lightning's CGOPipe): a decode step's
// attention on the CPU over a KV cache in host memory. Per micro-batch and
// layer: the QKV projections on the GPU, Q/K/V to the host, the CPU's
// attention, its output back; the output projection and router then run on
// the GPU (finish). A prefill's attention stays on the GPU and its new KV
// entries go to the host.
#include "core/engine/variants/attention_path.h"

namespace moebench {

namespace {

Waits after_task(int64_t id) {
  Waits w;
  w.task[0] = id;
  return w;
}

class CpuAttention final : public AttentionPath {
 public:
  std::string name() const override { return "cpu"; }
  bool kv_on_host() const override { return true; }
  // The KV cache lives in host memory: none on the GPU.
  double gpu_kv_bytes(int64_t, int64_t, int64_t, int64_t, int64_t) const override { return 0.0; }
  void store_kv(double att_end, int64_t att_task, int32_t layer, int64_t n,
                AttentionPort& port) const override {
    port.task(Lane::kD2H, TaskKind::kActToCpu, att_end, port.cost().kv_d2h_ns(n), layer,
              after_task(att_task));
    port.metrics().d2h_bytes += n * port.cost().model().kv_bytes_per_token();
  }
  void issue(int32_t /*li*/, int32_t l, MicroBatch& b, AttentionPort& port) const override {
    const CostModel& cost = port.cost();
    RunMetrics& m = port.metrics();
    const int64_t n = b.step.tokens();
    b.att_gpu_ns = cost.attention_pre_ns(n);
    const double pre = port.task(Lane::kGpu, TaskKind::kAttention, b.layer_ready_ns, b.att_gpu_ns,
                                 l, b.ready_waits, n);
    const double qkv = port.task(Lane::kD2H, TaskKind::kActToCpu, pre, cost.qkv_d2h_ns(n), l,
                                 after_task(port.last_task()), n);
    m.d2h_bytes += cost.qkv_bytes(n);
    const double cpu = port.task(Lane::kCpu, TaskKind::kAttention, qkv,
                                 cost.cpu_attention_ns(n, b.sequences, b.context), l,
                                 after_task(port.last_task()), n);
    b.att_end = port.task(Lane::kActH2D, TaskKind::kActToGpu, cpu, cost.h2d_activations_ns(n), l,
                          after_task(port.last_task()), n);
    m.act_h2d_bytes += cost.activation_bytes(n);
    b.att_task = port.last_task();
  }
  // The GPU's output projection and router after the output's return.
  double finish(int32_t l, int64_t tokens, const MicroBatch& b, int64_t* task, double* gpu_ns,
                AttentionPort& port) const override {
    const double post = port.cost().attention_post_ns(tokens);
    const double end = port.task(Lane::kGpu, TaskKind::kAttention, b.att_end, post, l,
                                 after_task(b.att_task), tokens);
    *task = port.last_task();
    *gpu_ns = b.att_gpu_ns + post;
    return end;
  }
};

}  // namespace

std::unique_ptr<AttentionPath> cpu_attention_path() {
  return std::make_unique<CpuAttention>();
}

}  // namespace moebench
