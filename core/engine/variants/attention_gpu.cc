// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// residency.attention = "gpu": attention on the GPU over a KV cache in GPU
// memory. Pipelined only with micro_batches > 1: each micro-batch's attention
// is one GPU task (the executor's time for its tokens).
#include "core/engine/variants/attention_path.h"

namespace moebench {

namespace {

class GpuAttention final : public AttentionPath {
 public:
  std::string name() const override { return "gpu"; }
  void issue(int32_t li, int32_t l, MicroBatch& b, AttentionPort& port) const override {
    b.att_gpu_ns = port.executor().attention_ns(li, b.tokens, b.nonmoe_ns);
    b.att_end = port.task(Lane::kGpu, TaskKind::kAttention, b.layer_ready_ns, b.att_gpu_ns, l,
                          b.ready_waits, b.step.tokens());
    b.att_task = port.last_task();
    port.attention_shape(b.att_task, b);
  }
};

}  // namespace

std::unique_ptr<AttentionPath> gpu_attention_path() {
  return std::make_unique<GpuAttention>();
}

}  // namespace moebench
