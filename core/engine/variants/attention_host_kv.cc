// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// residency.attention = "gpu-host-kv" (FlexGen without CPU delegation):
// attention on the GPU over a KV cache in host memory. A micro-batch's KV
// entries of the layer are copied to the GPU first (on the link, issued when
// its previous layer is done: FlexGen loads the next GPU batch's cache while
// this one computes), and the new entries go back to the host after its
// attention, waited for by nothing. A prefill's new entries go to the host
// too.
#include <algorithm>

#include "core/engine/variants/attention_path.h"

namespace moebench {

namespace {

class HostKvAttention final : public AttentionPath {
 public:
  std::string name() const override { return "gpu-host-kv"; }
  bool kv_on_host() const override { return true; }
  // Two layers' entries of one micro-batch on the GPU: the one attending
  // and the next one arriving.
  double gpu_kv_bytes(int64_t batch, int64_t micro_batches, int64_t max_tokens, int64_t /*layers*/,
                      int64_t kv_bytes) const override {
    return 2.0 * double((batch + micro_batches - 1) / micro_batches) * double(max_tokens) *
           double(kv_bytes);
  }
  void store_kv(double att_end, int64_t att_task, int32_t layer, int64_t n,
                AttentionPort& port) const override {
    Waits w;
    w.task[0] = att_task;
    port.task(Lane::kD2H, TaskKind::kActToCpu, att_end, port.cost().kv_d2h_ns(n), layer, w);
    port.metrics().d2h_bytes += n * port.cost().model().kv_bytes_per_token();
  }
  void issue(int32_t li, int32_t l, MicroBatch& b, AttentionPort& port) const override {
    const int64_t n = b.step.tokens();
    double ready = b.layer_ready_ns;
    Waits w = b.ready_waits;
    const double kv_end = port.kv_to_gpu(l, b);
    ready = std::max(ready, kv_end);
    w.copies_end = std::max(w.copies_end, kv_end);
    b.att_gpu_ns = port.executor().attention_ns(li, b.tokens, b.nonmoe_ns);
    b.att_end = port.task(Lane::kGpu, TaskKind::kAttention, ready, b.att_gpu_ns, l, w, n);
    b.att_task = port.last_task();
    port.attention_shape(b.att_task, b);
    store_kv(b.att_end, b.att_task, l, n, port);
  }
};

}  // namespace

std::unique_ptr<AttentionPath> host_kv_attention_path() {
  return std::make_unique<HostKvAttention>();
}

}  // namespace moebench
