// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/stats/trace_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/trace/routing.h"
#include "core/util/error.h"
#include "core/util/lanes16.h"
#include "core/util/memory.h"

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

double cosine(const float* a, const float* b, const float* add, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = double(a[i]) + (add ? double(add[i]) : 0.0);
    const double y = b[i];
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

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

// "n/a" for statistics the trace cannot give (NaN; JSON writes null).
std::string na(double v, const char* spec) {
  return std::isnan(v) ? std::string("n/a") : fmt::format(fmt::runtime(spec), v);
}
std::string na9(double v) {
  return fmt::format("{:>9}", na(v, "{:9.3f}"));
}

// One pass over a trace: the accumulators compute_stats fills token by
// token (per batch of sequences), then turns into TraceStats' fields.
class StatsPass {
 public:
  StatsPass(const TraceSource& src, const StatsOptions& opt);
  TraceStats run();

 private:
  static constexpr int64_t kWeightBins = 1000;
  void run_batch(int64_t b0);
  void count_token(SeqState& ss, std::vector<std::vector<int64_t>>& step_load,
                   std::vector<std::vector<double>>& step_weight);
  void count_weights(const TokenRecord& r, int64_t l);
  void count_pair(SeqState& ss, int64_t l, const int32_t* ids);
  void count_next_layer(const TokenRecord& r, int64_t l, const int32_t* ids);
  void count_gate_reuse(const TokenRecord& r);
  void rank_scores(SeqState& ss, const TokenRecord& r);
  void count_persistence(const std::vector<std::vector<int64_t>>& step_load,
                         const std::vector<std::vector<double>>& step_weight,
                         std::vector<std::vector<int32_t>>& prev_top,
                         std::vector<bool>& have_prev_top);
  void finish_layers();
  void finish_pairs();
  void finish_weights();
  void finish_transitions();
  void finish_cosines();

  const TraceSource& src_;
  const TraceInfo& in_;
  const StatsOptions& opt_;
  const int64_t L, E, k, H, S, B, R;
  const bool decode_only_, prefill_only_;
  TraceStats st;
  unsigned fields_ = 0;
  std::vector<double> overlap_sum;
  std::vector<int64_t> overlap_n;  // consecutive pairs per layer where neither row is a hole
  std::vector<int64_t> coact;
  std::vector<double> cos_sum, res_sum;
  int64_t cos_n = 0;
  std::vector<int64_t> reuse_hits, reuse_cnt;
  int64_t reuse_n = 0;
  int64_t persist_hits = 0, persist_n = 0;
  std::vector<int32_t> transitions;  // [l][from][to]
  std::vector<int64_t> repeat_first_n, repeat_any_n;
  // Gate reuse needs the routers in the gate-input space.
  const GateWeights* gates = nullptr;
  int64_t D = 0;
  std::vector<int64_t> reuse_top1_hits, reuse_recall_hits;
  std::vector<float> pred_logits, pred_probs, pred_w;
  std::vector<int32_t> pred_ids;
  std::vector<uint8_t> actual;
  RoutingScratch route_scratch;
  int64_t reuse_stride = 1, token_index = 0;
  std::vector<int32_t> ranked_all, chosen_pos;
  std::vector<int64_t> weight_hist, weight_low;
  int64_t weight_rows = 0;
  std::vector<uint8_t> active;
  std::vector<float> workload_f;
  std::vector<int32_t> top3;
  int64_t wk = 0;
};

StatsPass::StatsPass(const TraceSource& src, const StatsOptions& opt)
    : src_(src),
      in_(src.info()),
      opt_(opt),
      L(in_.moe_layers),
      E(in_.experts()),
      k(in_.top_k()),
      H(in_.h_trace),
      S(int64_t(in_.sequences.size())),
      B(std::max<int64_t>(1, opt.batch)),
      R(opt.reuse_ranks > 0 ? std::min(opt.reuse_ranks, E) : std::min(E, 4 * k)),
      decode_only_(opt.phase == "decode"),
      prefill_only_(opt.phase == "prefill") {
  if (opt.phase != "all" && opt.phase != "prefill" && opt.phase != "decode") {
    throw Error(
        fmt::format("trace stats --phase: expected all, prefill or decode, found '{}'", opt.phase));
  }
  st.phase = opt.phase;
  st.sequences = S;
  st.moe_layers = L;
  st.experts = E;
  st.top_k = k;
  st.has_probs = in_.probs != ProbsStorage::kNone;
  st.has_gate_inputs = H > 0;
  fields_ = (st.has_probs ? kProbs : 0u) | (st.has_gate_inputs ? kGateInput : 0u);
  // The co-activation and transition tables grow with layers x experts^2.
  check_allocation(uint64_t(L) * uint64_t(E) * uint64_t(E) *
                           ((opt.coactivation ? sizeof(int64_t) : 0) + sizeof(int32_t)) +
                       uint64_t(std::max<int64_t>(H, 0)) * uint64_t(L) * sizeof(double),
                   fmt::format("trace statistics of model {} ({} MoE layers x {} experts^2)",
                               in_.model_name, L, E));
  st.counts.assign(L, std::vector<int64_t>(E, 0));
  overlap_sum.assign(L, 0);
  overlap_n.assign(L, 0);
  coact.assign(L > 1 && opt.coactivation ? (L - 1) * E * E : 0, 0);
  cos_sum.assign(std::max<int64_t>(L - 1, 0), 0);
  res_sum.assign(H > 0 ? (L - 1) * H : 0, 0);
  reuse_hits.assign(R, 0);
  reuse_cnt.assign(R, 0);
  st.reuse_distance_buckets = distance_buckets();
  st.reuse_distance_counts.assign(distance_buckets().size(), 0);
  transitions.assign(size_t(L) * E * E, 0);
  repeat_first_n.assign(L, 0);
  repeat_any_n.assign(L, 0);
  gates = src.gate_weights();
  D = (st.has_gate_inputs && gates && gates->h == H && gates->layers == L && gates->experts == E)
          ? std::clamp<int64_t>(opt.gate_reuse_distance, 0, std::max<int64_t>(L - 1, 0))
          : 0;
  reuse_top1_hits.assign(D * L, 0);
  reuse_recall_hits.assign(D * L, 0);
  pred_logits.resize(E);
  pred_probs.resize(E);
  pred_w.resize(k);
  pred_ids.resize(k);
  actual.resize(E);
  // With a token budget, every stride-th token (spread over all sequences).
  const int64_t total_tokens = in_.total_tokens();
  reuse_stride =
      opt.gate_reuse_tokens > 0
          ? std::max<int64_t>(1, (total_tokens + opt.gate_reuse_tokens - 1) / opt.gate_reuse_tokens)
          : 1;
  ranked_all.resize(E);
  chosen_pos.resize(E);
  weight_hist.assign(size_t(k * kWeightBins), 0);
  weight_low.assign(size_t(k), 0);
  active.resize(E);
  workload_f.resize(E);
  top3.resize(3);
  wk = std::min<int64_t>(3, E);
}

// The shares of each rank's combine weight (a row whose weights sum to 0 counts nowhere).
void StatsPass::count_weights(const TokenRecord& r, int64_t l) {
  double z = 0;
  for (int64_t j = 0; j < k; ++j) z += r.weights[l * k + j];
  if (z <= 0) return;
  for (int64_t j = 0; j < k; ++j) {
    const double share = double(r.weights[l * k + j]) / z;
    ++weight_hist[size_t(j) * kWeightBins +
                  size_t(std::clamp<int64_t>(int64_t(share * kWeightBins), 0, kWeightBins - 1))];
    weight_low[size_t(j)] += share < 0.01 ? 1 : 0;
  }
  ++weight_rows;
}

// Layer l of a token against the same sequence's previous token: overlap,
// repetition, and the reuse of the previous token's ranked scores.
void StatsPass::count_pair(SeqState& ss, int64_t l, const int32_t* ids) {
  const int32_t* p = &ss.prev_ids[l * k];
  ++overlap_n[l];
  ++ss.overlap_n;
  if (st.has_probs) ++reuse_n;
  int64_t common = 0;
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t i = 0; i < k; ++i) common += ids[j] == p[i];
  }
  overlap_sum[l] += double(common) / double(k);
  ss.overlap_sum += double(common) / double(k);
  repeat_first_n[l] += ids[0] == p[0];
  repeat_any_n[l] += common > 0;
  if (!st.has_probs) return;
  std::fill(active.begin(), active.end(), 0);
  for (int64_t j = 0; j < k; ++j) active[ids[j]] = 1;
  const int32_t* pr = &ss.prev_ranked[l * R];
  for (int64_t q = 0; q < R; ++q) {
    if (pr[q] < 0) continue;  // no rank: a tie among zero scores
    ++reuse_cnt[q];
    reuse_hits[q] += active[pr[q]];
  }
}

