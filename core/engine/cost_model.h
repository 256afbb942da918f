// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The simulated backend's cost model: how long each task takes on the
// hardware profile's lanes, in nanoseconds.
//
// Roofline formulas, each a documented function of the ModelSpec and
// HardwareProfile (docs/COST_MODEL.md):
//   cpu expert   = task_overhead + max(bytes / cpu_bw, flops / (cpu_peak(dtype) * eff))
//                  (+ first_task_warmup for a layer's first CPU expert)
//   gpu expert   = launch + max(bytes / hbm_bw, flops / (gpu_peak(dtype) * eff))
//   h2d expert   = link_latency + bytes / h2d_bw
//   gpu layer    = layer_kernels * launch + max(weight+KV bytes / hbm_bw, flops / (peak * eff))
// where bytes are the expert's bytes in its storage format (scales included)
// and flops count the tokens routed to it. A measured table (hardware
// [[table]]) for a lane replaces the formula: linear interpolation in
// tokens inside the table, the nearest end point outside it (counted in
// clamped_lookups(), never extrapolated silently).
//
// On a machine without a GPU the non-MoE work runs on the CPU (same
// roofline with the CPU's numbers, or the cpu-attention, cpu-dense-ffn and
// cpu-lm-head tables where the profile has them: measured with one
// sequence whose tokens start at position 0, so the KV cache read that
// grows with a long context is not in them).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/hardware_profile.h"
#include "core/config/model_spec.h"

namespace moebench {

class CostModel {
 public:
  CostModel(const ModelSpec& model, const HardwareProfile& hw);
  // The cost model keeps references to `model` and `hw`: a temporary would
  // dangle (ASan found a temporary profile in a test), so binding one does
  // not compile.
  CostModel(const ModelSpec& model, HardwareProfile&& hw) = delete;
  CostModel(ModelSpec&& model, const HardwareProfile& hw) = delete;
  CostModel(ModelSpec&& model, HardwareProfile&& hw) = delete;

  // Routed expert with `tokens` routed to it (tokens >= 1).
  double cpu_expert_ns(int64_t tokens, bool first_in_layer) const;
  double gpu_expert_ns(int64_t tokens) const;
  double h2d_expert_ns() const;
  // A copy of `ratio` of an expert's bytes (a reduced-precision copy,
  // residency.reduced_copy_ratio): the link latency plus `ratio` of the full
  // copy's time beyond it (a measured "h2d" table's time included).
  double h2d_expert_ns(double ratio) const;
  // All shared experts of a layer for `tokens` tokens (0 when the model has
  // none); on a machine without a GPU a "cpu-shared" table replaces the formula.
  double gpu_shared_ns(int64_t tokens) const;
  // Attention, norms and router of one layer: `tokens` new tokens, in
  // `sequences` sequences, each new token attending to `context` tokens (a
  // prefill passes the mean, half its prompt) whose KV entries are read.
  double layer_nonmoe_ns(int64_t tokens, int64_t sequences, int64_t context) const;
  // Attention on the CPU over a KV cache in host memory (residency.attention
  // = "cpu", docs/COST_MODEL.md "Attention on the CPU"), in four parts: on
  // the GPU, the norms and QKV projections of `tokens` new tokens (with the
  // layer's fixed overhead and half its kernel launches) and the output
  // projection and router (the other half); their Q, K and V to the host;
  // the attention itself on the CPU, reading each sequence's `context` KV
  // entries from host memory. The output's way back is
  // h2d_activations_ns. The GPU parts plus the CPU part equal
  // layer_nonmoe_ns's work split in two (the same bytes and flops).
  double attention_pre_ns(int64_t tokens) const;
  double attention_post_ns(int64_t tokens) const;
  double cpu_attention_ns(int64_t tokens, int64_t sequences, int64_t context) const;
  double qkv_d2h_ns(int64_t tokens) const;
  int64_t qkv_bytes(int64_t tokens) const;
  // A prefill's new KV entries of one layer copied to the host.
  double kv_d2h_ns(int64_t tokens) const;
  // One layer's KV entries of `sequences` sequences at `context` tokens
  // copied host to device for the attention on the GPU (residency.attention
  // = "gpu-host-kv"): link latency + bytes / H2D bandwidth; and the bytes.
  double kv_h2d_ns(int64_t sequences, int64_t context) const;
  int64_t kv_bytes(int64_t sequences, int64_t context) const;
  // One expert's copy from device to host memory (an evicted expert written
  // back: residency.writeback): link latency + expert bytes / D2H bandwidth.
  double d2h_expert_ns() const;
  // The FFN of a dense (non-MoE) layer.
  double dense_ffn_ns(int64_t tokens) const;
  // A small bf16 matrix [out x in] applied to `tokens` vectors on the GPU
  // (one kernel launch): the cost of a predictor's linear layer or of extra
  // router evaluations.
  double gpu_matmul_ns(int64_t in, int64_t out, int64_t tokens) const;
  // The lm head and sampling for `tokens` tokens.
  double lm_head_ns(int64_t tokens) const;
  // Hidden states of `tokens` tokens crossing the link (to the CPU and back).
  double d2h_activations_ns(int64_t tokens) const;
  double h2d_activations_ns(int64_t tokens) const;

