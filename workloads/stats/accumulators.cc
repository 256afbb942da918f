// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/stats/accumulators.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/util/lanes16.h"

namespace moebench::stats {

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

// ------------------------------------------------------------ WeightShares

WeightShares::WeightShares(const Dims& d)
    : k_(d.k), hist_(size_t(d.k * kBins), 0), low_(size_t(d.k), 0) {}

// A row whose weights sum to 0 counts nowhere.
void WeightShares::count(const TokenRecord& r, int64_t l) {
  double z = 0;
  for (int64_t j = 0; j < k_; ++j) z += r.weights[l * k_ + j];
  if (z <= 0) return;
  for (int64_t j = 0; j < k_; ++j) {
    const double share = double(r.weights[l * k_ + j]) / z;
    ++hist_[size_t(j) * kBins + size_t(std::clamp<int64_t>(int64_t(share * kBins), 0, kBins - 1))];
    low_[size_t(j)] += share < 0.01 ? 1 : 0;
  }
  ++rows_;
}

// Each rank's median (its bin's centre) and share below 0.01.
void WeightShares::finish(TraceStats& st) const {
  st.topk_weight_median.assign(size_t(k_), kNA);
  st.topk_weight_below_001.assign(size_t(k_), kNA);
  if (rows_ == 0) return;
  for (int64_t j = 0; j < k_; ++j) {
    int64_t acc = 0, b = 0;
    const int64_t* h = &hist_[size_t(j) * kBins];
    while (b < kBins - 1 && 2 * (acc + h[b]) < rows_) acc += h[b++];
    st.topk_weight_median[size_t(j)] = (double(b) + 0.5) / double(kBins);
    st.topk_weight_below_001[size_t(j)] = double(low_[size_t(j)]) / double(rows_);
  }
}

// ------------------------------------------------------------ Consecutive

Consecutive::Consecutive(const Dims& d, bool probs)
    : d_(d),
      probs_(probs),
      overlap_sum_(size_t(d.L), 0),
      overlap_n_(size_t(d.L), 0),
      repeat_first_n_(size_t(d.L), 0),
      repeat_any_n_(size_t(d.L), 0),
      reuse_hits_(size_t(d.R), 0),
      reuse_cnt_(size_t(d.R), 0),
      active_(size_t(d.E)),
      ranked_all_(size_t(d.E)),
      chosen_pos_(size_t(d.E)) {}

void Consecutive::count(SeqState& ss, int64_t l, const int32_t* ids) {
  const int64_t k = d_.k;
  const int32_t* p = &ss.prev_ids[l * k];
  ++overlap_n_[l];
  ++ss.overlap_n;
  if (probs_) ++reuse_n_;
  int64_t common = 0;
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t i = 0; i < k; ++i) common += ids[j] == p[i];
  }
  overlap_sum_[l] += double(common) / double(k);
  ss.overlap_sum += double(common) / double(k);
  repeat_first_n_[l] += ids[0] == p[0];
  repeat_any_n_[l] += common > 0;
  if (!probs_) return;
  std::fill(active_.begin(), active_.end(), 0);
  for (int64_t j = 0; j < k; ++j) active_[ids[j]] = 1;
  const int32_t* pr = &ss.prev_ranked[l * d_.R];
  for (int64_t q = 0; q < d_.R; ++q) {
    if (pr[q] < 0) continue;  // no rank: a tie among zero scores
    ++reuse_cnt_[q];
    reuse_hits_[q] += active_[pr[q]];
  }
}