// Layer l against layer l + 1 of the same token: co-activation, the gate
// inputs' cosine and their residual.
void StatsPass::count_next_layer(const TokenRecord& r, int64_t l, const int32_t* ids) {
  if (!coact.empty() && r.ids[(l + 1) * k] != kHoleId) {
    const int32_t* nx = &r.ids[(l + 1) * k];
    int64_t* m = &coact[l * E * E];
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t i = 0; i < k; ++i) ++m[int64_t(ids[j]) * E + nx[i]];
    }
  }
  if (st.has_gate_inputs) {
    const float* h0 = &r.gate_input[l * H];
    const float* h1 = &r.gate_input[(l + 1) * H];
    cos_sum[l] += cosine(h0, h1, nullptr, H);
    double* rs = &res_sum[l * H];
    for (int64_t i = 0; i < H; ++i) rs[i] += double(h1[i]) - double(h0[i]);
  }
}

// Gate reuse: layer j's router applied to layer j - d's gate input, against
// the experts layer j chose.
void StatsPass::count_gate_reuse(const TokenRecord& r) {
  ++st.gate_reuse_tokens;
  for (int64_t j = 0; j < L; ++j) {
    const int32_t* truth = &r.ids[j * k];
    std::fill(actual.begin(), actual.end(), 0);
    for (int64_t q = 0; q < k; ++q) actual[truth[q]] = 1;
    for (int64_t d = 1; d <= D && j - d >= 0; ++d) {
      const int64_t l = j - d;  // the layer whose gate input predicts layer j
      lanes::gemv(gates->w(j), gates->b(j), &r.gate_input[l * H], E, H, pred_logits.data());
      const float* sel = gates->selection_bias.empty() ? nullptr : gates->sel(j);
      route(in_.routing, pred_logits.data(), sel, pred_ids.data(), pred_w.data(), pred_probs.data(),
            route_scratch);
      reuse_top1_hits[(d - 1) * L + l] += pred_ids[0] == truth[0];
      for (int64_t q = 0; q < k; ++q) reuse_recall_hits[(d - 1) * L + l] += actual[pred_ids[q]];
    }
  }
}

