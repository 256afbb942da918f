// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// prefetcher = "activation-matrix": MoE-Infinity's activation-aware
// prefetching. After each gate, every request of the step is matched
// against the EAMC (ActivationTracer::match); the matched past request's
// rows of the later layers, each a distribution over experts, are weighted
// by 1 - (l' - l) / (L + 1) (nearer layers first; the code's layer decay)
// and summed over the step's requests; the `size` highest not cached are
// loaded. The EAMC starts as the calibration workload's requests (the
// code's loaded trace, kept) and takes each request of the run when it
// ends. Open decisions (docs/STRATEGIES.md): the code enqueues every
// predicted expert of every later layer and re-prioritises its queue at each
// layer; the core cannot re-prioritise issued copies, so `size` bounds what
// one gate asks for (default: the model's top-k, one layer's worth per
// layer).
#include <algorithm>

#include <fmt/format.h>

#include "baselines/moe_infinity/components.h"
#include "core/util/error.h"

namespace moebench {

const cfg::Schema<ActivationMatrixPrefetcher::Params>&
ActivationMatrixPrefetcher::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.prefetcher");
    s.integer("capacity", &Params::capacity,
              "EAMC entries: past requests' activation matrices kept for matching (the code's "
              "trace_capacity).",
              cfg::at_least(1), "requests")
        .integer("size", &Params::size,
                 "Experts requested per gate, highest priority first (-1: the model's top-k).",
                 cfg::at_least(-1), "experts")
        .integer("lookahead", &Params::lookahead, "Later layers considered (0: all of them).",
                 cfg::at_least(0), "layers");
    return s;
  }();
  return s;
}

void ActivationMatrixPrefetcher::ensure_ready(const Context& ctx) {
  if (ready_) return;
  if (!ctx.calibration) {
    throw Error(fmt::format(
        "prefetcher '{}': expected a calibration workload (the past requests it matches "
        "against), found none",
        name()));
  }
  tracer_.reset(ctx.moe_layers, ctx.experts);
  tracer_.load_collection(ctx.calibration->trace(), p_.capacity);
  score_.assign(size_t(ctx.moe_layers) * size_t(ctx.experts), 0.0f);
  ready_ = true;
}

void ActivationMatrixPrefetcher::after_gate(const Context& ctx, std::vector<PrefetchRequest>& out) {
  ensure_ready(ctx);
  tracer_.observe(ctx);
  const int32_t L = ctx.moe_layers, E = ctx.experts, l = ctx.layer;
  if (!ctx.cost->has_gpu() || l + 1 >= L) return;
  const int32_t last =
      p_.lookahead > 0 ? std::min<int32_t>(L - 1, l + int32_t(p_.lookahead)) : L - 1;
  const StepRouting& r = *ctx.routing;
  seqs_.clear();
  for (int64_t t = 0; t < r.tokens(); ++t) seqs_.push_back(r.seq(t));
  std::sort(seqs_.begin(), seqs_.end());
  seqs_.erase(std::unique(seqs_.begin(), seqs_.end()), seqs_.end());
  std::fill(score_.begin(), score_.end(), 0.0f);
  bool any = false;
  for (int64_t s : seqs_) {
    const int64_t m = tracer_.match(s);
    if (m < 0) continue;
    const std::vector<float>& past = tracer_.entry(m);
    for (int32_t j = l + 1; j <= last; ++j) {
      const float* row = &past[size_t(j) * E];
      double sum = 0;
      for (int32_t e = 0; e < E; ++e) sum += row[e];
      if (sum <= 0) continue;
      const double decay = 1.0 - double(j - l) / double(L + 1);
      for (int32_t e = 0; e < E; ++e) {
        score_[size_t(j) * E + e] += float(row[e] / sum * decay);
        any = any || row[e] > 0;
      }
    }
  }
  if (!any) return;
  order_.clear();
  for (int32_t j = l + 1; j <= last; ++j) {
    for (int32_t e = 0; e < E; ++e) {
      const size_t i = size_t(j) * E + e;
      if (score_[i] > 0 && !ctx.residency->cached(j, e)) order_.push_back(int64_t(i));
    }
  }
  const size_t n = std::min(order_.size(), size_t(p_.size < 0 ? ctx.top_k : p_.size));
  // Highest priority first; ties: the nearer layer, then the lower expert (the index order).
  std::partial_sort(
      order_.begin(), order_.begin() + std::ptrdiff_t(n), order_.end(), [&](int64_t a, int64_t b) {
        return score_[size_t(a)] != score_[size_t(b)] ? score_[size_t(a)] > score_[size_t(b)]
                                                      : a < b;
      });
  for (size_t i = 0; i < n; ++i) {
    out.push_back({int32_t(order_[i] / E), int32_t(order_[i] % E), 0});
  }
}

void ActivationMatrixPrefetcher::after_step(const Context& ctx, std::vector<PrefetchRequest>&) {
  if (ready_) tracer_.finish_step(ctx);
}

}  // namespace moebench
