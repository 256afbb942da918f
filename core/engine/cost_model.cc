// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/cost_model.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/util/error.h"

namespace moebench {

namespace {
constexpr double kNsPerUs = 1e3;
// GB/s = 1e9 bytes/s = 1 byte/ns; GFLOP/s = 1 FLOP/ns; TFLOP/s = 1e3 FLOP/ns.
// Refuses a bandwidth that is not a positive number instead of treating it
// as infinitely fast, as 0 once was (a profile file refuses one at load;
// this holds for profiles built in code too). +infinity is infinitely fast:
// test fixtures say so explicitly, a profile file cannot.
double ns_for_bytes(double bytes, double gbps, const char* what) {
  if (bytes <= 0) return 0.0;
  if (!(gbps > 0)) {
    throw Error(fmt::format("hardware {}: expected a bandwidth > 0 GB/s to move {} bytes, found {}",
                            what, bytes, gbps));
  }
  return bytes / gbps;
}
}  // namespace

CostModel::CostModel(const ModelSpec& model, const HardwareProfile& hw) : model_(model), hw_(hw) {
  expert_bytes_ = model.expert_bytes();
  cpu_table_ = table("cpu-expert");
  shared_table_ = hw.has_gpu() ? nullptr : table("cpu-shared");
  gpu_table_ = table("gpu-expert");
  h2d_table_ = table("h2d-expert");
  for (const auto& t : hw.tables) {
    if (t.lane != "gpu-layer" || !applies(t)) continue;
    if (t.context < 0) {
      if (!layer_table_) layer_table_ = &t;
    } else {
      layer_by_context_.push_back(&t);
    }
  }
  std::stable_sort(layer_by_context_.begin(), layer_by_context_.end(),
                   [](const CostTable* a, const CostTable* b) { return a->context < b->context; });
  if (hw.has_gpu()) {
    gpu_shared_table_ = table("gpu-shared");
    gpu_dense_table_ = table("gpu-dense-ffn");
    gpu_head_table_ = table("gpu-lm-head");
  } else {
    cpu_attention_table_ = table("cpu-attention");
    cpu_dense_table_ = table("cpu-dense-ffn");
    cpu_head_table_ = table("cpu-lm-head");
  }
  const auto& names = contention_terms();
  for (const ContentionTerm& t : hw.contention) {
    const size_t k = size_t(std::find(names.begin(), names.end(), t.term) - names.begin());
    if (k >= size_t(kTerms)) continue;  // the schema refuses any other name
    factor_[k] = t.factor;
    per_task_ns_[k] = t.per_task_us * kNsPerUs;
    contended_ = true;
  }
}

bool CostModel::applies(const CostTable& t) const {
  if (!t.model.empty() && t.model != "*" && t.model != model_.name) return false;
  return t.dtype.empty() || t.dtype == "*" || t.dtype == to_string(model_.expert_dtype);
}

const CostTable* CostModel::table(const std::string& lane) const {
  for (const auto& t : hw_.tables)
    if (t.lane == lane && applies(t) && t.context < 0) return &t;
  return nullptr;
}

double CostModel::layer_by_context_ns(int64_t tokens, int64_t context) const {
  const auto& v = layer_by_context_;
  if (context < v.front()->context || context > v.back()->context) {
    ++clamped_;
    return lookup_ns(context < v.front()->context ? *v.front() : *v.back(), double(tokens));
  }
  size_t i = 0;
  while (v[i]->context < context) ++i;  // the first table at or above the context
  if (v[i]->context == context) return lookup_ns(*v[i], double(tokens));
  const double c0 = double(v[i - 1]->context), c1 = double(v[i]->context);
  const double a = lookup_ns(*v[i - 1], double(tokens)), b = lookup_ns(*v[i], double(tokens));
  return a + (b - a) * (double(context) - c0) / (c1 - c0);
}

double CostModel::lookup_ns(const CostTable& t, double tokens) const {
  const auto& x = t.tokens;
  const auto& y = t.time_us;
  if (tokens <= x.front()) {
    if (tokens < x.front()) ++clamped_;
    return y.front() * kNsPerUs;
  }
  if (tokens >= x.back()) {
    if (tokens > x.back()) ++clamped_;
    return y.back() * kNsPerUs;
  }
  const auto it = std::upper_bound(x.begin(), x.end(), tokens);
  const size_t i = size_t(it - x.begin());
  const double f = (tokens - x[i - 1]) / (x[i] - x[i - 1]);
  return (y[i - 1] + f * (y[i] - y[i - 1])) * kNsPerUs;
}

double CostModel::cpu_peak_gflops(WeightDtype d) const {
  const CpuSpec& c = hw_.cpu;
  switch (d) {
    case WeightDtype::kBf16:
      return c.peak_gflops_bf16 > 0 ? c.peak_gflops_bf16 : c.peak_gflops_fp32;
    case WeightDtype::kFp16:
      return c.peak_gflops_fp32;
    case WeightDtype::kInt8:
    case WeightDtype::kInt4:
      return c.peak_gflops_int8 > 0 ? c.peak_gflops_int8 : c.peak_gflops_fp32;
  }
  return c.peak_gflops_fp32;
}

double CostModel::gpu_peak_tflops(WeightDtype d) const {
  // int4 weights are dequantised and multiplied in bf16 (Marlin-style); int8 uses int8 tensor
  // cores.
  if (d == WeightDtype::kInt8 && hw_.gpu.peak_tflops_int8 > 0) return hw_.gpu.peak_tflops_int8;
  return hw_.gpu.peak_tflops_bf16;
}

double CostModel::cpu_roofline_ns(double bytes, double flops, WeightDtype d) const {
  const double mem = ns_for_bytes(bytes, hw_.cpu.mem_bw_gbps, "cpu.mem_bw_gbps");
  const double comp = flops / (cpu_peak_gflops(d) * hw_.cpu.gemm_efficiency);
  return std::max(mem, comp);
}

double CostModel::gpu_roofline_ns(double bytes, double flops, WeightDtype d,
                                  double launches) const {
  if (!hw_.has_gpu()) return cpu_roofline_ns(bytes, flops, d);
  const double mem = ns_for_bytes(bytes, hw_.gpu.hbm_gbps * hw_.gpu.hbm_efficiency,
                                  "gpu.hbm_gbps x gpu.hbm_efficiency");
  const double comp = flops / (gpu_peak_tflops(d) * 1e3 * hw_.gpu.gemm_efficiency);
  return launches * hw_.gpu.kernel_launch_us * kNsPerUs + std::max(mem, comp);
}

double CostModel::cpu_expert_ns(int64_t tokens, bool first_in_layer) const {
  double t;
  if (cpu_table_) {
    t = lookup_ns(*cpu_table_, double(tokens));
  } else {
    // The strategy's kernel family (hardware [[cpu_kernel]], applied by
    // with_implementation) sets the bandwidth it reaches and its compute rate.
    const double flops = double(model_.expert_flops_per_token()) * double(tokens);
    const double mem =
        ns_for_bytes(double(expert_bytes_), hw_.cpu.mem_bw_gbps * hw_.cpu.expert_bw_efficiency,
                     "cpu.mem_bw_gbps x cpu.expert_bw_efficiency");
    const double rate = hw_.cpu.expert_gflops > 0
                            ? hw_.cpu.expert_gflops
                            : cpu_peak_gflops(model_.expert_dtype) * hw_.cpu.gemm_efficiency;
    t = hw_.cpu.task_overhead_us * kNsPerUs + std::max(mem, flops / rate);
  }
  if (first_in_layer) t += hw_.cpu.first_task_warmup_us * kNsPerUs;
  return in_run(kCpuExpert, t) * scale_[0];
}

double CostModel::gpu_expert_ns(int64_t tokens) const {
  if (gpu_table_) return in_run(kGpuExpert, lookup_ns(*gpu_table_, double(tokens))) * scale_[1];
  const bool memo = tokens >= 0 && size_t(tokens) < gpu_expert_memo_.size();
  if (memo && gpu_expert_memo_[size_t(tokens)] >= 0) return gpu_expert_memo_[size_t(tokens)];
  const double flops = double(model_.expert_flops_per_token()) * double(tokens);
  const double ns =
      in_run(kGpuExpert, gpu_roofline_ns(double(expert_bytes_), flops, model_.expert_dtype, 1.0)) *
      scale_[1];
  if (memo) gpu_expert_memo_[size_t(tokens)] = ns;
  return ns;
}

double CostModel::h2d_expert_ns() const {
  if (h2d_table_) return in_run(kExpertCopy, lookup_ns(*h2d_table_, 1.0)) * scale_[2];
  return in_run(kExpertCopy,
                hw_.link.latency_us * kNsPerUs +
                    ns_for_bytes(double(expert_bytes_), hw_.link.h2d_gbps, "link.h2d_gbps")) *
         scale_[2];
}

double CostModel::h2d_expert_ns(double ratio) const {
  const double full = h2d_expert_ns();
  if (ratio >= 1.0) return full;
  const double lat = std::min(full, hw_.link.latency_us * kNsPerUs);
  return lat + ratio * (full - lat);
}

double CostModel::gpu_shared_ns(int64_t tokens) const {
  if (model_.shared_experts == 0 || tokens == 0) return 0.0;
  if (shared_table_) return in_run(kGpuLayer, lookup_ns(*shared_table_, double(tokens)));
  if (gpu_shared_table_) return in_run(kGpuLayer, lookup_ns(*gpu_shared_table_, double(tokens)));
  const double flops = double(model_.shared_flops_per_token()) * double(tokens);
  return in_run(kGpuLayer,
                gpu_roofline_ns(double(model_.shared_bytes()), flops, model_.expert_dtype, 1.0));
}

double CostModel::gpu_matmul_ns(int64_t in, int64_t out, int64_t tokens) const {
  if (in <= 0 || out <= 0 || tokens <= 0) return 0.0;
  const double bytes = double(in) * double(out) * 2.0 + double(tokens) * double(in + out) * 2.0;
  const double flops = 2.0 * double(in) * double(out) * double(tokens);
  return in_run(kGpuLayer, gpu_roofline_ns(bytes, flops, WeightDtype::kBf16, 1.0));
}

double CostModel::layer_nonmoe_ns(int64_t tokens, int64_t sequences, int64_t context) const {
  if (cpu_attention_table_)
    return in_run(kGpuLayer, lookup_ns(*cpu_attention_table_, double(tokens)));
  if (!layer_by_context_.empty()) return in_run(kGpuLayer, layer_by_context_ns(tokens, context));
  if (layer_table_) return in_run(kGpuLayer, lookup_ns(*layer_table_, double(tokens)));
  const double weights = double(
      model_.matrix_bytes(model_.attention_params() + model_.gate_params(), model_.dense_dtype));
  const double kv = double(sequences) * double(context) * double(model_.kv_bytes_per_token());
  const double flops = double(tokens) * double(model_.attention_flops_per_token(context));
  return in_run(kGpuLayer, hw_.gpu.layer_overhead_us * kNsPerUs +
                               gpu_roofline_ns(weights + kv, flops, model_.dense_dtype,
                                               double(hw_.gpu.layer_kernels)));
}

namespace {
// The output projection's parameters of one layer (the rest of
// attention_params are the Q, K and V projections).
int64_t output_params(const ModelSpec& m) {
  return m.attention == AttentionKind::kGqa ? m.num_heads * m.head_dim * m.hidden_size
                                            : m.num_heads * m.v_head_dim * m.hidden_size;
}
}  // namespace

double CostModel::attention_pre_ns(int64_t tokens) const {
  const int64_t params = model_.attention_params() - output_params(model_);
  const double flops = 2.0 * double(params) * double(tokens);
  return hw_.gpu.layer_overhead_us * kNsPerUs +
         gpu_roofline_ns(double(model_.matrix_bytes(params, model_.dense_dtype)), flops,
                         model_.dense_dtype, 0.5 * double(hw_.gpu.layer_kernels));
}

double CostModel::attention_post_ns(int64_t tokens) const {
  const int64_t params = output_params(model_) + model_.gate_params();
  const double flops = 2.0 * double(params) * double(tokens);
  return gpu_roofline_ns(double(model_.matrix_bytes(params, model_.dense_dtype)), flops,
                         model_.dense_dtype, 0.5 * double(hw_.gpu.layer_kernels));
}

double CostModel::cpu_attention_ns(int64_t tokens, int64_t sequences, int64_t context) const {
  const double kv = double(sequences) * double(context) * double(model_.kv_bytes_per_token());
  // attention_flops_per_token less its projections: the scores and the
  // weighted sum over the context.
  const double flops =
      double(tokens) * double(model_.attention_flops_per_token(context) -
                              2 * (model_.attention_params() + model_.gate_params()));
  return hw_.cpu.task_overhead_us * kNsPerUs + cpu_roofline_ns(kv, flops, model_.dense_dtype);
}

int64_t CostModel::qkv_bytes(int64_t tokens) const {
  const ModelSpec& m = model_;
  const int64_t elems = m.attention == AttentionKind::kGqa
                            ? (m.num_heads + 2 * m.num_kv_heads) * m.head_dim
                            : m.num_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim) +
                                  m.kv_lora_rank + m.qk_rope_head_dim;
  return tokens * elems * 2;  // 16-bit activations
}

