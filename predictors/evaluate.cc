// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "predictors/evaluate.h"

#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/util/detmath.h"
#include "core/util/error.h"

namespace moebench {

namespace {

double overlap(const int32_t* a, const int32_t* b, int64_t k) {
  int64_t n = 0;
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < k; ++j) n += a[i] == b[j];
  }
  return double(n);
}

// The n experts with the largest score (ties: lower id).
std::vector<int32_t> top_n(const std::vector<float>& s, int64_t n) {
  std::vector<int32_t> out(n);
  top_k_indices(s.data(), int64_t(s.size()), n, nullptr, out.data());
  return out;
}

struct Acc {
  std::vector<double> sum;
  std::vector<int64_t> n;
  void init(int64_t L) {
    sum.assign(L, 0.0);
    n.assign(L, 0);
  }
  void add(int64_t l, double v) {
    sum[l] += v;
    ++n[l];
  }
  std::vector<double> mean() const {
    std::vector<double> out(sum.size());
    for (size_t i = 0; i < sum.size(); ++i) out[i] = n[i] ? sum[i] / double(n[i]) : std::nan("");
    return out;
  }
};

double cosine(const float* a, const float* b, int64_t n) {
  const double ab = dot(a, b, n), aa = dot(a, a, n), bb = dot(b, b, n);
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : std::nan("");
}

}  // namespace

