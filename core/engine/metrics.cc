// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/metrics.h"

#include "core/engine/lanes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

namespace moebench {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * double(v.size() - 1);
  const size_t i = size_t(pos);
  const double f = pos - double(i);
  return i + 1 < v.size() ? v[i] + f * (v[i + 1] - v[i]) : v[i];
}

double mean(const std::vector<double>& v) {
  return v.empty() ? std::numeric_limits<double>::quiet_NaN()
                   : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

namespace {

using J = nlohmann::ordered_json;

J ratio(int64_t a, int64_t b) {
  return b > 0 ? J(double(a) / double(b)) : J(nullptr);
}
J num(double x) {
  return std::isfinite(x) ? J(x) : J(nullptr);
}
J per_token_ms(double ns, int64_t tokens) {
  return tokens > 0 ? J(ns / 1e6 / double(tokens)) : J(nullptr);
}
J util(const RunMetrics& m, int lane) {
  return m.makespan_ns > 0 ? J(m.busy_ns[lane] / m.makespan_ns) : J(nullptr);
}

J decode_busy(const RunMetrics& m, int lane) {
  return m.tbt_ms.empty() ? J(nullptr) : J(m.decode_busy_ns[lane] / double(m.tbt_ms.size()) / 1e6);
}
J decision(const RunMetrics& m, int fam) {
  return m.decision_samples > 0 ? J(m.decision_ns[fam] / double(m.decision_samples)) : J(nullptr);
}

}  // namespace

std::string RunMetrics::headline_problem() const {
  auto all_finite = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  };
  if (!all_finite(ttft_ms)) return "TTFT is not a finite number";
  if (!all_finite(tbt_ms)) return "TBT is not a finite number";
  if (prefill_tokens > 0 && !(std::isfinite(prefill_time_s) && prefill_time_s > 0)) {
    return fmt::format("prefill time is {} s for {} prompt tokens", prefill_time_s, prefill_tokens);
  }
  if (decode_tokens > 0 && !(std::isfinite(decode_time_s) && decode_time_s > 0)) {
    return fmt::format("decode time is {} s for {} generated tokens", decode_time_s, decode_tokens);
  }
  if (!std::isfinite(total_time_s)) return "total time is not a finite number";
  return "";
}