// The token's experts ranked by score per layer, for the next token's reuse
// curve: ties broken towards the experts the router chose (in its order),
// then by id; an expert the router did not choose with a score of exactly 0
// gets no rank (with 16-bit probabilities the second expert's score is
// often 0, and sorting put another zero-score expert at rank 1).
void StatsPass::rank_scores(SeqState& ss, const TokenRecord& r) {
  ss.prev_ranked.resize(L * R);
  for (int64_t l = 0; l < L; ++l) {
    if (r.ids[l * k] == kHoleId) continue;  // a hole: never read (no pair with it)
    const float* p = &r.probs[l * E];
    const int32_t* chosen = &r.ids[l * k];
    std::fill(chosen_pos.begin(), chosen_pos.end(), int32_t(k));
    for (int64_t j = 0; j < k; ++j) chosen_pos[chosen[j]] = int32_t(j);
    std::iota(ranked_all.begin(), ranked_all.end(), 0);
    std::partial_sort(ranked_all.begin(), ranked_all.begin() + R, ranked_all.end(),
                      [&](int32_t a, int32_t b) {
                        if (p[a] != p[b]) return p[a] > p[b];
                        if (chosen_pos[a] != chosen_pos[b]) return chosen_pos[a] < chosen_pos[b];
                        return a < b;
                      });
    int32_t* out = &ss.prev_ranked[l * R];
    for (int64_t q = 0; q < R; ++q) {
      const int32_t e = ranked_all[q];
      out[q] = p[e] > 0.0f || chosen_pos[e] < k ? e : -1;
    }
  }
}

