// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Statistics of a routing workload (docs/WORKLOADS.md): the numbers the
// synthetic generator is calibrated on and the analysis scripts plot
// (SMoE Fig. 5/6, HybriMoE Fig. 3, DALI Fig. 8 and Table 8).

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace.h"

namespace moebench {

// A statistic the trace cannot give (cosines without gate inputs, reuse
// beyond the ranks a top-p trace stores, overlap of single-token
// sequences): NaN in the struct, null in JSON, "n/a" in text.
inline constexpr double kNA = std::numeric_limits<double>::quiet_NaN();

struct StatsOptions {
  int64_t batch = 8;        // sequences grouped for workload statistics (DALI used batch 8)
  int64_t reuse_ranks = 0;  // score ranks in the reuse curve (0 = min(E, 4k))
  // Gate reuse (cross-layer predictability): distances 1..max_distance, on at
  // most gate_reuse_tokens tokens (0 = every token): every n-th token, spread
  // over all sequences.
  int64_t gate_reuse_distance = 3;
  int64_t gate_reuse_tokens = 0;
  // The co-activation table (coact_top1), layers x experts^2 counters: off
  // where nothing reads it (the fit's objective), to save its cache misses.
  bool coactivation = true;
  // Which tokens count (papers report decode): "all", "prefill"
  // (each sequence's prompt) or "decode" (its generated tokens); consecutive
  // pairs are taken within the phase only.
  std::string phase = "all";
};

struct TraceStats {
  int64_t sequences = 0, tokens = 0, moe_layers = 0, experts = 0, top_k = 0;
  // (token, layer) rows that are holes (a logger dropped them; TraceInfo::
  // hole_rows): every statistic below leaves them out, and a consecutive
  // pair counts at a layer only where neither row is a hole.
  int64_t hole_rows = 0;
  bool has_probs = false, has_gate_inputs = false;

  // Per layer l (size L).
  std::vector<std::vector<int64_t>> counts;  // [L][E] activations over all tokens
  std::vector<double> load_max_over_mean;    // max_e counts / mean_e counts
  std::vector<double> load_min_over_mean;
  std::vector<double> overlap_frac;  // mean |top-k(t) & top-k(t+1)| / k, same sequence
  // The same per sequence (mean over its layers and consecutive pairs; NaN
  // for a sequence with fewer than two tokens in the phase): real logs vary
  // by sequence, and a pooled mean hides where a workload sits among them.
  std::vector<double> overlap_by_sequence;
  std::string phase = "all";  // StatsOptions::phase
  // The Mixtral paper's Table 5 (arXiv 2401.04088, Sec. 5), consecutive tokens
  // of the same sequence: P(first choice of t+1 == first choice of t), and
  // P(top-k(t) and top-k(t+1) share at least one expert) ("first or second
  // choice" for top-2; random routing gives 1/E and 1 - C(E-k,k)/C(E,k)).
  std::vector<double> repeat_first;
  std::vector<double> repeat_any;

  // Per adjacent pair (l, l+1) (size L-1).
  std::vector<double> cos_raw;  // mean cos(h_l, h_{l+1})
  std::vector<double>
      cos_residual;  // mean cos(h_l + r_l, h_{l+1}), r_l = mean(h_{l+1} - h_l) of this trace
  std::vector<double> coact_top1;  // mean over activations at l of max_e' P(e' at l+1 | e at l)

  // Gate reuse ("cross-layer predictability"): layer l+d's router (the
  // trace's gate weights, bias and selection rule) applied to layer l's gate
  // input predicts the top-k of layer l+d of the same token. Indexed
  // [d-1][l] by the layer l whose input is used (size L, NaN where l+d >= L):
  //   top1:   P(predicted first choice == actual first choice at l+d)
  //   recall: mean |predicted top-k & actual top-k| / k
  // Needs gate inputs and gate weights (empty otherwise).
  std::vector<std::vector<double>> gate_reuse_top1, gate_reuse_recall;
  int64_t gate_reuse_tokens = 0;  // tokens the gate-reuse statistics were measured on

  // Reuse probability by score rank at token t: P(that expert is activated
  // at t+1 in the same layer). Ranks 0..k-1 are the experts the router chose,
  // in its order; from k on the others by score, where a score of exactly 0
  // (16-bit probabilities underflow; top-p storage) gives no rank, so a rank
  // counts only the tokens where it exists. Needs probabilities.
  std::vector<double> reuse_by_rank;

  // The router's weights as a real router's hesitation shows them: per
  // rank j of the k chosen experts, its combine weight's share of
  // the k weights (w_j / sum w; for a renormalising router the weight
  // itself), over every token and layer: the median (from a histogram of
  // 1,000 bins, so to 0.001) and the share of rows below 0.01.
  std::vector<double> topk_weight_median, topk_weight_below_001;

  // Reuse distance: tokens since the same expert was last activated in the
  // same layer of the same sequence.
  std::vector<std::string> reuse_distance_buckets;
  std::vector<int64_t> reuse_distance_counts;

  // DALI Fig. 8: with sequences grouped in batches, the top-3 experts by
  // workload (tokens routed; ties broken by summed routing weights) at step
  // i; fraction that are again top-3 at step i+1, and the chance level 3/E.
  double high_workload_persistence = 0;
  double high_workload_chance = 0;
  // The heatmap of DALI Fig. 8 (top-3 at step i -> top-3 at step i+1, per
  // layer): fraction of its rows (experts seen at least 10 times) whose
  // diagonal cell is the row's largest, averaged over layers.
  double high_workload_diagonal_rows = 0;
  // A weaker reading of the same heatmap: fraction of rows whose diagonal
  // cell exceeds the mean of the row's other cells (averaged over layers).
  double high_workload_diagonal_above_mean = 0;
  // The heatmap's counts [L][E][E] (from, to), kept for models with at most
  // 64 experts (DALI Fig. 8 shows Mixtral's); empty otherwise.
  std::vector<int32_t> high_workload_heatmap;

  double mean(const std::vector<double>& v) const;  // ignores NaN entries; NaN if none
  // Mean over layers of gate reuse at distance d (1-based); NaN if not measured.
  double gate_reuse_top1_mean(int64_t d) const;
  double gate_reuse_recall_mean(int64_t d) const;
  nlohmann::ordered_json to_json() const;
  std::string to_text() const;
};

TraceStats compute_stats(const TraceSource& src, const StatsOptions& opt = {});

}  // namespace moebench