double CostModel::qkv_d2h_ns(int64_t tokens) const {
  if (!hw_.has_gpu()) return 0.0;
  return hw_.link.latency_us * kNsPerUs +
         ns_for_bytes(double(qkv_bytes(tokens)), hw_.link.d2h_gbps, "link.d2h_gbps");
}

double CostModel::d2h_expert_ns() const {
  if (!hw_.has_gpu()) return 0.0;
  return hw_.link.latency_us * kNsPerUs +
         ns_for_bytes(double(expert_bytes_), hw_.link.d2h_gbps, "link.d2h_gbps");
}

double CostModel::kv_d2h_ns(int64_t tokens) const {
  if (!hw_.has_gpu()) return 0.0;
  return hw_.link.latency_us * kNsPerUs +
         ns_for_bytes(double(tokens) * double(model_.kv_bytes_per_token()), hw_.link.d2h_gbps,
                      "link.d2h_gbps");
}

int64_t CostModel::kv_bytes(int64_t sequences, int64_t context) const {
  return sequences * context * model_.kv_bytes_per_token();
}

double CostModel::kv_h2d_ns(int64_t sequences, int64_t context) const {
  if (!hw_.has_gpu()) return 0.0;
  return hw_.link.latency_us * kNsPerUs +
         ns_for_bytes(double(kv_bytes(sequences, context)), hw_.link.h2d_gbps, "link.h2d_gbps");
}

