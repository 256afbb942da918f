// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// AttentionPath: where a step's attention runs and the KV cache lives
// (residency.attention), one class per place, each in its own file, made by
// name (make_attention_path): "gpu" (attention_gpu.cc: on the GPU over a KV
// cache in GPU memory), "cpu" (attention_cpu.cc: MoE-Lightning's CPU
// attention over a host KV cache) and "gpu-host-kv" (attention_host_kv.cc:
// FlexGen's GPU attention over a host KV cache). A path only issues tasks
// through the engine's AttentionPort; the engine keeps the lanes, the link
// and the counters. A KV cache in host memory makes every decode step
// pipelined (the engine's run_decode_pipelined), where the path issues each
// micro-batch's attention ahead of its experts.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/batch_state.h"
#include "core/engine/cost_model.h"
#include "core/engine/executor.h"
#include "core/engine/lanes.h"
#include "core/engine/metrics.h"

namespace moebench {

// What an attention path may ask of the engine.
class AttentionPort {
 public:
  virtual ~AttentionPort() = default;
  // A task on `lane` (Lane::kGpu: the GPU's lane, the CPU's on a machine
  // without one) that may start at `ready` and waits for `w`; returns its
  // end, its id is last_task() afterwards. `layer`: the MoE layer (-1 none).
  virtual double task(Lane lane, TaskKind kind, double ready, double dur, int32_t layer,
                      const Waits& w, int64_t tokens = -1) = 0;
  virtual int64_t last_task() const = 0;
  // The timeline notes that task `task` is b's attention run whole on the
  // GPU (its sequences and context; what a replay runs for real).
  virtual void attention_shape(int64_t task, const BatchState& b) = 0;
  // Batch b's KV entries of MoE layer `layer` copied host to device on the
  // link (placed as a demand copy and fixed at once); when they land.
  virtual double kv_to_gpu(int32_t layer, const BatchState& b) = 0;
  virtual const CostModel& cost() const = 0;
  virtual Executor& executor() = 0;
  virtual RunMetrics& metrics() = 0;
};

class AttentionPath {
 public:
  virtual ~AttentionPath() = default;
  virtual std::string name() const = 0;
  // Whether the KV cache lives in host memory (every decode step pipelined).
  virtual bool kv_on_host() const { return false; }
  // The KV cache's bytes in GPU memory for `batch` sequences of at most
  // `max_tokens` tokens run as `micro_batches` micro-batches; `kv_bytes` is
  // one layer's entries of one token and `layers` the model's blocks.
  // Default: every layer's entries of the whole batch on the GPU.
  virtual double gpu_kv_bytes(int64_t batch, int64_t /*micro_batches*/, int64_t max_tokens,
                              int64_t layers, int64_t kv_bytes) const {
    return double(batch) * double(max_tokens) * double(layers) * double(kv_bytes);
  }
  // A layer's attention over `n` new tokens ended at `att_end` (task
  // `att_task`): a KV cache in host memory receives their entries.
  virtual void store_kv(double /*att_end*/, int64_t /*att_task*/, int32_t /*layer*/, int64_t /*n*/,
                        AttentionPort& /*port*/) const {}
  // A pipelined decode step: issues micro-batch b's attention of block `li`
  // (`l` its MoE layer, -1 for a dense layer) as far as it runs ahead of its
  // experts, recording it in b (att_end, att_task, att_gpu_ns).
  virtual void issue(int32_t li, int32_t l, MicroBatch& b, AttentionPort& port) const = 0;
  // The rest of b's issued attention of layer `l` over `tokens` tokens:
  // returns when the router's output is known, its last task in *task and
  // the attention's GPU time in *gpu_ns.
  virtual double finish(int32_t /*l*/, int64_t /*tokens*/, const MicroBatch& b, int64_t* task,
                        double* gpu_ns, AttentionPort& /*port*/) const {
    *task = b.att_task;
    *gpu_ns = b.att_gpu_ns;
    return b.att_end;
  }
};

std::vector<std::string> attention_path_names();
// The path named `name` (residency.attention); throws moebench::Error for another.
std::unique_ptr<AttentionPath> make_attention_path(const std::string& name);

// Each path's file.
std::unique_ptr<AttentionPath> gpu_attention_path();
std::unique_ptr<AttentionPath> cpu_attention_path();
std::unique_ptr<AttentionPath> host_kv_attention_path();

}  // namespace moebench