// Ties broken towards the experts the router chose (in its order), then by
// id; an expert the router did not choose with a score of exactly 0 gets no
// rank (with 16-bit probabilities the second expert's score is often 0, and
// sorting put another zero-score expert at rank 1).
void Consecutive::rank(SeqState& ss, const TokenRecord& r) {
  const int64_t L = d_.L, E = d_.E, k = d_.k, R = d_.R;
  ss.prev_ranked.resize(L * R);
  for (int64_t l = 0; l < L; ++l) {
    if (r.ids[l * k] == kHoleId) continue;  // a hole: never read (no pair with it)
    const float* p = &r.probs[l * E];
    const int32_t* chosen = &r.ids[l * k];
    std::fill(chosen_pos_.begin(), chosen_pos_.end(), int32_t(k));
    for (int64_t j = 0; j < k; ++j) chosen_pos_[chosen[j]] = int32_t(j);
    std::iota(ranked_all_.begin(), ranked_all_.end(), 0);
    std::partial_sort(ranked_all_.begin(), ranked_all_.begin() + R, ranked_all_.end(),
                      [&](int32_t a, int32_t b) {
                        if (p[a] != p[b]) return p[a] > p[b];
                        if (chosen_pos_[a] != chosen_pos_[b])
                          return chosen_pos_[a] < chosen_pos_[b];
                        return a < b;
                      });
    int32_t* out = &ss.prev_ranked[l * R];
    for (int64_t q = 0; q < R; ++q) {
      const int32_t e = ranked_all_[q];
      out[q] = p[e] > 0.0f || chosen_pos_[e] < k ? e : -1;
    }
  }
}

void Consecutive::finish(TraceStats& st, const TraceInfo& in) const {
  const int64_t L = d_.L, R = d_.R;
  st.overlap_frac.resize(L);
  for (int64_t l = 0; l < L; ++l) {
    st.overlap_frac[l] = overlap_n_[l] > 0 ? overlap_sum_[l] / double(overlap_n_[l]) : kNA;
  }
  st.repeat_first.resize(L);
  st.repeat_any.resize(L);
  for (int64_t l = 0; l < L; ++l) {
    const double n = double(overlap_n_[l]);
    st.repeat_first[l] = overlap_n_[l] > 0 ? double(repeat_first_n_[l]) / n : kNA;
    st.repeat_any[l] = overlap_n_[l] > 0 ? double(repeat_any_n_[l]) / n : kNA;
  }
  if (probs_ && reuse_n_ > 0) {
    st.reuse_by_rank.resize(R);
    // A top-p trace knows the ranks below p only; the rest are zeros, not scores.
    const int64_t known = in.probs == ProbsStorage::kTopP ? std::min(R, in.top_p) : R;
    for (int64_t q = 0; q < R; ++q)
      st.reuse_by_rank[q] =
          q < known && reuse_cnt_[q] > 0 ? double(reuse_hits_[q]) / double(reuse_cnt_[q]) : kNA;
  }
}

// ------------------------------------------------------------ NextLayer

NextLayer::NextLayer(const Dims& d, bool coactivation, bool gate_inputs)
    : d_(d),
      gate_inputs_(gate_inputs),
      coact_(d.L > 1 && coactivation ? size_t((d.L - 1) * d.E * d.E) : 0, 0),
      cos_sum_(size_t(std::max<int64_t>(d.L - 1, 0)), 0),
      res_sum_(d.H > 0 ? size_t((d.L - 1) * d.H) : 0, 0) {}

void NextLayer::count(const TokenRecord& r, int64_t l, const int32_t* ids) {
  const int64_t E = d_.E, k = d_.k, H = d_.H;
  if (!coact_.empty() && r.ids[(l + 1) * k] != kHoleId) {
    const int32_t* nx = &r.ids[(l + 1) * k];
    int64_t* m = &coact_[l * E * E];
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t i = 0; i < k; ++i) ++m[int64_t(ids[j]) * E + nx[i]];
    }
  }
  if (gate_inputs_) {
    const float* h0 = &r.gate_input[l * H];
    const float* h1 = &r.gate_input[(l + 1) * H];
    cos_sum_[l] += cosine(h0, h1, nullptr, H);
    double* rs = &res_sum_[l * H];
    for (int64_t i = 0; i < H; ++i) rs[i] += double(h1[i]) - double(h0[i]);
  }
}