double CostModel::dense_ffn_ns(int64_t tokens) const {
  if (cpu_dense_table_) return in_run(kGpuLayer, lookup_ns(*cpu_dense_table_, double(tokens)));
  if (gpu_dense_table_) return in_run(kGpuLayer, lookup_ns(*gpu_dense_table_, double(tokens)));
  const double bytes = double(model_.matrix_bytes(model_.dense_ffn_params(), model_.dense_dtype));
  const double flops = 2.0 * double(model_.dense_ffn_params()) * double(tokens);
  return in_run(kGpuLayer, gpu_roofline_ns(bytes, flops, model_.dense_dtype, 1.0));
}

double CostModel::lm_head_ns(int64_t tokens) const {
  if (cpu_head_table_) return in_run(kGpuLayer, lookup_ns(*cpu_head_table_, double(tokens)));
  if (gpu_head_table_) return in_run(kGpuLayer, lookup_ns(*gpu_head_table_, double(tokens)));
  const double params = double(model_.vocab_size) * double(model_.hidden_size);
  return in_run(kGpuLayer,
                gpu_roofline_ns(double(model_.matrix_bytes(int64_t(params), model_.dense_dtype)),
                                2.0 * params * double(tokens), model_.dense_dtype, 1.0));
}

double CostModel::d2h_activations_ns(int64_t tokens) const {
  if (!hw_.has_gpu()) return 0.0;
  return in_run(kActToCpu,
                hw_.link.latency_us * kNsPerUs + ns_for_bytes(double(activation_bytes(tokens)),
                                                              hw_.link.d2h_gbps, "link.d2h_gbps"));
}

double CostModel::h2d_activations_ns(int64_t tokens) const {
  if (!hw_.has_gpu()) return 0.0;
  return in_run(kActToGpu,
                hw_.link.latency_us * kNsPerUs + ns_for_bytes(double(activation_bytes(tokens)),
                                                              hw_.link.h2d_gbps, "link.h2d_gbps"));
}

CostModel planning_cost_model(const ModelSpec& model, const HardwareProfile& hw) {
  const PlanningSpec& p = hw.planning;
  if (!p.preset.empty() && !p.estimate) {
    throw InternalError(
        fmt::format("hardware '{}': planning.preset '{}' was not resolved", hw.name, p.preset));
  }
  CostModel c(model, p.estimate ? *p.estimate : hw);
  c.scale_experts(p.cpu_expert, p.gpu_expert, p.expert_copy);
  return c;
}

}  // namespace moebench
