// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Metrics of one run. Definitions (with formulas) are in analysis/METRICS.md;
// the field table below is the single list that result rows, the summary
// table and METRICS.md's key list are generated from.

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results/records.h"

namespace moebench {

// One request of a serving run (workload.scheduler = "continuous";
// core/engine/request_log.h), simulated ns from the run's start.
struct RequestTimes {
  double arrival_ns = 0;
  double start_ns = -1;        // its first step's start (queueing ends)
  double first_token_ns = -1;  // the end of its prefill (or first decode step)
  double last_token_ns = -1;   // the end of its last step
  int64_t output_tokens = 0;   // tokens it produced (its prefill's and one per decode step)
};

struct RunMetrics {
  // Serving (empty unless the workload is served: docs/SERVING.md): every
  // request, the intervals between a request's consecutive output tokens
  // (ms), and the SLO goodput counts against (ms).
  std::vector<RequestTimes> requests;
  std::vector<double> itl_ms;
  std::string slo;
  double slo_ttft_ms = 0, slo_tpot_ms = 0;

  // Timing (simulated or measured clock, milliseconds unless stated).
  std::vector<double> ttft_ms;  // per batch: prefill start to first token
  std::vector<double> tbt_ms;   // per decode step
  // Real backend: ttft_ms and tbt_ms are the steps' measured wall clock;
  // these are the same steps as the lanes compose the measured task
  // durations (empty on the simulated backend).
  std::vector<double> composed_ttft_ms, composed_tbt_ms;
  double prefill_time_s = 0, decode_time_s = 0, total_time_s = 0;
  int64_t prefill_tokens = 0, decode_tokens = 0;

  // Expert residency at each layer's gate, per phase [0 = prefill, 1 = decode].
  int64_t expert_accesses[2] = {0, 0};  // activated (layer, expert) pairs per step
  int64_t expert_hits[2] = {0, 0};
  int64_t token_accesses[2] = {0, 0};  // (token, layer, expert) activations
  int64_t token_hits[2] = {0, 0};
  std::vector<int64_t> decode_layer_accesses, decode_layer_hits;  // token-weighted, per MoE layer
  // The same per group of kStepGroup decode steps (counted from each batch's
  // first decode step, summed over batches) and layer: [group * layers + layer].
  static constexpr int64_t kStepGroup = 8;
  std::vector<int64_t> decode_group_accesses, decode_group_hits;
  // (token, layer) rows of the run's steps that are holes in the trace
  // (TraceInfo::hole_rows), [prefill, decode]: no expert ran, nothing counted.
  int64_t hole_rows[2] = {0, 0};

  // Transfers.
  int64_t demand_loads = 0, prefetch_loads = 0, swap_loads = 0, staging_loads = 0,
          buffer_copies = 0;
  int64_t prefetch_useful = 0, prefetch_late = 0, prefetch_cancelled = 0;
  int64_t prefetch_admitted = 0;  // buffered prefetches its layer used, taken into the cache share
  int64_t device_swaps = 0;       // swaps whose incoming expert was copied inside GPU memory
  int64_t prefetch_dropped_late = 0;  // requests dropped before issue: would land after their gate
  int64_t writeback_copies = 0;       // evicted experts copied back to host (residency.writeback)
  int64_t reduced_copies = 0;         // reduced-precision copies (residency.reduced_copy_ratio)
  int64_t recopies = 0;  // cached experts copied again after computing (recopy_from_layer)
  std::vector<int64_t> prefetch_layer_loads;  // prefetch_loads per MoE layer
  int64_t prefetch_covered =
      0;  // activations cached at the gate thanks to a prefetch for that step
  int64_t h2d_bytes = 0, d2h_bytes = 0, act_h2d_bytes = 0;
  int64_t kv_h2d_bytes = 0;  // KV entries copied to the GPU (residency.attention = "gpu-host-kv")

  // Where expert work ran (token-weighted).
  int64_t gpu_expert_tokens = 0, cpu_expert_tokens = 0, deferred_expert_tokens = 0;

  // Lane busy time (ns) and the run's makespan.
  double busy_ns[5] = {0, 0, 0, 0, 0};
  // Busy time of the link, GPU and CPU lanes within decode steps (a task
  // counts in the step during which it was submitted; a copy when it
  // starts): which lane bounds a decode step.
  double decode_busy_ns[3] = {0, 0, 0};
  double makespan_ns = 0;
  // Compute-lane time by task kind (index: TaskKind), ns; MoE layer executions.
  double task_ns[16] = {};
  int64_t moe_layer_steps = 0;

  // Decode breakdown (SMoE Fig. 13), summed over decode steps, ns.
  double bd_predict_ns = 0, bd_gpu_compute_ns = 0, bd_wait_cache_ns = 0, bd_shared_ns = 0,
         bd_cpu_other_ns = 0, bd_attention_ns = 0;

  // Prefill breakdown (SMoE Fig. 11), summed over prefill steps, ns; and
  // the activated (layer, expert) pairs of prefill steps, all and on the GPU.
  double pbd_gpu_compute_ns = 0, pbd_wait_pcie_ns = 0, pbd_wait_cpu_ns = 0;
  int64_t prefill_expert_pairs = 0, prefill_gpu_expert_pairs = 0;

  // Host time spent in components (measured on the machine running the
  // simulation), per family, and how many layer calls were timed.
  double decision_ns[6] = {0, 0, 0,
                           0, 0, 0};  // placement, assigner, cache, prefetcher, predictor, deferral
  int64_t decision_samples = 0;

  // The residency settings the run used: the strategy's, or those a
  // component chose before the run (apply_residency_choice), with the
  // chooser's estimate of a decode step (NaN when none chose).
  std::string run_attention = "gpu";
  int64_t run_micro_batches = 1;
  double run_cache_ratio = 0;
  std::string residency_chosen_by, residency_why;
  double residency_estimate_ns = std::numeric_limits<double>::quiet_NaN();

  int64_t gpu_cache_slots = 0;      // expert slots of the cache
  double gpu_mem_required_gib = 0;  // non-expert weights + cache + KV cache + runtime reserve
  int64_t cost_table_clamps = 0;    // measured-table lookups outside their range
  // Host wall-clock time of the step loop (measured): on the real backend it
  // holds the executed kernels, on the simulated one the simulator's speed.
  double host_wall_ns = 0;

  // The table of output columns (name with unit, doc, value).
  struct Field {
    std::string name;
    std::string doc;
    std::function<nlohmann::ordered_json(const RunMetrics&)> value;
  };
  static const std::vector<Field>& fields();
  static std::vector<Column> columns();
  nlohmann::ordered_json to_json() const;
  // "" when every headline number that applies (TTFT with any first token,
  // TBT and decode time with decode tokens, prefill time with prompt tokens)
  // is a finite number; else which is not. A case with such a result has
  // failed: its row would show null where a number belongs.
  std::string headline_problem() const;
};

// The serving metrics' columns (core/engine/request_log.cc).
std::vector<RunMetrics::Field> serving_fields();

// Percentile with linear interpolation (p in [0, 100]); NaN for an empty set.
double percentile(std::vector<double> v, double p);

// Arithmetic mean; NaN for an empty set.
double mean(const std::vector<double>& v);

}  // namespace moebench
