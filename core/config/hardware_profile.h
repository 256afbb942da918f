#pragma once
// HardwareProfile: what the simulated backend's cost model knows about a
// machine. Presets in configs/hardware/<name>.toml put the source or the
// assumption behind every number in a comment next to it.
//
// Rates use decimal units: 1 GB/s = 1e9 bytes/s, 1 GFLOP/s = 1e9 FLOP/s.
// Optional measured tables override the roofline formulas for one kind of
// task; the cost model interpolates inside a table and clamps (with a
// warning counter) outside it, never extrapolating silently.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/schema.h"

namespace moebench {

struct CpuSpec {
  std::string model;
  int64_t sockets = 1;
  int64_t cores = 1;           // physical cores used for expert compute
  int64_t threads = 1;         // worker threads
  double mem_bw_gbps = 0;      // sustained read bandwidth of those cores
  double peak_gflops_fp32 = 0; // all used cores
  double peak_gflops_bf16 = 0; // 0 = no native bf16: computed at the fp32 rate
  double peak_gflops_int8 = 0; // 0 = no int8 dot product: computed at the fp32 rate
  double gemm_efficiency = 0.5;      // fraction of peak reached by expert matmuls
  double task_overhead_us = 0;       // fixed cost per expert task (dispatch, sync)
  double first_task_warmup_us = 0;   // extra cost of a layer's first expert task
};

struct GpuSpec {
  int64_t count = 1;           // 0 = CPU-only machine
  std::string model;
  double mem_gib = 0;
  double runtime_reserved_gib = 0;  // CUDA context, workspaces, activations
  double hbm_gbps = 0;
  double peak_tflops_bf16 = 0;  // dense tensor-core rate
  double peak_tflops_int8 = 0;
  double gemm_efficiency = 0.6;
  double kernel_launch_us = 0;  // per expert / per op launch
  int64_t layer_kernels = 8;    // kernel launches of one layer's non-MoE work
};

struct LinkSpec {
  std::string kind;          // e.g. "pcie4-x16"
  double h2d_gbps = 0;       // effective host-to-device bandwidth (pinned memory)
  double d2h_gbps = 0;
  double latency_us = 0;     // per transfer
  bool duplex = true;        // H2D and D2H can run at the same time
};

// A measured cost curve: time of one task as a function of tokens per expert.
struct CostTable {
  std::string lane;          // "cpu-expert" | "gpu-expert" | "h2d-expert" | "gpu-layer"
  std::string model;         // model preset it was measured on ("*" = any)
  std::string dtype;         // expert dtype it was measured with ("*" = any)
  std::vector<double> tokens;   // ascending
  std::vector<double> time_us;  // same length
};

struct HardwareProfile {
  std::string name;
  std::string description;
  std::string source;
  CpuSpec cpu;
  GpuSpec gpu;
  LinkSpec link;
  std::vector<CostTable> tables;

  bool has_gpu() const { return gpu.count > 0; }
  int64_t gpu_mem_bytes() const;
  void validate(const cfg::Value& src, const std::string& prefix) const;

  static const cfg::Schema<HardwareProfile>& schema();
  nlohmann::ordered_json to_json() const { return schema().to_json(*this); }
};

}  // namespace moebench