PredictorEvalReport evaluate_predictors(const ModelSpec& model, const TraceSource& eval,
                                        const std::vector<float>* residuals,
                                        const LinearModel* linear,
                                        const PredictorEvalOptions& opt) {
  const TraceInfo& in = eval.info();
  const int64_t L = in.moe_layers, E = in.experts(), k = in.top_k(), H = in.h_trace;
  if (H <= 0 || !eval.gate_weights()) {
    throw Error(
        "predictor eval: expected an evaluation workload with gate inputs and gate weights, found "
        "one without");
  }
  if (residuals && int64_t(residuals->size()) != std::max<int64_t>(L - 1, 0) * H) {
    throw Error(fmt::format("predictor eval: expected residual vectors [{}][{}], found {} values",
                            L - 1, H, residuals->size()));
  }
  if (linear && (linear->layers != L || linear->experts != E || linear->h != H)) {
    throw Error(fmt::format(
        "predictor eval: expected a linear predictor for {} layers x {} experts x width {}, "
        "found {} x {} x {}",
        L, E, H, linear->layers, linear->experts, linear->h));
  }
  RouterProbe probe;
  probe.init(model, eval.gate_weights(), "eval");
  PredictorEvalReport r;
  r.model = model.name;
  r.workload = in.source;
  r.layers = L;
  r.experts = E;
  r.top_k = k;
  r.batch = opt.batch;
  r.has_residual = residuals != nullptr;
  r.has_tokenwise = linear != nullptr;
  Acc lw, rs, it, li, tw, t1l, t2l, t1r, t2r, cr, cc;
  for (Acc* a : {&lw, &rs, &it, &li, &tw, &t1l, &t2l, &t1r, &t2r, &cr, &cc}) a->init(L);

  std::vector<int32_t> ids(k);
  std::vector<float> w(k), x(H), z(E);
  std::vector<int32_t> topz(k);
  const int64_t B = std::max<int64_t>(1, opt.batch);
  const int64_t S = int64_t(in.sequences.size());
  // Batches of B sequences advanced together, one position per batch step.
  for (int64_t s0 = 0; s0 < S && (opt.max_tokens <= 0 || r.tokens < opt.max_tokens); s0 += B) {
    const int64_t s1 = std::min(S, s0 + B);
    std::vector<std::unique_ptr<SequenceReader>> rd;
    std::vector<TokenRecord> prev(s1 - s0), cur(s1 - s0);
    std::vector<bool> have(s1 - s0, false), alive(s1 - s0, true);
    for (int64_t s = s0; s < s1; ++s) rd.push_back(eval.open(s, kGateInput));
    while (opt.max_tokens <= 0 || r.tokens < opt.max_tokens) {
      // Predicted (layer-wise / residual) and true workloads of this batch step.
      std::vector<std::vector<float>> pl(L, std::vector<float>(E, 0.0f)),
          pr(L, std::vector<float>(E, 0.0f)), tru(L, std::vector<float>(E, 0.0f));
      int64_t active = 0;
      for (int64_t q = 0; q < s1 - s0; ++q) {
        if (!alive[q]) continue;
        if (!rd[q]->next(cur[q])) {
          alive[q] = false;
          continue;
        }
        ++active;
        ++r.tokens;
        const TokenRecord& t = cur[q];
        for (int64_t l = 0; l < L; ++l) {
          const int32_t* truth = &t.ids[l * k];
          for (int64_t j = 0; j < k; ++j) tru[l][truth[j]] += 1.0f;
          const float* g = &t.gate_input[l * H];
          if (l > 0) {
            const float* gp = &t.gate_input[(l - 1) * H];
            probe.route_one(gp, int32_t(l), ids.data(), w.data());
            lw.add(l, overlap(ids.data(), truth, k) / double(k));
            for (int64_t j = 0; j < k; ++j) pl[l][ids[j]] += 1.0f;
            cr.add(l - 1, cosine(gp, g, H));
            if (residuals) {
              const float* d = &(*residuals)[(l - 1) * H];
              for (int64_t i = 0; i < H; ++i) x[i] = gp[i] + d[i];
              probe.route_one(x.data(), int32_t(l), ids.data(), w.data());
              rs.add(l, overlap(ids.data(), truth, k) / double(k));
              for (int64_t j = 0; j < k; ++j) pr[l][ids[j]] += 1.0f;
              cc.add(l - 1, cosine(x.data(), g, H));
            }
            probe.route_one(&t.gate_input[0], int32_t(l), ids.data(), w.data());
            it.add(l, overlap(ids.data(), truth, k) / double(k));
          }
          if (have[q]) {
            // Next-token predictions made at the previous token.
            li.add(l, overlap(&prev[q].ids[l * k], truth, k) / double(k));
            if (linear) {
              gemv(&linear->weight[size_t(l) * E * H], &linear->bias[size_t(l) * E],
                   &prev[q].gate_input[l * H], E, H, z.data());
              top_k_indices(z.data(), E, k, nullptr, topz.data());
              tw.add(l, overlap(topz.data(), truth, k) / double(k));
            }
          }
        }
        std::swap(prev[q], cur[q]);
        have[q] = true;
      }
      if (active == 0) break;
      ++r.batch_steps;
      for (int64_t l = 1; l < L; ++l) {
        for (int64_t n : {1, 2}) {
          if (n > k) continue;
          const auto truth = top_n(tru[l], n);
          const double a = overlap(top_n(pl[l], n).data(), truth.data(), n) / double(n);
          (n == 1 ? t1l : t2l).add(l, a);
          if (residuals)
            (n == 1 ? t1r : t2r)
                .add(l, overlap(top_n(pr[l], n).data(), truth.data(), n) / double(n));
        }
      }
    }
  }
  r.recall_layerwise = lw.mean();
  r.recall_residual = rs.mean();
  r.recall_iterationwise = it.mean();
  r.recall_last_iteration = li.mean();
  r.recall_tokenwise = tw.mean();
  r.top1_layerwise = t1l.mean();
  r.top2_layerwise = t2l.mean();
  r.top1_residual = t1r.mean();
  r.top2_residual = t2r.mean();
  r.cos_raw = cr.mean();
  r.cos_residual = cc.mean();
  if (L > 0) {
    r.cos_raw.pop_back();
    r.cos_residual.pop_back();
  }
  return r;
}

