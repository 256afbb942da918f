// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/stats/trace_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/util/error.h"
#include "core/util/memory.h"
#include "workloads/stats/accumulators.h"

namespace moebench {

namespace {

const std::vector<std::string>& distance_buckets() {
  static const std::vector<std::string> b = {"1",     "2",     "3-4",    "5-8",  "9-16",
                                             "17-32", "33-64", "65-128", ">128", "first use"};
  return b;
}

int distance_bucket(int64_t d) {
  if (d <= 1) return 0;
  if (d == 2) return 1;
  if (d <= 4) return 2;
  if (d <= 8) return 3;
  if (d <= 16) return 4;
  if (d <= 32) return 5;
  if (d <= 64) return 6;
  if (d <= 128) return 7;
  return 8;
}

// "n/a" for statistics the trace cannot give (NaN; JSON writes null).
std::string na(double v, const char* spec) {
  return std::isnan(v) ? std::string("n/a") : fmt::format(fmt::runtime(spec), v);
}
std::string na9(double v) {
  return fmt::format("{:>9}", na(v, "{:9.3f}"));
}

// The options' phase, checked, and the tables' size checked against the
// memory before any is allocated.
stats::Dims checked_dims(const TraceInfo& in, const StatsOptions& opt) {
  if (opt.phase != "all" && opt.phase != "prefill" && opt.phase != "decode") {
    throw Error(
        fmt::format("trace stats --phase: expected all, prefill or decode, found '{}'", opt.phase));
  }
  stats::Dims d;
  d.L = in.moe_layers;
  d.E = in.experts();
  d.k = in.top_k();
  d.H = in.h_trace;
  d.R = opt.reuse_ranks > 0 ? std::min(opt.reuse_ranks, d.E) : std::min(d.E, 4 * d.k);
  // The co-activation and transition tables grow with layers x experts^2.
  check_allocation(uint64_t(d.L) * uint64_t(d.E) * uint64_t(d.E) *
                           ((opt.coactivation ? sizeof(int64_t) : 0) + sizeof(int32_t)) +
                       uint64_t(std::max<int64_t>(d.H, 0)) * uint64_t(d.L) * sizeof(double),
                   fmt::format("trace statistics of model {} ({} MoE layers x {} experts^2)",
                               in.model_name, d.L, d.E));
  return d;
}

// One pass over a trace: sequences in batches, one token of each per step;
// it counts the activations and reuse distances itself and feeds every
// other statistic's accumulator (workloads/stats/accumulators.h).
class StatsPass {
 public:
  StatsPass(const TraceSource& src, const StatsOptions& opt);
  TraceStats run();

 private:
  void run_batch(int64_t b0);
  void count_token(stats::SeqState& ss, std::vector<std::vector<int64_t>>& step_load,
                   std::vector<std::vector<double>>& step_weight);
  void finish_load();