void NextLayer::token() {
  if (gate_inputs_ && d_.L > 1) ++cos_n_;
}

void NextLayer::finish(TraceStats& st, const TraceSource& src, int64_t sequences) const {
  const int64_t L = d_.L, E = d_.E, H = d_.H;
  if (L > 1 && !coact_.empty()) {
    st.coact_top1.resize(L - 1);
    for (int64_t l = 0; l + 1 < L; ++l) {
      int64_t best = 0, total = 0;
      for (int64_t e = 0; e < E; ++e) {
        const int64_t* row = &coact_[(l * E + e) * E];
        best += *std::max_element(row, row + E);
        total += st.counts[l][e];
      }
      st.coact_top1[l] = total > 0 ? double(best) / double(total) : kNA;
    }
  }
  if (!(gate_inputs_ && L > 1 && cos_n_ > 0)) return;
  st.cos_raw.resize(L - 1);
  for (int64_t l = 0; l + 1 < L; ++l) st.cos_raw[l] = cos_sum_[l] / double(cos_n_);
  std::vector<float> res(res_sum_.size());
  for (size_t i = 0; i < res.size(); ++i) res[i] = float(res_sum_[i] / double(cos_n_));
  std::vector<double> corr(L - 1, 0);
  TokenRecord rec;
  for (int64_t s = 0; s < sequences; ++s) {
    auto reader = src.open(s, kGateInput | kNoRouting);
    while (reader->next(rec)) {
      for (int64_t l = 0; l + 1 < L; ++l) {
        corr[l] += cosine(&rec.gate_input[l * H], &rec.gate_input[(l + 1) * H], &res[l * H], H);
      }
    }
  }
  st.cos_residual.resize(L - 1);
  for (int64_t l = 0; l + 1 < L; ++l) st.cos_residual[l] = corr[l] / double(cos_n_);
}

// ------------------------------------------------------------ GateReuse

GateReuse::GateReuse(const Dims& d, const TraceSource& src, const StatsOptions& opt,
                     bool gate_inputs)
    : d_(d), routing_(src.info().routing), gates_(src.gate_weights()) {
  // It needs the routers in the gate-input space.
  D_ =
      (gate_inputs && gates_ && gates_->h == d.H && gates_->layers == d.L && gates_->experts == d.E)
          ? std::clamp<int64_t>(opt.gate_reuse_distance, 0, std::max<int64_t>(d.L - 1, 0))
          : 0;
  top1_hits_.assign(size_t(D_ * d.L), 0);
  recall_hits_.assign(size_t(D_ * d.L), 0);
  logits_.resize(size_t(d.E));
  probs_.resize(size_t(d.E));
  w_.resize(size_t(d.k));
  ids_.resize(size_t(d.k));
  actual_.resize(size_t(d.E));
  // With a token budget, every stride-th token (spread over all sequences).
  const int64_t total = src.info().total_tokens();
  stride_ = opt.gate_reuse_tokens > 0
                ? std::max<int64_t>(1, (total + opt.gate_reuse_tokens - 1) / opt.gate_reuse_tokens)
                : 1;
}

void GateReuse::token(const TokenRecord& r) {
  if (D_ > 0 && index_++ % stride_ == 0) count(r);
}