namespace {
nlohmann::ordered_json vec(const std::vector<double>& v) {
  auto a = nlohmann::ordered_json::array();
  for (double x : v)
    a.push_back(std::isnan(x) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(x));
  return a;
}
double mean_of(const std::vector<double>& v) {
  double s = 0;
  int64_t n = 0;
  for (double x : v) {
    if (!std::isnan(x)) {
      s += x;
      ++n;
    }
  }
  return n ? s / double(n) : std::nan("");
}
std::string pct(double x) {
  return std::isnan(x) ? "-" : fmt::format("{:.1f}%", 100.0 * x);
}
std::string num(double x) {
  return std::isnan(x) ? "-" : fmt::format("{:.3f}", x);
}
}  // namespace

nlohmann::ordered_json PredictorEvalReport::to_json() const {
  nlohmann::ordered_json j;
  j["model"] = model;
  j["workload"] = workload;
  j["layers"] = layers;
  j["experts"] = experts;
  j["top_k"] = top_k;
  j["tokens"] = tokens;
  j["batch"] = batch;
  j["batch_steps"] = batch_steps;
  j["recall_layerwise"] = vec(recall_layerwise);
  j["recall_residual"] = vec(recall_residual);
  j["recall_iterationwise"] = vec(recall_iterationwise);
  j["recall_last_iteration"] = vec(recall_last_iteration);
  j["recall_tokenwise"] = vec(recall_tokenwise);
  j["top1_workload_layerwise"] = vec(top1_layerwise);
  j["top2_workload_layerwise"] = vec(top2_layerwise);
  j["top1_workload_residual"] = vec(top1_residual);
  j["top2_workload_residual"] = vec(top2_residual);
  j["cos_raw"] = vec(cos_raw);
  j["cos_residual"] = vec(cos_residual);
  return j;
}

std::string PredictorEvalReport::to_markdown() const {
  std::string s = fmt::format(
      "Evaluation workload: {} tokens, {} MoE layers x {} experts, top-{}; workload accuracy over "
      "{} batch steps of "
      "{} sequences.\n\n",
      tokens, layers, experts, top_k, batch_steps, batch);
  s += "| predictor | mean top-k recall | top-1 workload acc. | top-2 workload acc. "
       "|\n|---|---|---|---|\n";
  s += fmt::format("| layer-wise (gate-reuse, l-1 -> l) | {} | {} | {} |\n",
                   pct(mean_of(recall_layerwise)), pct(mean_of(top1_layerwise)),
                   pct(mean_of(top2_layerwise)));
  if (has_residual) {
    s +=
        fmt::format("| residual (DALI, l-1 -> l) | {} | {} | {} |\n", pct(mean_of(recall_residual)),
                    pct(mean_of(top1_residual)), pct(mean_of(top2_residual)));
  }
  s += fmt::format("| iteration-wise (gate_l of layer 0's input) | {} | - | - |\n",
                   pct(mean_of(recall_iterationwise)));
  s += fmt::format("| last-iteration (t's experts for t+1) | {} | - | - |\n",
                   pct(mean_of(recall_last_iteration)));
  if (has_tokenwise)
    s +=
        fmt::format("| token-wise (linear, SMoE) | {} | - | - |\n", pct(mean_of(recall_tokenwise)));
  s += fmt::format(
      "\nCosine of adjacent layers' gate inputs (DALI Table 8): raw {}, residual-corrected {}.\n\n",
      num(mean_of(cos_raw)), has_residual ? num(mean_of(cos_residual)) : std::string("-"));
  s += "| layer | layer-wise | residual | iteration-wise | last-iteration | token-wise "
       "|\n|---|---|---|---|---|---|\n";
  for (int64_t l = 0; l < layers; ++l) {
    auto at = [&](const std::vector<double>& v) {
      return l < int64_t(v.size()) ? pct(v[l]) : std::string("-");
    };
    s += fmt::format("| {} | {} | {} | {} | {} | {} |\n", l, at(recall_layerwise),
                     at(recall_residual), at(recall_iterationwise), at(recall_last_iteration),
                     at(recall_tokenwise));
  }
  return s;
}

}  // namespace moebench