namespace {

// The metric columns in three groups, in their column order: latency and
// throughput; hits, prefetches and transfers; lanes, breakdowns and decisions.
std::vector<RunMetrics::Field> latency_fields() {
  return {
      {"ttft_mean_ms",
       "Time to first token, mean over batches: prefill start to the first token (simulated "
       "backend: the lanes' "
       "clock; real backend: the steps' measured wall clock).",
       [](const RunMetrics& m) { return num(mean(m.ttft_ms)); }},
      {"ttft_p50_ms", "TTFT median over batches.",
       [](const RunMetrics& m) { return num(percentile(m.ttft_ms, 50)); }},
      {"ttft_max_ms", "TTFT maximum over batches.",
       [](const RunMetrics& m) {
         return num(m.ttft_ms.empty() ? NAN
                                      : *std::max_element(m.ttft_ms.begin(), m.ttft_ms.end()));
       }},
      {"tbt_mean_ms", "Time between tokens: duration of a decode step, mean.",
       [](const RunMetrics& m) { return num(mean(m.tbt_ms)); }},
      {"tbt_p50_ms", "TBT median.",
       [](const RunMetrics& m) { return num(percentile(m.tbt_ms, 50)); }},
      {"tbt_p90_ms", "TBT 90th percentile.",
       [](const RunMetrics& m) { return num(percentile(m.tbt_ms, 90)); }},
      {"tbt_p99_ms", "TBT 99th percentile.",
       [](const RunMetrics& m) { return num(percentile(m.tbt_ms, 99)); }},
      {"prefill_tokens_per_s", "Prompt tokens / total prefill time.",
       [](const RunMetrics& m) {
         return m.prefill_time_s > 0 ? J(double(m.prefill_tokens) / m.prefill_time_s) : J(nullptr);
       }},
      {"decode_tokens_per_s", "Generated tokens (all sequences) / total decode time.",
       [](const RunMetrics& m) {
         return m.decode_time_s > 0 ? J(double(m.decode_tokens) / m.decode_time_s) : J(nullptr);
       }},
      {"prefill_time_s", "Total prefill time.",
       [](const RunMetrics& m) { return J(m.prefill_time_s); }},
      {"decode_time_s", "Total decode time.",
       [](const RunMetrics& m) { return J(m.decode_time_s); }},
      {"total_time_s", "Whole run (prefill and decode of every batch).",
       [](const RunMetrics& m) { return J(m.total_time_s); }},
      {"composed_ttft_mean_ms",
       "Real backend: the first-token steps as the lanes compose the measured task durations, mean "
       "(null on the "
       "simulated backend, where this is ttft_mean_ms).",
       [](const RunMetrics& m) { return num(mean(m.composed_ttft_ms)); }},
      {"composed_tbt_mean_ms",
       "Real backend: the decode steps as the lanes compose the measured task durations, mean "
       "(null on the "
       "simulated backend).",
       [](const RunMetrics& m) { return num(mean(m.composed_tbt_ms)); }},
      {"composition_error_ttft",
       "Real backend: (composed_ttft_mean_ms - ttft_mean_ms) / ttft_mean_ms, the composition's "
       "error against the "
       "measured wall clock, signed (negative: the composition misses time).",
       [](const RunMetrics& m) {
         return num((mean(m.composed_ttft_ms) - mean(m.ttft_ms)) / mean(m.ttft_ms));
       }},
      {"composition_error_tbt",
       "Real backend: the same for TBT: (composed_tbt_mean_ms - tbt_mean_ms) / tbt_mean_ms.",
       [](const RunMetrics& m) {
         return num((mean(m.composed_tbt_ms) - mean(m.tbt_ms)) / mean(m.tbt_ms));
       }},
  };
}

std::vector<RunMetrics::Field> residency_fields() {
  return {
      {"decode_hit_rate_frac",
       "Decode: activated (layer, expert) pairs per step cached at the layer's gate / all "
       "activated pairs.",
       [](const RunMetrics& m) { return ratio(m.expert_hits[1], m.expert_accesses[1]); }},
      {"decode_hit_rate_token_frac",
       "Decode: (token, layer, expert) activations cached at the gate / all activations.",
       [](const RunMetrics& m) { return ratio(m.token_hits[1], m.token_accesses[1]); }},
      {"prefill_hit_rate_frac", "Prefill: as decode_hit_rate_frac.",
       [](const RunMetrics& m) { return ratio(m.expert_hits[0], m.expert_accesses[0]); }},
      {"prefill_hit_rate_token_frac", "Prefill: as decode_hit_rate_token_frac.",
       [](const RunMetrics& m) { return ratio(m.token_hits[0], m.token_accesses[0]); }},
      {"decode_hit_rate_by_layer_frac", "Decode token-weighted hit rate of each MoE layer (array).",
       [](const RunMetrics& m) {
         J a = J::array();
         for (size_t l = 0; l < m.decode_layer_accesses.size(); ++l)
           a.push_back(ratio(m.decode_layer_hits[l], m.decode_layer_accesses[l]));
         return a;
       }},
      {"decode_hit_rate_by_step_group_frac",
       "Decode token-weighted hit rate per group of 8 decode steps (from each batch's first) and "
       "MoE layer (array of arrays).",
       [](const RunMetrics& m) {
         J groups = J::array();
         const size_t L = m.decode_layer_accesses.size();
         for (size_t g = 0; L > 0 && g * L < m.decode_group_accesses.size(); ++g) {
           J row = J::array();
           for (size_t l = 0; l < L; ++l)
             row.push_back(
                 ratio(m.decode_group_hits[g * L + l], m.decode_group_accesses[g * L + l]));
           groups.push_back(std::move(row));
         }
         return groups;
       }},
      {"decode_activations", "Decode (token, layer, expert) activations.",
       [](const RunMetrics& m) { return J(m.token_accesses[1]); }},
      {"routing_holes",
       "(token, layer) rows of the run whose routing the trace lacks (holes: a logger dropped "
       "them; prefill and decode): no expert ran for them and no access was counted, so hit rates "
       "are over the rows the trace has.",
       [](const RunMetrics& m) { return J(m.hole_rows[0] + m.hole_rows[1]); }},
      {"prefetch_loads", "Expert loads issued by the prefetcher.",
       [](const RunMetrics& m) { return J(m.prefetch_loads); }},
      {"prefetch_loads_by_layer", "Expert loads issued by the prefetcher, per MoE layer (array).",
       [](const RunMetrics& m) { return J(m.prefetch_layer_loads); }},
      {"prefetch_precision_frac",
       "Prefetches whose expert was activated in the layer and step they targeted / prefetches "
       "issued.",
       [](const RunMetrics& m) { return ratio(m.prefetch_useful, m.prefetch_loads); }},
      {"prefetch_recall_frac",
       "Decode activations cached at the gate because of a prefetch for that step / decode "
       "activations.",
       [](const RunMetrics& m) { return ratio(m.prefetch_covered, m.token_accesses[1]); }},
      {"prefetch_late", "Useful prefetches still in flight at their layer's gate.",
       [](const RunMetrics& m) { return J(m.prefetch_late); }},
      {"prefetch_cancelled", "Queued prefetches dropped because their layer had started.",
       [](const RunMetrics& m) { return J(m.prefetch_cancelled); }},
      {"prefetch_admitted",
       "Prefetched experts of the prefetch buffer that their layer used and the cache took into "
       "its share (CachePolicy::admits_prefetched).",
       [](const RunMetrics& m) { return J(m.prefetch_admitted); }},
      {"prefetch_dropped_late",
       "Prefetch requests dropped before issue: the copy would land too late for its target layer "
       "(residency.late_prefetch).",
       [](const RunMetrics& m) { return J(m.prefetch_dropped_late); }},
      {"demand_loads", "Expert loads because an expert ran on the GPU without being cached.",
       [](const RunMetrics& m) { return J(m.demand_loads); }},
      {"device_swaps",
       "Experts a cache policy's swap made resident from GPU memory after they ran there from a "
       "copy not kept (Swap::on_device: KTransformers' dynamic expert update); no link transfer.",
       [](const RunMetrics& m) { return J(m.device_swaps); }},
      {"writeback_copies",
       "Evicted experts copied back to host memory before the copy that replaced them, in the "
       "same copy stream (residency.writeback: Mixtral-Offloading's swap).",
       [](const RunMetrics& m) { return J(m.writeback_copies); }},
      {"reduced_copies",
       "Expert copies at reduced precision, each moving residency.reduced_copy_ratio of the "
       "expert's bytes (Fate's INT2 copies; cancelled ones included).",
       [](const RunMetrics& m) { return J(m.reduced_copies); }},
      {"recopies",
       "Cached experts copied again, whole, after they computed on the GPU "
       "(residency.recopy_from_layer: Fate's code reloads the INT4 weights it dequantised in "
       "place).",
       [](const RunMetrics& m) { return J(m.recopies); }},
      {"swap_loads",
       "Expert loads requested by the cache policy (window swaps, post-prefill fill).",
       [](const RunMetrics& m) { return J(m.swap_loads); }},
      {"buffer_copies",
       "Expert copies into a buffer no expert reads (the HybriMoE code's prefill buffer).",
       [](const RunMetrics& m) { return J(m.buffer_copies); }},
      {"staging_loads",
       "Loads into a use-once buffer (no free slot could be made, or on-demand loads are not "
       "admitted).",
       [](const RunMetrics& m) { return J(m.staging_loads); }},
      {"h2d_bytes", "Expert weight bytes copied host to device.",
       [](const RunMetrics& m) { return J(m.h2d_bytes); }},
      {"activation_bytes",
       "Hidden-state bytes moved between GPU and CPU for CPU experts (both directions).",
       [](const RunMetrics& m) { return J(m.d2h_bytes + m.act_h2d_bytes); }},
      {"kv_h2d_bytes",
       "KV-cache bytes copied host to device for attention on the GPU over a host-memory KV "
       "cache (residency.attention = \"gpu-host-kv\"), on the link beside the experts' copies.",
       [](const RunMetrics& m) { return J(m.kv_h2d_bytes); }},
  };
}

std::vector<RunMetrics::Field> lane_fields() {
  return {
      {"cpu_expert_time_s",
       "CPU lane time computing routed experts (deferred ones included), whole run.",
       [](const RunMetrics& m) {
         return J((m.task_ns[size_t(TaskKind::kCpuExpert)] +
                   m.task_ns[size_t(TaskKind::kDeferredExpert)]) /
                  1e9);
       }},
      {"expert_ms_per_moe_layer",
       "Expert compute time per MoE layer execution: routed experts on the CPU lane (deferred ones "
       "included) plus "
       "shared experts, on whichever lane runs them (the quantity suites/validation.toml "
       "compares).",
       [](const RunMetrics& m) {
         const double ns = m.task_ns[size_t(TaskKind::kCpuExpert)] +
                           m.task_ns[size_t(TaskKind::kDeferredExpert)] +
                           m.task_ns[size_t(TaskKind::kSharedExperts)];
         return m.moe_layer_steps > 0 ? J(ns / double(m.moe_layer_steps) / 1e6) : J(nullptr);
       }},
      {"cpu_busy_s", "CPU lane busy time (every task on it), whole run.",
       [](const RunMetrics& m) { return J(m.busy_ns[2] / 1e9); }},
      {"gpu_expert_time_s",
       "GPU lane time computing routed experts (copies not included), whole run.",
       [](const RunMetrics& m) { return J(m.task_ns[size_t(TaskKind::kGpuExpert)] / 1e9); }},
      {"gpu_expert_token_frac", "(token, expert) computations run on the GPU / all.",
       [](const RunMetrics& m) {
         return ratio(m.gpu_expert_tokens, m.gpu_expert_tokens + m.cpu_expert_tokens);
       }},
      {"deferred_expert_token_frac",
       "(token, expert) computations deferred to the next layer / all.",
       [](const RunMetrics& m) {
         return ratio(m.deferred_expert_tokens, m.gpu_expert_tokens + m.cpu_expert_tokens);
       }},
      {"gpu_util_frac", "GPU lane busy time / run time.",
       [](const RunMetrics& m) { return util(m, 1); }},
      {"cpu_util_frac", "CPU lane busy time / run time.",
       [](const RunMetrics& m) { return util(m, 2); }},
      {"h2d_util_frac", "H2D link busy time (expert weights) / run time.",
       [](const RunMetrics& m) { return util(m, 0); }},
      {"decode_h2d_busy_ms_per_step",
       "H2D link busy time (expert copies) per decode step, mean over decode steps.",
       [](const RunMetrics& m) { return decode_busy(m, 0); }},
      {"decode_gpu_busy_ms_per_step", "GPU lane busy time per decode step, mean over decode steps.",
       [](const RunMetrics& m) { return decode_busy(m, 1); }},
      {"decode_cpu_busy_ms_per_step", "CPU lane busy time per decode step, mean over decode steps.",
       [](const RunMetrics& m) { return decode_busy(m, 2); }},
      {"pbd_pcie_ms_per_prefill",
       "Prefill breakdown: GPU idle waiting for expert copies, per prefill step (SMoE Fig. 11 "
       "PCIe).",
       [](const RunMetrics& m) {
         return per_token_ms(m.pbd_wait_pcie_ns, int64_t(m.ttft_ms.size()));
       }},
      {"pbd_gpu_ms_per_prefill",
       "Prefill breakdown: routed experts on the GPU, per prefill step (SMoE Fig. 11 GPU).",
       [](const RunMetrics& m) {
         return per_token_ms(m.pbd_gpu_compute_ns, int64_t(m.ttft_ms.size()));
       }},
      {"pbd_wait_cpu_ms_per_prefill",
       "Prefill breakdown: CPU experts not overlapped by the GPU side, per prefill step (SMoE Fig. "
       "11 Wait CPU).",
       [](const RunMetrics& m) {
         return per_token_ms(m.pbd_wait_cpu_ns, int64_t(m.ttft_ms.size()));
       }},
      {"prefill_gpu_expert_frac",
       "Prefill: activated (layer, expert) pairs computed on the GPU / all activated pairs (SMoE "
       "Fig. 11b).",
       [](const RunMetrics& m) {
         return ratio(m.prefill_gpu_expert_pairs, m.prefill_expert_pairs);
       }},
      {"bd_attention_ms_per_token", "Decode breakdown: non-MoE GPU work per generated token.",
       [](const RunMetrics& m) { return per_token_ms(m.bd_attention_ns, m.decode_tokens); }},
      {"bd_predict_ms_per_token",
       "Decode breakdown: predictor GPU work per token (SMoE predict_time).",
       [](const RunMetrics& m) { return per_token_ms(m.bd_predict_ns, m.decode_tokens); }},
      {"bd_gpu_compute_ms_per_token",
       "Decode breakdown: routed experts on the GPU (SMoE gpu_compute_time).",
       [](const RunMetrics& m) { return per_token_ms(m.bd_gpu_compute_ns, m.decode_tokens); }},
      {"bd_wait_cache_ms_per_token",
       "Decode breakdown: GPU idle waiting for expert weights (SMoE wait_cache_time).",
       [](const RunMetrics& m) { return per_token_ms(m.bd_wait_cache_ns, m.decode_tokens); }},
      {"bd_shared_expert_ms_per_token",
       "Decode breakdown: shared experts (SMoE shared_expert_time).",
       [](const RunMetrics& m) { return per_token_ms(m.bd_shared_ns, m.decode_tokens); }},
      {"bd_cpu_other_ms_per_token",
       "Decode breakdown: CPU expert time not overlapped by the GPU (SMoE cpu_other_time).",
       [](const RunMetrics& m) { return per_token_ms(m.bd_cpu_other_ns, m.decode_tokens); }},
      {"moe_layer_steps",
       "MoE layer executions (MoE layers x steps); decision_*_ns x this = total host decision "
       "time.",
       [](const RunMetrics& m) { return J(m.moe_layer_steps); }},
      {"decision_placement_ns", "Host time of Placement per MoE layer call (measured).",
       [](const RunMetrics& m) { return decision(m, 0); }},
      {"decision_assigner_ns", "Host time of the Assigner per MoE layer and step (measured).",
       [](const RunMetrics& m) { return decision(m, 1); }},
      {"decision_cache_ns", "Host time of the CachePolicy per MoE layer and step (measured).",
       [](const RunMetrics& m) { return decision(m, 2); }},
      {"decision_prefetcher_ns",
       "Host time of the Prefetcher per MoE layer and step, predictions excluded (measured).",
       [](const RunMetrics& m) { return decision(m, 3); }},
      {"decision_predictor_ns",
       "Host time of the Predictor's predictions per MoE layer and step (measured; "
       "the simulated system runs them on the GPU, charged as predict time).",
       [](const RunMetrics& m) { return decision(m, 4); }},
      {"decision_deferral_ns", "Host time of Deferral per MoE layer and step (measured).",
       [](const RunMetrics& m) { return decision(m, 5); }},
      {"run_attention",
       "Where decode attention ran (\"gpu\" or \"cpu\"): strategy.residency.attention, or "
       "the setting a component chose before the run (residency_chosen_by).",
       [](const RunMetrics& m) { return J(m.run_attention); }},
      {"run_micro_batches",
       "Micro-batches per decode step the run used: strategy.residency.micro_batches, or the "
       "count a component chose before the run (a step with fewer sequences runs one per "
       "sequence).",
       [](const RunMetrics& m) { return J(m.run_micro_batches); }},
      {"run_cache_ratio",
       "Fraction of each layer's routed experts the GPU may hold in the run: "
       "strategy.residency.cache_ratio, or the share a component chose before the run.",
       [](const RunMetrics& m) { return J(m.run_cache_ratio); }},
      {"residency_chosen_by",
       "The component that chose the run's residency settings before the run (MoE-Lightning's "
       "or FlexGen's policy search), empty when the strategy's own settings ran.",
       [](const RunMetrics& m) { return J(m.residency_chosen_by); }},
      {"residency_estimate_ms_per_step",
       "That component's own estimate of a decode step when it chose (MoE-Lightning's "
       "hierarchical roofline model, or FlexGen's cost model), ms; null when none chose.",
       [](const RunMetrics& m) {
         return std::isfinite(m.residency_estimate_ns) ? J(m.residency_estimate_ns / 1e6)
                                                       : J(nullptr);
       }},
      {"residency_why",
       "That component's reason, in its words (for the policy search: the candidates, the "
       "choice, each lane's estimated time per layer and the GPU memory); empty when none chose.",
       [](const RunMetrics& m) { return J(m.residency_why); }},
      {"gpu_cache_slots", "Expert slots of the GPU cache (all layers).",
       [](const RunMetrics& m) { return J(m.gpu_cache_slots); }},
      {"gpu_mem_required_gib", "Non-expert weights + expert cache + KV cache + runtime reserve.",
       [](const RunMetrics& m) { return J(m.gpu_mem_required_gib); }},
      {"cost_table_clamps",
       "Measured cost-table lookups outside the table's range (answered with its end point).",
       [](const RunMetrics& m) { return J(m.cost_table_clamps); }},
      {"host_wall_s",
       "Host wall-clock time of the step loop (measured; differs between runs): on the real "
       "backend it includes "
       "the executed kernels, on the simulated backend it is the simulator's own speed.",
       [](const RunMetrics& m) { return J(m.host_wall_ns / 1e9); }},
  };
}

}  // namespace

const std::vector<RunMetrics::Field>& RunMetrics::fields() {
  static const std::vector<Field> f = [] {
    std::vector<Field> v = latency_fields();
    for (auto* group : {residency_fields, lane_fields, serving_fields}) {
      auto g = group();
      v.insert(v.end(), g.begin(), g.end());
    }
    return v;
  }();
  return f;
}

std::vector<Column> RunMetrics::columns() {
  std::vector<Column> c;
  for (const auto& f : fields()) c.push_back({f.name, f.doc});
  return c;
}

nlohmann::ordered_json RunMetrics::to_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& f : fields()) j[f.name] = f.value(*this);
  return j;
}

}  // namespace moebench