  // A task waiting for a task of another lane starts this long after that
  // task's end (the hardware's "handoff" contention term; 0: none).
  double handoff_ns() const { return per_task_ns_[kHandoff]; }
  // A CPU (cpu = true) or GPU expert takes this many times longer for the part
  // of it during which the link copies experts (the "cpu-under-copy" and
  // "gpu-under-copy" terms; 1: none).
  double under_copy_factor(bool cpu) const { return factor_[cpu ? kCpuUnderCopy : kGpuUnderCopy]; }

  // As a planner's estimate (HardwareProfile::planning): each routed
  // expert's CPU time, GPU time and copy time times these factors.
  void scale_experts(double cpu, double gpu, double copy) {
    scale_[0] = cpu;
    scale_[1] = gpu;
    scale_[2] = copy;
    gpu_expert_memo_.fill(-1.0);
  }

  int64_t expert_bytes() const { return expert_bytes_; }
  int64_t activation_bytes(int64_t tokens) const { return tokens * model_.hidden_size * 2; }
  bool has_gpu() const { return hw_.has_gpu(); }
  // Table lookups outside a table's token range (answered with the end point).
  int64_t clamped_lookups() const { return clamped_; }

  const ModelSpec& model() const { return model_; }
  const HardwareProfile& hardware() const { return hw_; }

 private:
  double cpu_peak_gflops(WeightDtype d) const;
  double gpu_peak_tflops(WeightDtype d) const;
  // Measured table for `lane` applicable to this model and dtype, or nullptr.
  const CostTable* table(const std::string& lane) const;
  // gpu-layer at `context` from the tables by context: linear between the
  // two around it, the nearest outside (counted in clamped_lookups()).
  double layer_by_context_ns(int64_t tokens, int64_t context) const;
  double lookup_ns(const CostTable& t, double tokens) const;
  bool applies(const CostTable& t) const;  // measured on this model and dtype (or any)
  double gpu_roofline_ns(double bytes, double flops, WeightDtype d, double launches) const;
  double cpu_roofline_ns(double bytes, double flops, WeightDtype d) const;

  const ModelSpec& model_;
  const HardwareProfile& hw_;
  int64_t expert_bytes_ = 0;
  const CostTable* cpu_table_ = nullptr;
  const CostTable* shared_table_ = nullptr;  // "cpu-shared", on a machine without a GPU
  const CostTable* gpu_table_ = nullptr;
  const CostTable* h2d_table_ = nullptr;
  const CostTable* layer_table_ = nullptr;  // gpu-layer not by context
  // gpu-layer tables by context, ascending (interpolated between in context).
  std::vector<const CostTable*> layer_by_context_;
  // The GPU's shared experts, dense FFN and lm head as measured (moebench calibrate).
  const CostTable* gpu_shared_table_ = nullptr;
  const CostTable* gpu_dense_table_ = nullptr;
  const CostTable* gpu_head_table_ = nullptr;
  // On a machine without a GPU: a block's attention, norms and router, the
  // dense FFN and the lm head as measured on the CPU (moebench calibrate).
  const CostTable* cpu_attention_table_ = nullptr;
  const CostTable* cpu_dense_table_ = nullptr;
  const CostTable* cpu_head_table_ = nullptr;
  // The hardware's contention terms (HardwareProfile::contention), in the
  // order of contention_terms(): a task of that kind takes factor times its
  // time plus per_task (ns). Without terms: 1 and 0.
  enum Term {
    kGpuExpert,
    kCpuExpert,
    kExpertCopy,
    kActToCpu,
    kActToGpu,
    kGpuLayer,
    kHandoff,
    kCpuUnderCopy,
    kGpuUnderCopy,
    kTerms
  };
  double factor_[kTerms] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  double per_task_ns_[kTerms] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  bool contended_ = false;
  double in_run(Term k, double ns) const {
    return contended_ ? ns * factor_[k] + per_task_ns_[k] : ns;
  }
  double scale_[3] = {1, 1, 1};  // scale_experts: CPU, GPU, copy
  // gpu_expert_ns's roofline by tokens, as computed the first time it was
  // asked (-1: not yet); the engine asks it for every GPU expert.
  mutable std::array<double, 257> gpu_expert_memo_ = filled(-1.0);
  static std::array<double, 257> filled(double x) {
    std::array<double, 257> a;
    a.fill(x);
    return a;
  }
  mutable int64_t clamped_ = 0;
};

// The costs a strategy's components plan with (HardwareProfile::planning):
// the named profile's (resolved into hw.planning.estimate) or hw's own,
// each expert cost times the estimate's factor. Keeps references to `model`
// and `hw`. A preset named but not resolved is an InternalError.
CostModel planning_cost_model(const ModelSpec& model, const HardwareProfile& hw);

}  // namespace moebench