// One counted token of a sequence: every layer's rows, then the token-wide
// statistics; it becomes the sequence's previous token.
void StatsPass::count_token(SeqState& ss, std::vector<std::vector<int64_t>>& step_load,
                            std::vector<std::vector<double>>& step_weight) {
  const TokenRecord& r = ss.rec;
  ++st.tokens;
  for (int64_t l = 0; l < L; ++l) {
    const int32_t* ids = &r.ids[l * k];
    // A hole (a row the log dropped): nothing to count, and no pair
    // with the next token at this layer (prev_ids keeps the hole).
    if (ids[0] == kHoleId) {
      ++st.hole_rows;
      continue;
    }
    count_weights(r, l);
    for (int64_t j = 0; j < k; ++j) {
      ++st.counts[l][ids[j]];
      ++step_load[l][ids[j]];
      step_weight[l][ids[j]] += r.weights[l * k + j];
      int64_t& last = ss.last_seen[l * E + ids[j]];
      const int bucket = last < 0 ? 9 : distance_bucket(r.pos - last);
      ++st.reuse_distance_counts[bucket];
      last = r.pos;
    }
    if (ss.has_prev && ss.prev_ids[l * k] != kHoleId) count_pair(ss, l, ids);
    if (l + 1 < L) count_next_layer(r, l, ids);
  }
  if (D > 0 && token_index++ % reuse_stride == 0) count_gate_reuse(r);
  if (st.has_gate_inputs && L > 1) ++cos_n;
  ss.prev_ids = r.ids;
  if (st.has_probs) rank_scores(ss, r);
  ss.has_prev = true;
}

// High-workload persistence (DALI Fig. 8): each layer's three most loaded
// experts of this step against the previous step's. Workload = tokens
// routed; ties broken by the summed routing weights (a continuous
// quantity), not by expert id.
void StatsPass::count_persistence(const std::vector<std::vector<int64_t>>& step_load,
                                  const std::vector<std::vector<double>>& step_weight,
                                  std::vector<std::vector<int32_t>>& prev_top,
                                  std::vector<bool>& have_prev_top) {
  for (int64_t l = 0; l < L; ++l) {
    double wmax = 1e-12;
    for (int64_t e = 0; e < E; ++e) wmax = std::max(wmax, step_weight[l][e]);
    for (int64_t e = 0; e < E; ++e) {
      workload_f[e] = float(double(step_load[l][e]) + 0.5 * step_weight[l][e] / wmax);
    }
    top_k_indices(workload_f.data(), E, wk, nullptr, top3.data());
    if (have_prev_top[l]) {
      for (int64_t a = 0; a < wk; ++a) {
        for (int64_t c = 0; c < wk; ++c) {
          persist_hits += prev_top[l][a] == top3[c];
          ++transitions[(size_t(l) * E + prev_top[l][a]) * E + top3[c]];
        }
      }
      persist_n += wk;
    }
    std::copy(top3.begin(), top3.begin() + wk, prev_top[l].begin());
    have_prev_top[l] = true;
  }
}

