// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
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
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/schema.h"

namespace moebench {

struct CpuSpec {
  std::string model;
  int64_t sockets = 1;
  int64_t cores = 1;                // physical cores used for expert compute
  int64_t threads = 1;              // worker threads
  double mem_bw_gbps = 0;           // sustained read bandwidth of those cores
  double peak_gflops_fp32 = 0;      // all used cores
  double peak_gflops_bf16 = 0;      // 0 = no native bf16: computed at the fp32 rate
  double peak_gflops_int8 = 0;      // 0 = no int8 dot product: computed at the fp32 rate
  double gemm_efficiency = 0.5;     // fraction of peak reached by expert matmuls
  double task_overhead_us = 0;      // fixed cost per expert task (dispatch, sync)
  double first_task_warmup_us = 0;  // extra cost of a layer's first expert task
  // Fraction of mem_bw_gbps that routed-expert kernels read at (a
  // [[cpu_kernel]] entry sets it for the strategy's kernel family).
  double expert_bw_efficiency = 1.0;
  // Effective rate of routed-expert kernels when compute-bound, all used
  // cores (-1: the dtype's peak x gemm_efficiency).
  double expert_gflops = -1;
};

struct GpuSpec {
  int64_t count = 1;  // 0 = CPU-only machine
  std::string model;
  double mem_gib = 0;
  double runtime_reserved_gib = 0;  // CUDA context, workspaces, activations
  double hbm_gbps = 0;
  double peak_tflops_bf16 = 0;  // dense tensor-core rate
  double peak_tflops_int8 = 0;
  double gemm_efficiency = 0.6;
  double kernel_launch_us = 0;  // per expert / per op launch
  int64_t layer_kernels = 8;    // kernel launches of one layer's non-MoE work
  // Host time per layer that the layer's GPU work waits on (interpreter,
  // synchronisation); a [[stack]] entry sets it for the strategy's stack.
  double layer_overhead_us = 0;
  // Fraction of hbm_gbps that memory-bound kernels (decode-shaped matmuls,
  // attention) reach; a [[stack]] entry sets it for the strategy's kernels.
  double hbm_efficiency = 1.0;
};

struct LinkSpec {
  std::string kind;     // e.g. "pcie4-x16"
  double h2d_gbps = 0;  // effective host-to-device bandwidth (pinned memory)
  double d2h_gbps = 0;
  double latency_us = 0;  // per transfer
  bool duplex = true;     // H2D and D2H can run at the same time
};

// A measured cost curve: time of one task as a function of tokens per expert.
struct CostTable {
  std::string lane;   // "cpu-expert" | "cpu-shared" | "gpu-expert" | "h2d-expert" | "gpu-layer" ...
  std::string model;  // model preset it was measured on ("*" = any)
  std::string dtype;  // expert dtype it was measured with ("*" = any)
  std::vector<double> tokens;   // ascending
  std::vector<double> time_us;  // same length
  // gpu-layer only: the KV entries each new token read when it was measured
  // (tables at several contexts are interpolated between; -1: not by context).
  int64_t context = -1;
};

// One own CPU expert kernel's measured time per task by tokens per expert
// (moebench calibrate): the real backend's "auto" runs, at each token count,
// the candidate with the least time for the model and dtype
// (kernels/cpu/kernel_choice.h). Read by the real backend only.
struct KernelTime {
  std::string model;            // model preset whose routed expert shape was timed
  std::string dtype;            // expert dtype
  std::string kernel;           // expert kernel name (kernels/cpu/expert_ffn.h)
  std::vector<double> tokens;   // ascending
  std::vector<double> time_us;  // same length
};

// What one CPU expert-kernel family (a strategy's implementation.cpu_kernel)
// achieves on this machine. Unset numbers (-1) keep the [cpu] values.
struct CpuKernelSpec {
  std::string family;         // e.g. "ktransformers", "ggml", "pytorch"
  std::string dtype = "*";    // expert dtype it applies to ("*" = any)
  double bw_efficiency = -1;  // fraction of cpu.mem_bw_gbps its expert reads reach
  double compute_gflops =
      -1;  // effective rate when compute-bound (replaces peak x gemm_efficiency)
  double task_overhead_us = -1;  // per expert task
  double first_task_warmup_us = -1;
  std::string evidence;  // "paper" | "measured" | "fitted" | "spec" | "assumption"
  std::string source;
  // The strategy system whose measured times the numbers were fitted on
  // (provenance, required with evidence = "fitted"). The entry applies to
  // every system that runs this kernel family: evidence about a shared
  // kernel is the testbed's, not one system's.
  std::string measured_on;
  // The testbed's CPU rate for a kernel family without an entry of its own
  // here (at most one per dtype): every strategy runs the rates the
  // testbed's evidence gives, not the datasheet's.
  bool testbed_default = false;
};

// What one software stack (a strategy's implementation.stack) costs on this
// machine around the experts: GPU launches and host time per layer.
struct StackSpec {
  std::string name;         // e.g. "ktransformers", "llamacpp", "pytorch"
  bool cuda_graph = false;  // the step is replayed from a CUDA Graph: no per-kernel launch cost
  int64_t launches_per_layer =
      -1;                 // kernel launches of a layer's non-MoE work (-1 = gpu.layer_kernels)
  double launch_us = -1;  // host cost per launch (-1 = gpu.kernel_launch_us)
  double layer_overhead_us =
      -1;  // host time per layer the GPU waits on (-1 = gpu.layer_overhead_us)
  double gpu_bw_efficiency =
      -1;  // fraction of gpu.hbm_gbps its memory-bound kernels reach (-1 = gpu.hbm_efficiency)
  std::string evidence;
  std::string source;
  std::string measured_on;  // as in CpuKernelSpec: provenance; the entry applies to every system
  // Systems whose papers say their implementation of this stack differs in
  // host time (HybriMoE V: "minimizing redundant Python overhead"): they pay
  // differs_share x layer_overhead_us, an unknown whose range the profile's
  // [[unknown]] entry carries. Every other system on the stack pays it all.
  std::vector<std::string> differs;
  double differs_share = -1;  // required with `differs`, >= 0
};

// A published number a profile was fitted on: always a baseline system's
// measurement on this testbed, never the proposed system's (analysis/testbeds.py
// reports the harness against it).
struct TestbedTarget {
  std::string id;      // the row id in analysis/testbeds.py
  std::string system;  // the baseline measured
  std::string model;
  std::string quantity;
  std::string unit;
  double value = 0;               // the paper's number
  double tolerance = 0.15;        // relative
  std::vector<std::string> fits;  // the profile keys fitted on it
  std::string source;
  // Where the harness measures it (scripts/fit-testbed): a suite part, the
  // strategy's name there, a results column, and whether the column is
  // divided by the batch size (a per-sequence speed).
  std::string suite;
  std::string strategy;
  std::string metric;
  bool per_sequence = false;
  // The rows of one setting ("column=value", every one must hold; empty: the
  // mean over the strategy's rows).
  std::vector<std::string> where;
};

// A quantity of a paper's testbed that its evidence leaves unknown, with the
// range the evidence allows (scripts/testbed-region samples it; docs/TESTBEDS.md,
// "The region of testbeds"). role "sampled": spread over [low, high];
// "solved": fitted on the [[calibration]] targets at every sample, and a sample
// whose solution leaves [low, high] is outside the region. Not part of a
// case's identity: it describes the profile's uncertainty, not the profile.
struct TestbedUnknown {
  std::string
      key;  // "cpu.<k>", "gpu.<k>", "link.<k>", "stack.<name>.<k>", "cpu_kernel.<family>.<k>"
  std::string role = "sampled";  // "sampled" or "solved"
  double low = 0;
  double high = 0;
  std::string scale = "log";      // how samples spread over the range: "log" or "linear"
  std::vector<std::string> tied;  // keys that always take this key's value
  std::string source;             // where the range comes from
};

// What a task costs inside a run of every lane, beyond the idle machine's
// tables (docs/GPU.md, "Contention"): a task of `term`'s kind takes `factor`
// times its cost model time plus `per_task_us`. Fitted on the GPU replays
// (analysis/gpu_contention.py); none by default.
struct ContentionTerm {
  // "gpu-expert", "cpu-expert", "expert-copy", "act-to-cpu", "act-to-gpu",
  // "gpu-layer" (attention, norms and router, shared experts, dense FFN, lm
  // head, predictor matmuls), "handoff" (a task waiting for a task of another
  // lane starts per_task_us after that task's end; factor unused),
  // "cpu-under-copy" and "gpu-under-copy" (a CPU or GPU expert takes factor
  // times longer for the part of it during which the link copies experts:
  // the copy's share of host memory or of the GPU; per_task_us unused)
  std::string term;
  double factor = 1.0;
  double per_task_us = 0.0;
  std::string source;
};

struct HardwareProfile;

// What the strategies' components plan with (docs/COST_MODEL.md, "Planning
// estimates"): a planner knows a machine through its own profiling, not the
// simulator's cost model. The estimate is another profile's costs
// (`profile`, resolved when the case is expanded: `estimate`) or this one's,
// each routed expert's CPU time, GPU time and copy time times its factor
// (the estimate's error, an unknown a testbed may give a range). The
// default is this profile's own costs, exactly.
struct PlanningSpec {
  std::string preset;  // a hardware preset or file; empty: this profile
  double cpu_expert = 1.0;
  double gpu_expert = 1.0;
  double expert_copy = 1.0;
  std::shared_ptr<const HardwareProfile> estimate;  // `preset` resolved (null: this profile)
  bool exact() const {
    return preset.empty() && cpu_expert == 1.0 && gpu_expert == 1.0 && expert_copy == 1.0;
  }
};

struct HardwareProfile {
  std::string name;
  std::string description;
  std::string source;
  CpuSpec cpu;
  GpuSpec gpu;
  LinkSpec link;
  std::vector<CostTable> tables;
  std::vector<KernelTime> kernel_times;
  std::vector<CpuKernelSpec> cpu_kernels;
  std::vector<StackSpec> stacks;
  std::vector<TestbedTarget> calibration;
  // The proposed systems' published numbers on this testbed, as bounds a
  // fit must leave attainable (scripts/fit-testbed); never targets.
  std::vector<TestbedTarget> feasibility;
  // The testbed's unknowns and the suites whose claims are judged across
  // their region (scripts/testbed-region).
  std::vector<TestbedUnknown> unknowns;
  std::vector<std::string> region_suites;
  std::vector<ContentionTerm> contention;
  PlanningSpec planning;