void GateReuse::count(const TokenRecord& r) {
  const int64_t L = d_.L, k = d_.k, H = d_.H, E = d_.E;
  ++tokens_;
  for (int64_t j = 0; j < L; ++j) {
    const int32_t* truth = &r.ids[j * k];
    std::fill(actual_.begin(), actual_.end(), 0);
    for (int64_t q = 0; q < k; ++q) actual_[truth[q]] = 1;
    for (int64_t d = 1; d <= D_ && j - d >= 0; ++d) {
      const int64_t l = j - d;  // the layer whose gate input predicts layer j
      lanes::gemv(gates_->w(j), gates_->b(j), &r.gate_input[l * H], E, H, logits_.data());
      const float* sel = gates_->selection_bias.empty() ? nullptr : gates_->sel(j);
      route(routing_, logits_.data(), sel, ids_.data(), w_.data(), probs_.data(), scratch_);
      top1_hits_[(d - 1) * L + l] += ids_[0] == truth[0];
      for (int64_t q = 0; q < k; ++q) recall_hits_[(d - 1) * L + l] += actual_[ids_[q]];
    }
  }
}

void GateReuse::finish(TraceStats& st) const {
  const int64_t L = d_.L;
  st.gate_reuse_tokens = tokens_;
  if (D_ == 0 || tokens_ == 0) return;
  st.gate_reuse_top1.assign(D_, std::vector<double>(L, kNA));
  st.gate_reuse_recall.assign(D_, std::vector<double>(L, kNA));
  const double n = double(tokens_);
  for (int64_t d = 1; d <= D_; ++d) {
    for (int64_t l = 0; l + d < L; ++l) {
      st.gate_reuse_top1[d - 1][l] = double(top1_hits_[(d - 1) * L + l]) / n;
      st.gate_reuse_recall[d - 1][l] = double(recall_hits_[(d - 1) * L + l]) / (n * double(d_.k));
    }
  }
}

// ------------------------------------------------------------ Persistence

Persistence::Persistence(const Dims& d)
    : d_(d),
      wk_(std::min<int64_t>(3, d.E)),
      transitions_(size_t(d.L) * size_t(d.E) * size_t(d.E), 0),
      workload_(size_t(d.E)),
      top_(3) {}

void Persistence::start_batch() {
  prev_top_.assign(size_t(d_.L), std::vector<int32_t>(size_t(wk_)));
  have_prev_top_.assign(size_t(d_.L), false);
}

// Workload = tokens routed; ties broken by the summed routing weights (a
// continuous quantity), not by expert id.
void Persistence::step(const std::vector<std::vector<int64_t>>& load,
                       const std::vector<std::vector<double>>& weight) {
  const int64_t L = d_.L, E = d_.E;
  for (int64_t l = 0; l < L; ++l) {
    double wmax = 1e-12;
    for (int64_t e = 0; e < E; ++e) wmax = std::max(wmax, weight[l][e]);
    for (int64_t e = 0; e < E; ++e) {
      workload_[e] = float(double(load[l][e]) + 0.5 * weight[l][e] / wmax);
    }
    top_k_indices(workload_.data(), E, wk_, nullptr, top_.data());
    if (have_prev_top_[l]) {
      for (int64_t a = 0; a < wk_; ++a) {
        for (int64_t c = 0; c < wk_; ++c) {
          hits_ += prev_top_[l][a] == top_[c];
          ++transitions_[(size_t(l) * E + prev_top_[l][a]) * E + top_[c]];
        }
      }
      n_ += wk_;
    }
    std::copy(top_.begin(), top_.begin() + wk_, prev_top_[l].begin());
    have_prev_top_[l] = true;
  }
}

// The persistence, and the transition table's diagonal.
void Persistence::finish(TraceStats& st) const {
  const int64_t L = d_.L, E = d_.E;
  st.high_workload_persistence = n_ > 0 ? double(hits_) / double(n_) : kNA;
  st.high_workload_chance = double(wk_) / double(E);
  double frac_sum = 0, above_sum = 0;
  int64_t layers_counted = 0;
  for (int64_t l = 0; l < L; ++l) {
    int64_t rows = 0, diag = 0, above = 0;
    for (int64_t e = 0; e < E; ++e) {
      const int32_t* row = &transitions_[(size_t(l) * E + e) * E];
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
  if (E <= 64) st.high_workload_heatmap = transitions_;
}

}  // namespace moebench::stats