  const TraceSource& src_;
  const TraceInfo& in_;
  const stats::Dims d_;
  const int64_t S_, B_;
  const bool decode_only_, prefill_only_;
  TraceStats st_;
  unsigned fields_ = 0;
  stats::WeightShares weights_;
  stats::Consecutive consecutive_;
  stats::NextLayer next_layer_;
  stats::GateReuse gate_reuse_;
  stats::Persistence persistence_;
};

StatsPass::StatsPass(const TraceSource& src, const StatsOptions& opt)
    : src_(src),
      in_(src.info()),
      d_(checked_dims(in_, opt)),
      S_(int64_t(in_.sequences.size())),
      B_(std::max<int64_t>(1, opt.batch)),
      decode_only_(opt.phase == "decode"),
      prefill_only_(opt.phase == "prefill"),
      weights_(d_),
      consecutive_(d_, in_.probs != ProbsStorage::kNone),
      next_layer_(d_, opt.coactivation, d_.H > 0),
      gate_reuse_(d_, src, opt, d_.H > 0),
      persistence_(d_) {
  st_.phase = opt.phase;
  st_.sequences = S_;
  st_.moe_layers = d_.L;
  st_.experts = d_.E;
  st_.top_k = d_.k;
  st_.has_probs = in_.probs != ProbsStorage::kNone;
  st_.has_gate_inputs = d_.H > 0;
  fields_ = (st_.has_probs ? kProbs : 0u) | (st_.has_gate_inputs ? kGateInput : 0u);
  st_.counts.assign(d_.L, std::vector<int64_t>(d_.E, 0));
  st_.reuse_distance_buckets = distance_buckets();
  st_.reuse_distance_counts.assign(distance_buckets().size(), 0);
}

// One counted token of a sequence: every layer's rows, then the token-wide
// statistics; it becomes the sequence's previous token.
void StatsPass::count_token(stats::SeqState& ss, std::vector<std::vector<int64_t>>& step_load,
                            std::vector<std::vector<double>>& step_weight) {
  const TokenRecord& r = ss.rec;
  const int64_t L = d_.L, E = d_.E, k = d_.k;
  ++st_.tokens;
  for (int64_t l = 0; l < L; ++l) {
    const int32_t* ids = &r.ids[l * k];
    // A hole (a row the log dropped): nothing to count, and no pair
    // with the next token at this layer (prev_ids keeps the hole).
    if (ids[0] == kHoleId) {
      ++st_.hole_rows;
      continue;
    }
    weights_.count(r, l);
    for (int64_t j = 0; j < k; ++j) {
      ++st_.counts[l][ids[j]];
      ++step_load[l][ids[j]];
      step_weight[l][ids[j]] += r.weights[l * k + j];
      int64_t& last = ss.last_seen[l * E + ids[j]];
      const int bucket = last < 0 ? 9 : distance_bucket(r.pos - last);
      ++st_.reuse_distance_counts[bucket];
      last = r.pos;
    }
    if (ss.has_prev && ss.prev_ids[l * k] != kHoleId) consecutive_.count(ss, l, ids);
    if (l + 1 < L) next_layer_.count(r, l, ids);
  }
  gate_reuse_.token(r);
  next_layer_.token();
  ss.prev_ids = r.ids;
  if (st_.has_probs) consecutive_.rank(ss, r);
  ss.has_prev = true;
}

// Sequences b0 .. b0 + B - 1 step by step: one token of each per step.
void StatsPass::run_batch(int64_t b0) {
  const int64_t L = d_.L, E = d_.E;
  std::vector<stats::SeqState> batch;
  for (int64_t s = b0; s < std::min(S_, b0 + B_); ++s) {
    stats::SeqState ss;
    ss.seq = s;
    ss.prompt_len = in_.sequences[size_t(s)].prompt_len;
    ss.reader = src_.open(s, fields_);
    ss.last_seen.assign(L * E, -1);
    batch.push_back(std::move(ss));
  }
  persistence_.start_batch();
  while (true) {
    bool any = false, counted = false;
    std::vector<std::vector<int64_t>> step_load(L, std::vector<int64_t>(E, 0));
    std::vector<std::vector<double>> step_weight(L, std::vector<double>(E, 0.0));
    for (auto& ss : batch) {
      if (!ss.active) continue;
      if (!ss.reader->next(ss.rec)) {
        ss.active = false;
        continue;
      }
      any = true;
      const TokenRecord& r = ss.rec;
      if ((decode_only_ && r.pos < ss.prompt_len) || (prefill_only_ && r.pos >= ss.prompt_len))
        continue;
      counted = true;
      count_token(ss, step_load, step_weight);
    }
    if (!any) break;
    if (!counted) continue;  // a step of the other phase only
    persistence_.step(step_load, step_weight);
  }
  for (const auto& ss : batch) {
    st_.overlap_by_sequence.push_back(ss.overlap_n > 0 ? ss.overlap_sum / double(ss.overlap_n)
                                                       : kNA);
  }
}

// Per layer: load balance.
void StatsPass::finish_load() {
  st_.load_max_over_mean.resize(d_.L);
  st_.load_min_over_mean.resize(d_.L);
  for (int64_t l = 0; l < d_.L; ++l) {
    const auto& c = st_.counts[l];
    const double mean = double(std::accumulate(c.begin(), c.end(), int64_t(0))) / double(d_.E);
    st_.load_max_over_mean[l] =
        mean > 0 ? double(*std::max_element(c.begin(), c.end())) / mean : kNA;
    st_.load_min_over_mean[l] =
        mean > 0 ? double(*std::min_element(c.begin(), c.end())) / mean : kNA;
  }
}

TraceStats StatsPass::run() {
  for (int64_t b0 = 0; b0 < S_; b0 += B_) run_batch(b0);
  finish_load();
  consecutive_.finish(st_, in_);
  gate_reuse_.finish(st_);
  next_layer_.finish(st_, src_, S_);
  weights_.finish(st_);
  persistence_.finish(st_);
  return std::move(st_);
}

}  // namespace

TraceStats compute_stats(const TraceSource& src, const StatsOptions& opt) {
  return StatsPass(src, opt).run();
}

double TraceStats::mean(const std::vector<double>& v) const {
  double sum = 0;
  int64_t n = 0;
  for (double x : v) {
    if (std::isnan(x)) continue;
    sum += x;
    ++n;
  }
  return n > 0 ? sum / double(n) : kNA;
}

double TraceStats::gate_reuse_top1_mean(int64_t d) const {
  return d >= 1 && d <= int64_t(gate_reuse_top1.size()) ? mean(gate_reuse_top1[d - 1]) : kNA;
}
double TraceStats::gate_reuse_recall_mean(int64_t d) const {
  return d >= 1 && d <= int64_t(gate_reuse_recall.size()) ? mean(gate_reuse_recall[d - 1]) : kNA;
}

namespace {
// NaN (a statistic the trace cannot give) as JSON null.
nlohmann::ordered_json jnum(double v) {
  return std::isnan(v) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v);
}
nlohmann::ordered_json jvec(const std::vector<double>& v) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (double x : v) a.push_back(jnum(x));
  return a;
}
}  // namespace