  bool has_gpu() const { return gpu.count > 0; }
  void validate(const cfg::Value& src, const std::string& prefix) const;

  static const cfg::Schema<HardwareProfile>& schema();
  // Without "contention" when there is none and without "planning" when the
  // components plan with this profile's own costs (every case without them
  // keeps its id); with the estimate profile resolved, its JSON under
  // planning.estimate.
  nlohmann::ordered_json to_json() const;
};

// The contention terms' kinds, in the order the cost model keeps them.
const std::vector<std::string>& contention_terms();

// Adds `t` to the profile's tables, replacing one of the same lane, model,
// dtype and context, and, for a table by context, those of that lane,
// model and dtype not by context (and the reverse) (moebench calibrate's
// CPU and GPU tables).
void replace_table(HardwareProfile& h, CostTable t);

// Adds `t`, replacing an entry of the same model, dtype and kernel.
void replace_kernel_time(HardwareProfile& h, KernelTime t);
// The entries for `model` and `dtype`, in the profile's order.
std::vector<const KernelTime*> kernel_times_for(const HardwareProfile& h, const std::string& model,
                                                const std::string& dtype);

// The profile as a strategy's implementation runs on it: the [[cpu_kernel]]
// entry of family `cpu_kernel` for `dtype` (an entry for that dtype before
// one for "*"), or where the family has none the testbed's default entry
// (`testbed_default`), and the [[stack]] entry named `stack` replace the
// [cpu] and [gpu] values they set; a name without an entry (and no testbed
// default) keeps the profile's values. Entries apply to every system: what
// a testbed's baseline evidence requires of a shared kernel or stack is
// paid by every system that runs it. `system` (StrategySpec::system) is
// looked up only in a stack's `differs`, whose systems pay its share of the
// host time; kAnySystem (the mechanism comparison without a named system)
// is in none. A CUDA Graph stack costs no launch time (layer and expert
// kernels). `used`, when given, receives what was applied: the entries (or
// "profile default") and the effective numbers, for the result rows.
inline constexpr const char* kAnySystem = "*";
HardwareProfile with_implementation(const HardwareProfile& hw, const std::string& stack,
                                    const std::string& cpu_kernel, const std::string& dtype,
                                    const std::string& system = kAnySystem,
                                    nlohmann::ordered_json* used = nullptr);

}  // namespace moebench
