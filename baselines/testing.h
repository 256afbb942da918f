// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Test fixtures for the engine: a tiny model, a hardware profile whose task
// times are round numbers (measured tables), hand-written routing, and
// strategies built in code.

#include <limits>
#include <string>
#include <vector>

#include "baselines/register.h"
#include "core/engine/engine.h"
#include "core/engine/policy.h"
#include "core/policy/component_util.h"
#include "core/trace/memory_source.h"

namespace moebench::testing {

// `layers` MoE layers of `experts` experts, top-`k`, no shared experts, no
// dense layers, no vocabulary (the lm head costs nothing).
inline ModelSpec tiny_model(int32_t layers = 2, int32_t experts = 4, int32_t k = 2,
                            int32_t shared = 0) {
  ModelSpec m;
  m.name = "tiny";
  m.family = "custom";
  m.num_layers = layers;
  m.hidden_size = 64;
  m.vocab_size = 0;
  m.routed_experts = experts;
  m.top_k = k;
  m.expert_intermediate = 32;
  m.shared_experts = shared;
  m.shared_intermediate = shared ? 32 : 0;
  m.attention = AttentionKind::kGqa;
  m.num_heads = 4;
  m.num_kv_heads = 4;
  m.head_dim = 16;
  return m;
}

// attention 1 us per layer, CPU expert 10 us per token, GPU expert 2 us,
// transfer 5 us; activations and launches cost nothing.
inline HardwareProfile round_hardware(bool gpu = true) {
  HardwareProfile h;
  h.name = "round";
  h.cpu.cores = 1;
  h.cpu.threads = 1;
  h.cpu.mem_bw_gbps = 1;
  h.cpu.peak_gflops_fp32 = 1;
  h.gpu.count = gpu ? 1 : 0;
  h.gpu.mem_gib = 1000;
  h.gpu.hbm_gbps = 1e6;
  h.gpu.peak_tflops_bf16 = 1e6;
  h.gpu.kernel_launch_us = 0;
  // Activations cost nothing: an infinite bandwidth (only in code; a profile
  // file refuses it, and refuses 0, which once meant the same).
  h.link.h2d_gbps = std::numeric_limits<double>::infinity();  // expert copies come from the table
  h.link.d2h_gbps = std::numeric_limits<double>::infinity();
  h.link.latency_us = 0;
  h.tables.push_back({"cpu-expert", "*", "*", {1, 2, 4}, {10, 20, 40}});
  h.tables.push_back({"gpu-expert", "*", "*", {1, 4}, {2, 2}});
  h.tables.push_back({"h2d-expert", "*", "*", {1}, {5}});
  h.tables.push_back({"gpu-layer", "*", "*", {1, 1024}, {1, 1}});
  return h;
}

// The MoE-Lightning tests' hardware (moe_lightning_test.cc, hrm_test.cc):
// the round hardware with a CPU that reads 0.064 bytes/ns (one sequence's
// attention over one 256-byte KV entry of the tiny model: 4 us) and a GPU
// whose layer overhead is 1 us (the QKV part).
inline HardwareProfile cpu_attention_hardware() {
  HardwareProfile h = round_hardware();
  h.cpu.mem_bw_gbps = 0.064;
  h.cpu.peak_gflops_fp32 = 1e9;
  h.gpu.layer_overhead_us = 1;
  return h;
}

// One sequence (no prompt) whose decode tokens use ids[t][l] (rank order).
inline MemoryTraceSource routing(int32_t layers, int32_t experts, int32_t k,
                                 const std::vector<std::vector<std::vector<int32_t>>>& ids,
                                 int64_t prompt_len = 0) {
  TraceInfo info;
  info.model_name = "tiny";
  info.moe_layers = layers;
  info.routing.experts = experts;
  info.routing.top_k = k;
  info.probs = ProbsStorage::kFull;
  info.sequences = {{prompt_len, int64_t(ids.size()) - prompt_len}};
  MemoryTraceSource src(info);
  for (const auto& tok : ids) {
    for (int32_t l = 0; l < layers; ++l) src.mutable_info().hole_rows += tok[l][0] == kHoleId;
  }
  for (const auto& tok : ids) {
    TokenRecord r;
    for (int32_t l = 0; l < layers; ++l) {
      // A row given as kHoleId ids is a hole: weights and probabilities 0.
      const bool hole = tok[l][0] == kHoleId;
      for (int32_t j = 0; j < k; ++j) {
        r.ids.push_back(tok[l][j]);
        r.weights.push_back(hole ? 0.0f : 1.0f / float(j + 1));
      }
      for (int32_t e = 0; e < experts; ++e) {
        float p = hole ? 0.0f : 0.01f;
        for (int32_t j = 0; j < k; ++j) {
          if (tok[l][j] == e) p = 0.5f / float(j + 1);
        }
        r.probs.push_back(p);
      }
    }
    src.add(0, r);
  }
  return src;
}

inline ComponentSpec component(const std::string& kind) {
  ComponentSpec c;
  c.kind = kind;
  c.params = cfg::Value::table(Where{"<test>"});
  return c;
}

inline StrategySpec strategy(const std::string& assigner, const std::string& cache = "none",
                             const std::string& placement = "none", int64_t slots = 0) {
  StrategySpec s;
  s.name = "test-" + assigner;
  s.placement = component(placement);
  s.assigner = component(assigner);
  s.cache = component(cache);
  s.prefetcher = component("none");
  s.predictor = component("none");
  s.deferral = component("none");
  s.residency.slots_per_layer = slots;
  return s;
}

// A calibration workload that is a trace source the test holds (components
// that read its trace: the residual predictor, MoE-Infinity's tracer); its
// activation profile is empty.
class TraceCalibration : public CalibrationData {
 public:
  explicit TraceCalibration(const TraceSource& t) : t_(t) {}
  const CalibrationProfile& profile() const override { return p_; }
  const TraceSource& trace() const override { return t_; }

 private:
  const TraceSource& t_;
  CalibrationProfile p_;
};

inline WorkloadSpec workload_of(const TraceSource& src) {
  WorkloadSpec w;
  w.sequences = int64_t(src.info().sequences.size());
  w.batch_size = 1;
  return w;
}

inline SimulationResult run(const ModelSpec& m, const HardwareProfile& h, const StrategySpec& s,
                            const TraceSource& src, bool timeline = true,
                            const Registry* reg = nullptr) {
  StrategyInstance st = StrategyInstance::create(s, reg ? *reg : builtin_registry());
  EngineOptions opt;
  opt.timeline = timeline;
  opt.check_graph = true;
  return simulate(m, h, workload_of(src), st, src, nullptr, opt);
}

// Tasks of a lane and kind, in start order.
inline std::vector<TaskRecord> tasks(const SimulationResult& r, Lane lane, TaskKind kind) {
  std::vector<TaskRecord> out;
  for (const auto& t : r.timeline) {
    if (t.lane == lane && t.kind == kind) out.push_back(t);
  }
  return out;
}

}  // namespace moebench::testing
