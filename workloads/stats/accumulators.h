// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The accumulators of one pass over a trace (compute_stats, trace_stats.cc):
// each counts one statistic as the pass reads the tokens and writes its
// fields of TraceStats at the end. The pass owns the reading (sequences in
// batches, step by step), the activation counts and the reuse distances.

#include <cstdint>
#include <memory>
#include <vector>

#include "core/trace/routing.h"
#include "core/trace/trace.h"
#include "workloads/stats/trace_stats.h"

namespace moebench::stats {

// The trace's shape: MoE layers, experts per layer, experts per token,
// gate-input width, and the score ranks of the reuse curve.
struct Dims {
  int64_t L = 0, E = 0, k = 0, H = 0, R = 0;
};

// One sequence being read: its reader, its current and previous token.
struct SeqState {
  int64_t seq = 0, prompt_len = 0;
  double overlap_sum = 0;  // this sequence's consecutive overlaps (summed over layers)
  int64_t overlap_n = 0;   // its consecutive pairs' (pair, layer) rows, holes left out
  std::unique_ptr<SequenceReader> reader;
  TokenRecord rec;
  bool has_prev = false;
  std::vector<int32_t> prev_ids;     // [L][k]
  std::vector<int32_t> prev_ranked;  // [L][R]; -1: a rank among tied zero scores (no rank)
  std::vector<int64_t> last_seen;    // [L][E], -1 = never
  bool active = true;
};

// The cosine of a (+ add, when given) and b, over n values.
double cosine(const float* a, const float* b, const float* add, int64_t n);

// Each rank's combine-weight share (w_j / sum w): a histogram of 1,000 bins
// for the median, and the share below 0.01.
class WeightShares {
 public:
  explicit WeightShares(const Dims& d);
  void count(const TokenRecord& r, int64_t l);
  void finish(TraceStats& st) const;  // topk_weight_median, topk_weight_below_001

 private:
  static constexpr int64_t kBins = 1000;
  int64_t k_;
  std::vector<int64_t> hist_, low_;
  int64_t rows_ = 0;
};

// A sequence's consecutive tokens at one layer: how many experts they share,
// whether the first choice or any repeats, and (with probabilities) whether
// the previous token's experts, ranked by score, are activated again.
class Consecutive {
 public:
  Consecutive(const Dims& d, bool probs);
  // Layer l of the sequence's token against its previous token.
  void count(SeqState& ss, int64_t l, const int32_t* ids);
  // The token's experts ranked by score per layer, for the next token.
  void rank(SeqState& ss, const TokenRecord& r);
  // overlap_frac, repeat_first, repeat_any (per layer), reuse_by_rank.
  void finish(TraceStats& st, const TraceInfo& in) const;

 private:
  Dims d_;
  bool probs_;
  std::vector<double> overlap_sum_;
  std::vector<int64_t> overlap_n_;  // consecutive pairs per layer where neither row is a hole
  std::vector<int64_t> repeat_first_n_, repeat_any_n_;
  std::vector<int64_t> reuse_hits_, reuse_cnt_;
  int64_t reuse_n_ = 0;
  std::vector<uint8_t> active_;                   // scratch: the token's experts
  std::vector<int32_t> ranked_all_, chosen_pos_;  // scratch of rank()
};

// Layer l against layer l + 1 of the same token: which experts follow which
// (co-activation), and the gate inputs' cosine and residual.
class NextLayer {
 public:
  NextLayer(const Dims& d, bool coactivation, bool gate_inputs);
  void count(const TokenRecord& r, int64_t l, const int32_t* ids);
  void token();  // one counted token (the cosines' denominator)
  // coact_top1 (reads st.counts), cos_raw, and cos_residual, which reads the
  // trace's gate inputs a second time with this trace's mean residual added.
  void finish(TraceStats& st, const TraceSource& src, int64_t sequences) const;

 private:
  Dims d_;
  bool gate_inputs_;
  std::vector<int64_t> coact_;  // [L-1][E][E]
  std::vector<double> cos_sum_, res_sum_;
  int64_t cos_n_ = 0;
};

// Gate reuse: layer j's router applied to the gate input of layer j - d,
// against the experts layer j chose, on every stride-th token.
class GateReuse {
 public:
  GateReuse(const Dims& d, const TraceSource& src, const StatsOptions& opt, bool gate_inputs);
  void token(const TokenRecord& r);
  void finish(TraceStats& st) const;  // gate_reuse_top1, gate_reuse_recall, gate_reuse_tokens

 private:
  void count(const TokenRecord& r);
  Dims d_;
  RoutingConfig routing_;
  const GateWeights* gates_ = nullptr;
  int64_t D_ = 0;  // the longest distance (0: not measured)
  int64_t stride_ = 1, index_ = 0, tokens_ = 0;
  std::vector<int64_t> top1_hits_, recall_hits_;  // [d-1][l]
  std::vector<float> logits_, probs_, w_;
  std::vector<int32_t> ids_;
  std::vector<uint8_t> actual_;
  RoutingScratch scratch_;
};

// High-workload persistence (DALI Fig. 8): each layer's three most loaded
// experts of a step against the previous step's, and the transition table.
class Persistence {
 public:
  explicit Persistence(const Dims& d);
  void start_batch();  // a new batch: no previous step
  // One step of the batch: tokens routed and summed weights per [l][e].
  void step(const std::vector<std::vector<int64_t>>& load,
            const std::vector<std::vector<double>>& weight);
  // high_workload_persistence, _chance, _diagonal_rows, _diagonal_above_mean, _heatmap.
  void finish(TraceStats& st) const;

 private:
  Dims d_;
  int64_t wk_;                        // experts compared per step: 3 (fewer with fewer experts)
  std::vector<int32_t> transitions_;  // [l][from][to]
  int64_t hits_ = 0, n_ = 0;
  std::vector<std::vector<int32_t>> prev_top_;
  std::vector<bool> have_prev_top_;
  std::vector<float> workload_;  // scratch
  std::vector<int32_t> top_;     // scratch
};

}  // namespace moebench::stats