// Sequences b0 .. b0 + B - 1 step by step: one token of each per step.
void StatsPass::run_batch(int64_t b0) {
  std::vector<SeqState> batch;
  for (int64_t s = b0; s < std::min(S, b0 + B); ++s) {
    SeqState ss;
    ss.seq = s;
    ss.prompt_len = in_.sequences[size_t(s)].prompt_len;
    ss.reader = src_.open(s, fields_);
    ss.last_seen.assign(L * E, -1);
    batch.push_back(std::move(ss));
  }
  std::vector<bool> have_prev_top(L, false);
  std::vector<std::vector<int32_t>> prev_top(L, std::vector<int32_t>(wk));
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
    count_persistence(step_load, step_weight, prev_top, have_prev_top);
  }
  for (const auto& ss : batch) {
    st.overlap_by_sequence.push_back(ss.overlap_n > 0 ? ss.overlap_sum / double(ss.overlap_n)
                                                      : kNA);
  }
}

// Per layer: load balance, overlap with the previous token, repetition.
void StatsPass::finish_layers() {
  st.load_max_over_mean.resize(L);
  st.load_min_over_mean.resize(L);
  st.overlap_frac.resize(L);
  for (int64_t l = 0; l < L; ++l) {
    const auto& c = st.counts[l];
    const double mean = double(std::accumulate(c.begin(), c.end(), int64_t(0))) / double(E);
    st.load_max_over_mean[l] =
        mean > 0 ? double(*std::max_element(c.begin(), c.end())) / mean : kNA;
    st.load_min_over_mean[l] =
        mean > 0 ? double(*std::min_element(c.begin(), c.end())) / mean : kNA;
    st.overlap_frac[l] = overlap_n[l] > 0 ? overlap_sum[l] / double(overlap_n[l]) : kNA;
  }
  st.repeat_first.resize(L);
  st.repeat_any.resize(L);
  for (int64_t l = 0; l < L; ++l) {
    st.repeat_first[l] = overlap_n[l] > 0 ? double(repeat_first_n[l]) / double(overlap_n[l]) : kNA;
    st.repeat_any[l] = overlap_n[l] > 0 ? double(repeat_any_n[l]) / double(overlap_n[l]) : kNA;
  }
}

// Gate reuse by distance, co-activation, reuse by score rank.
void StatsPass::finish_pairs() {
  if (D > 0 && st.gate_reuse_tokens > 0) {
    st.gate_reuse_top1.assign(D, std::vector<double>(L, kNA));
    st.gate_reuse_recall.assign(D, std::vector<double>(L, kNA));
    const double n = double(st.gate_reuse_tokens);
    for (int64_t d = 1; d <= D; ++d) {
      for (int64_t l = 0; l + d < L; ++l) {
        st.gate_reuse_top1[d - 1][l] = double(reuse_top1_hits[(d - 1) * L + l]) / n;
        st.gate_reuse_recall[d - 1][l] =
            double(reuse_recall_hits[(d - 1) * L + l]) / (n * double(k));
      }
    }
  }
  if (L > 1 && !coact.empty()) {
    st.coact_top1.resize(L - 1);
    for (int64_t l = 0; l + 1 < L; ++l) {
      int64_t best = 0, total = 0;
      for (int64_t e = 0; e < E; ++e) {
        const int64_t* row = &coact[(l * E + e) * E];
        best += *std::max_element(row, row + E);
        total += st.counts[l][e];
      }
      st.coact_top1[l] = total > 0 ? double(best) / double(total) : kNA;
    }
  }
  if (st.has_probs && reuse_n > 0) {
    st.reuse_by_rank.resize(R);
    // A top-p trace knows the ranks below p only; the rest are zeros, not scores.
    const int64_t known = in_.probs == ProbsStorage::kTopP ? std::min(R, in_.top_p) : R;
    for (int64_t q = 0; q < R; ++q)
      st.reuse_by_rank[q] =
          q < known && reuse_cnt[q] > 0 ? double(reuse_hits[q]) / double(reuse_cnt[q]) : kNA;
  }
}