nlohmann::ordered_json TraceStats::to_json() const {
  nlohmann::ordered_json j;
  j["sequences"] = sequences;
  j["tokens"] = tokens;
  j["hole_rows"] = hole_rows;
  j["moe_layers"] = moe_layers;
  j["routed_experts"] = experts;
  j["top_k"] = top_k;
  j["summary"] = {
      {"load_max_over_mean_mean", jnum(mean(load_max_over_mean))},
      {"load_min_over_mean_mean", jnum(mean(load_min_over_mean))},
      {"overlap_frac_mean", jnum(mean(overlap_frac))},
      {"cos_raw_mean", jnum(mean(cos_raw))},
      {"cos_residual_mean", jnum(mean(cos_residual))},
      {"coact_top1_mean", jnum(mean(coact_top1))},
      {"repeat_first_mean", jnum(mean(repeat_first))},
      {"repeat_any_mean", jnum(mean(repeat_any))},
      {"gate_reuse_top1_mean",
       {jnum(gate_reuse_top1_mean(1)), jnum(gate_reuse_top1_mean(2)),
        jnum(gate_reuse_top1_mean(3))}},
      {"gate_reuse_recall_mean",
       {jnum(gate_reuse_recall_mean(1)), jnum(gate_reuse_recall_mean(2)),
        jnum(gate_reuse_recall_mean(3))}},
      {"high_workload_persistence", jnum(high_workload_persistence)},
      {"high_workload_chance", jnum(high_workload_chance)},
      {"high_workload_diagonal_rows", jnum(high_workload_diagonal_rows)},
      {"high_workload_diagonal_above_mean", jnum(high_workload_diagonal_above_mean)},
  };
  j["per_layer"] = {
      {"load_max_over_mean", jvec(load_max_over_mean)},
      {"load_min_over_mean", jvec(load_min_over_mean)},
      {"overlap_frac", jvec(overlap_frac)},
      {"cos_raw", jvec(cos_raw)},
      {"cos_residual", jvec(cos_residual)},
      {"coact_top1", jvec(coact_top1)},
      {"repeat_first", jvec(repeat_first)},
      {"repeat_any", jvec(repeat_any)},
  };
  {
    nlohmann::ordered_json g;
    g["definition"] =
        "layer l+d's router applied to layer l's gate input; top1 = P(predicted first choice == "
        "actual first choice at l+d), recall = mean |predicted top-k & actual top-k| / k; "
        "index [d-1][l]";
    g["tokens"] = gate_reuse_tokens;
    nlohmann::ordered_json t1 = nlohmann::ordered_json::array(),
                           rc = nlohmann::ordered_json::array();
    for (const auto& v : gate_reuse_top1) t1.push_back(jvec(v));
    for (const auto& v : gate_reuse_recall) rc.push_back(jvec(v));
    g["top1"] = std::move(t1);
    g["recall"] = std::move(rc);
    j["gate_reuse"] = std::move(g);
  }
  j["reuse_by_rank"] = jvec(reuse_by_rank);
  j["phase"] = phase;
  j["topk_weight_median"] = jvec(topk_weight_median);
  j["topk_weight_below_001"] = jvec(topk_weight_below_001);
  j["overlap_by_sequence"] = jvec(overlap_by_sequence);
  j["reuse_distance"] = {{"buckets", reuse_distance_buckets}, {"counts", reuse_distance_counts}};
  j["popularity"] = counts;
  if (!high_workload_heatmap.empty()) {
    nlohmann::ordered_json h = nlohmann::ordered_json::array();
    const size_t E = size_t(experts);
    for (int64_t l = 0; l < moe_layers; ++l) {
      nlohmann::ordered_json m = nlohmann::ordered_json::array();
      for (size_t a = 0; a < E; ++a) {
        const auto* row = &high_workload_heatmap[(size_t(l) * E + a) * E];
        m.push_back(std::vector<int32_t>(row, row + E));
      }
      h.push_back(std::move(m));
    }
    j["high_workload_heatmap"] = std::move(h);
  }
  return j;
}

