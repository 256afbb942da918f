// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// prefetcher = "impact": HybriMoE's impact-driven prefetching (section IV-C).
#include <algorithm>

#include <fmt/format.h>

#include "baselines/hybrimoe/components.h"
#include "core/util/error.h"

namespace moebench {

const cfg::Schema<ImpactPrefetcher::Params>& ImpactPrefetcher::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.prefetcher");
    s.integer("depth", &Params::depth, "Layers ahead whose activations are predicted.",
              cfg::at_least(1))
        .integer("max_prefetch", &Params::max_prefetch,
                 "Requests per layer (-1: as many as the link fits in time).", cfg::at_least(-1))
        .integer("max_candidates", &Params::max_candidates,
                 "Predicted experts per target layer whose impact is simulated (highest predicted "
                 "workload first).",
                 cfg::at_least(1))
        .choice("timeline", &Params::timeline, {"completion", "free"},
                "Which timeline acts in the impact simulation (as the hybrimoe assigner's "
                "`timeline`).")
        .choice("misses", &Params::misses, {"schedule", "cpu"},
                "What the impact simulation does with an uncached expert (as the hybrimoe "
                "assigner's `misses`).")
        .boolean(
            "protect_predicted", &Params::protect_predicted,
            "A prefetch into layer j never evicts an expert of layer j that the prediction for j "
            "uses (the impact simulation assumes those stay cached); false: the cache's victim, "
            "whatever it is.");
    return s;
  }();
  return s;
}

void ImpactPrefetcher::after_gate(const Context& ctx, std::vector<PrefetchRequest>& out) {
  if (!predictor_) {
    throw Error(fmt::format(
        "prefetcher '{}': expected a predictor (strategy.predictor), found none", name()));
  }
  if (!ctx.cost->has_gpu()) return;
  const CostModelSched costs(*ctx.cost);
  const bool has_gpu = true;
  // This layer's expected duration: its non-MoE time plus its simulated MoE time.
  const double cur = schedule_makespan(sched_experts(ctx, ctx.active), costs, sched_start(ctx),
                                       has_gpu, rule_, load_misses_);
  const double layer_ns = ctx.layer_nonmoe_ns + std::max(0.0, cur - ctx.now_ns);
  const double h2d = ctx.cost->h2d_expert_ns();
  cands_.clear();
  held_.clear();
  for (int32_t j = ctx.layer + 1; j <= ctx.layer + p_.depth && j < ctx.moe_layers; ++j) {
    scores_.assign(size_t(ctx.experts), 0.0f);
    predictor_->predict(ctx, j, 0, scores_);
    // Predicted workloads: the integer part of the score (tokens predicted).
    pred_.clear();
    for (int32_t e = 0; e < ctx.experts; ++e) {
      const int32_t w = int32_t(scores_[e]);
      if (w <= 0) continue;
      SchedExpert s;
      s.expert = e;
      s.load = w;
      s.cached = ctx.residency->cached(j, e);
      pred_.push_back(s);
      if (s.cached) held_.push_back({j, e});
    }
    if (pred_.empty()) continue;
    // The simulation's input in its own order (load descending, then expert
    // id), sorted once here rather than in each of the candidates' runs;
    // at_[i] = where pred_[i] is in it.
    order_.resize(pred_.size());
    for (size_t i = 0; i < pred_.size(); ++i) order_[i] = i;
    std::sort(order_.begin(), order_.end(),
              [&](size_t a, size_t b) { return sched_heavier(pred_[a], pred_[b]); });
    sorted_.resize(pred_.size());
    at_.resize(pred_.size());
    for (size_t r = 0; r < order_.size(); ++r) {
      sorted_[r] = pred_[order_[r]];
      at_[order_[r]] = r;
    }
    const double base =
        schedule_makespan(sorted_, costs, SchedTimes{}, has_gpu, rule_, load_misses_);
    // Candidates: uncached predicted experts, heaviest first, at most max_candidates.
    std::vector<size_t> idx;
    for (size_t i = 0; i < pred_.size(); ++i) {
      if (!pred_[i].cached) idx.push_back(i);
    }
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return scores_[pred_[a].expert] > scores_[pred_[b].expert];
    });
    if (int64_t(idx.size()) > p_.max_candidates) idx.resize(size_t(p_.max_candidates));
    for (size_t i : idx) {
      sorted_[at_[i]].cached = true;
      const double with =
          schedule_makespan(sorted_, costs, SchedTimes{}, has_gpu, rule_, load_misses_);
      sorted_[at_[i]].cached = false;
      if (base - with > 0) cands_.push_back({j, pred_[i].expert, base - with});
    }
  }
  std::stable_sort(cands_.begin(), cands_.end(), [](const Cand& a, const Cand& b) {
    if (a.impact != b.impact) return a.impact > b.impact;
    return a.layer != b.layer ? a.layer < b.layer : a.expert < b.expert;
  });
  double link = std::max(ctx.now_ns, ctx.lanes.h2d_free_ns);
  int64_t issued = 0;
  for (const auto& c : cands_) {
    if (p_.max_prefetch >= 0 && issued >= p_.max_prefetch) break;
    const double needed = ctx.now_ns + double(c.layer - ctx.layer) * layer_ns;
    if (link + h2d > needed) continue;  // would not arrive before its layer starts
    link += h2d;
    out.push_back({c.layer, c.expert, 0});
    ++issued;
  }
  // Requests for cached experts load nothing; the core keeps them out of
  // the victims of the other requests into their layer.
  if (p_.protect_predicted && !out.empty()) {
    for (const SlotRef& h : held_) out.push_back({h.layer, h.expert, 0});
  }
}

double ImpactPrefetcher::predict_gpu_ns(const Context& ctx) const {
  if (!predictor_) return 0.0;
  const int64_t ahead = std::min<int64_t>(p_.depth, ctx.moe_layers - 1 - ctx.layer);
  return ahead > 0 ? double(ahead) * predictor_->gpu_ns(*ctx.cost, ctx.routing->tokens()) : 0.0;
}

}  // namespace moebench