// Each rank's combine-weight median (its bin's centre) and share below 0.01.
void StatsPass::finish_weights() {
  st.topk_weight_median.assign(size_t(k), kNA);
  st.topk_weight_below_001.assign(size_t(k), kNA);
  if (weight_rows == 0) return;
  for (int64_t j = 0; j < k; ++j) {
    int64_t acc = 0, b = 0;
    const int64_t* h = &weight_hist[size_t(j) * kWeightBins];
    while (b < kWeightBins - 1 && 2 * (acc + h[b]) < weight_rows) acc += h[b++];
    st.topk_weight_median[size_t(j)] =
        (double(b) + 0.5) / double(kWeightBins);  // the median's bin centre
    st.topk_weight_below_001[size_t(j)] = double(weight_low[size_t(j)]) / double(weight_rows);
  }
}

// High-workload persistence and its transition table's diagonal.
void StatsPass::finish_transitions() {
  st.high_workload_persistence = persist_n > 0 ? double(persist_hits) / double(persist_n) : kNA;
  st.high_workload_chance = double(wk) / double(E);
  double frac_sum = 0, above_sum = 0;
  int64_t layers_counted = 0;
  for (int64_t l = 0; l < L; ++l) {
    int64_t rows = 0, diag = 0, above = 0;
    for (int64_t e = 0; e < E; ++e) {
      const int32_t* row = &transitions[(size_t(l) * E + e) * E];
      int64_t total = 0;
      int32_t mx = 0;
      for (int64_t c = 0; c < E; ++c) {
        total += row[c];
        mx = std::max(mx, row[c]);
      }
      if (total < 10) continue;
      ++rows;
      diag += row[e] == mx;
      above += E > 1 && double(row[e]) > double(total - row[e]) / double(E - 1);
    }
    if (rows > 0) {
      frac_sum += double(diag) / double(rows);
      above_sum += double(above) / double(rows);
      ++layers_counted;
    }
  }
  st.high_workload_diagonal_rows = layers_counted ? frac_sum / double(layers_counted) : kNA;
  st.high_workload_diagonal_above_mean = layers_counted ? above_sum / double(layers_counted) : kNA;
  if (E <= 64) st.high_workload_heatmap = transitions;
}

// The gate inputs' cosines between consecutive layers, raw and (a second
// pass) after adding this trace's mean residual r_l.
void StatsPass::finish_cosines() {
  if (!(st.has_gate_inputs && L > 1 && cos_n > 0)) return;
  st.cos_raw.resize(L - 1);
  for (int64_t l = 0; l + 1 < L; ++l) st.cos_raw[l] = cos_sum[l] / double(cos_n);
  std::vector<float> res(res_sum.size());
  for (size_t i = 0; i < res.size(); ++i) res[i] = float(res_sum[i] / double(cos_n));
  std::vector<double> corr(L - 1, 0);
  TokenRecord rec;
  for (int64_t s = 0; s < S; ++s) {
    auto reader = src_.open(s, kGateInput | kNoRouting);
    while (reader->next(rec)) {
      for (int64_t l = 0; l + 1 < L; ++l) {
        corr[l] += cosine(&rec.gate_input[l * H], &rec.gate_input[(l + 1) * H], &res[l * H], H);
      }
    }
  }
  st.cos_residual.resize(L - 1);
  for (int64_t l = 0; l + 1 < L; ++l) st.cos_residual[l] = corr[l] / double(cos_n);
}

TraceStats StatsPass::run() {
  for (int64_t b0 = 0; b0 < S; b0 += B) run_batch(b0);
  finish_layers();
  finish_pairs();
  finish_weights();
  finish_transitions();
  finish_cosines();
  return std::move(st);
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