std::string TraceStats::to_text() const {
  std::vector<double> per_seq;
  for (double v : overlap_by_sequence)
    if (!std::isnan(v)) per_seq.push_back(v);
  std::sort(per_seq.begin(), per_seq.end());
  std::string out = fmt::format(
      "{} sequences, {} tokens{}, {} MoE layers, {} experts, top-{}{}\n{}\n"
      "layer  load max/mean  load min/mean  overlap/k  cos raw  cos resid  coact top1\n",
      sequences, tokens, phase == "all" ? std::string() : fmt::format(" ({} only)", phase),
      moe_layers, experts, top_k,
      hole_rows > 0
          ? fmt::format(
                "\nholes: {} of {} (token, layer) rows ({:.2f}%) have no routing (the log dropped "
                "them); every statistic below leaves them out",
                hole_rows, tokens * moe_layers,
                100.0 * double(hole_rows) / double(std::max<int64_t>(1, tokens * moe_layers)))
          : std::string(),
      per_seq.empty()
          ? std::string()
          : fmt::format(
                "consecutive overlap/k per sequence: min {:.3f}, median {:.3f}, max {:.3f} ({} "
                "sequences with two or more tokens)\n",
                per_seq.front(), per_seq[per_seq.size() / 2], per_seq.back(), per_seq.size()));
  auto at = [](const std::vector<double>& v, size_t i) {
    return i < v.size() ? na9(v[i]) : std::string("        -");
  };
  for (int64_t l = 0; l < moe_layers; ++l) {
    out += fmt::format("{:5d}  {:>13}  {:>13}  {}  {} {}  {}\n", l, na9(load_max_over_mean[l]),
                       na9(load_min_over_mean[l]), na9(overlap_frac[l]), at(cos_raw, l),
                       at(cos_residual, l), at(coact_top1, l));
  }
  out += fmt::format("\nmean   {:>13}  {:>13}  {}  {}  {}  {}\n", na9(mean(load_max_over_mean)),
                     na9(mean(load_min_over_mean)), na9(mean(overlap_frac)), na9(mean(cos_raw)),
                     na9(mean(cos_residual)), na9(mean(coact_top1)));
  out += fmt::format(
      "\nconsecutive tokens (Mixtral paper Table 5): first choice repeated {} (random {:.3f}), "
      "at least one expert shared {} (random {:.3f})\n",
      na(mean(repeat_first), "{:.3f}"), experts > 0 ? 1.0 / double(experts) : kNA,
      na(mean(repeat_any), "{:.3f}"), [&] {
        // 1 - C(E-k, k) / C(E, k)
        double none = 1;
        for (int64_t i = 0; i < top_k; ++i)
          none *= double(experts - top_k - i) / double(experts - i);
        return 1.0 - std::max(none, 0.0);
      }());
  if (!gate_reuse_top1.empty()) {
    const size_t D = gate_reuse_top1.size();
    out += fmt::format(
        "\ngate reuse (layer l+d's router on layer l's gate input; {} tokens): top-1 accuracy and "
        "recall of the top-{}\nlayer",
        gate_reuse_tokens, top_k);
    for (size_t d = 1; d <= D; ++d) out += fmt::format("   top1 d={}", d);
    for (size_t d = 1; d <= D; ++d) out += fmt::format(" recall d={}", d);
    out += "\n";
    for (int64_t l = 0; l < moe_layers; ++l) {
      out += fmt::format("{:5d}", l);
      for (size_t d = 0; d < D; ++d) out += fmt::format("  {}", na9(gate_reuse_top1[d][l]));
      for (size_t d = 0; d < D; ++d) out += fmt::format("  {}", na9(gate_reuse_recall[d][l]));
      out += "\n";
    }
    out += "mean ";
    for (size_t d = 1; d <= D; ++d)
      out += fmt::format("  {}", na9(gate_reuse_top1_mean(int64_t(d))));
    for (size_t d = 1; d <= D; ++d)
      out += fmt::format("  {}", na9(gate_reuse_recall_mean(int64_t(d))));
    out += "\n";
  } else {
    out += "\ngate reuse: n/a (needs gate inputs and gate weights)\n";
  }
  if (!reuse_by_rank.empty()) {
    out += "\nreuse probability by score rank (rank: P(activated at t+1)):\n";
    for (size_t q = 0; q < reuse_by_rank.size(); ++q) {
      out += fmt::format("  {:3d}: {:>5}{}", q, na(reuse_by_rank[q], "{:.3f}"),
                         (q + 1) % 8 == 0 ? "\n" : "");
    }
    out += "\n";
  }
  if (!topk_weight_median.empty() && !std::isnan(topk_weight_median[0])) {
    out += "\ncombine weight's share of the top-k by rank (median; rows below 0.01):\n";
    for (size_t j = 0; j < topk_weight_median.size(); ++j) {
      out += fmt::format("  {:3d}: {:.3f} ({:.1f}%)\n", j, topk_weight_median[j],
                         100.0 * topk_weight_below_001[j]);
    }
  }
  out += "\nreuse distance (tokens since the same expert was used in the same layer):\n";
  int64_t total = 0;
  for (auto c : reuse_distance_counts) total += c;
  for (size_t i = 0; i < reuse_distance_buckets.size(); ++i) {
    out += fmt::format("  {:>9}: {:6.2f}%\n", reuse_distance_buckets[i],
                       total ? 100.0 * double(reuse_distance_counts[i]) / double(total) : 0.0);
  }
  out += fmt::format(
      "\nhigh-workload persistence (top-3 by workload stays top-3 next step): {} (chance {:.3f});\n"
      "rows of the top-3 transition heatmap whose diagonal is the largest cell: {}; "
      "above the row's mean: {}\n",
      na(high_workload_persistence, "{:.3f}"), high_workload_chance,
      na(high_workload_diagonal_rows, "{:.3f}"), na(high_workload_diagonal_above_mean, "{:.3f}"));
  return out;
}

}  // namespace moebench
