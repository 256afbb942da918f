// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// cache = "mrs": HybriMoE's Minus Recent Score replacement. The victim is
// the candidate with the smallest S (ties: lower layer, then lower id).
#include <algorithm>

#include "baselines/hybrimoe/components.h"

namespace moebench {

namespace {
template <class P>
void mrs_fields(cfg::Schema<P>& s) {
  s.number("alpha", &P::alpha, "Averaging coefficient of S = alpha * TopP(s) + (1 - alpha) * S.",
           cfg::fraction())
      .integer("p", &P::p, "Router probabilities kept by TopP (-1: 2k).", cfg::at_least(-1))
      .choice("update", &P::update, {"mean", "first-token"},
              "Batch update: the step's tokens' TopP averaged, or the first token only (the code).")
      .boolean("id_order_bug", &P::id_order_bug,
               "The code's bug: the top-p values go to the chosen experts in ascending-id order.");
}
}  // namespace

const cfg::Schema<MrsCache::Params>& MrsCache::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.cache");
    mrs_fields(s);
    return s;
  }();
  return s;
}

const cfg::Schema<MrsNextPrefetcher::Params>& MrsNextPrefetcher::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.prefetcher");
    mrs_fields(s);
    s.integer("prefetch_size", &Params::prefetch_size,
              "Experts of the next layer loaded per layer.", cfg::at_least(0));
    return s;
  }();
  return s;
}

void MrsScores::reset(int32_t layers, int32_t experts) {
  E_ = experts;
  S_.assign(size_t(layers) * size_t(experts), 0.0f);
  step_.assign(experts, 0.0f);
}

void MrsScores::update(const Context& ctx) {
  const StepRouting& r = *ctx.routing;
  const int64_t p = std::min<int64_t>(p_of(ctx.top_k), r.run().top_p());
  std::fill(step_.begin(), step_.end(), 0.0f);
  const int64_t n = first_token_only_ ? std::min<int64_t>(1, r.tokens()) : r.tokens();
  if (n == 0) return;
  for (int64_t t = 0; t < n; ++t) {
    const int32_t* ids = r.topp_ids(t, ctx.layer);
    if (ids[0] == kHoleId) continue;  // a hole in the trace: no scores
    const float* v = r.topp_probs(t, ctx.layer);
    if (params_.id_order_bug) {
      // Values in descending order, assigned to the ids sorted ascending.
      ids_.assign(ids, ids + p);
      vals_.assign(v, v + p);
      std::sort(ids_.begin(), ids_.end());
      std::sort(vals_.begin(), vals_.end(), std::greater<float>());
      for (int64_t j = 0; j < p; ++j) step_[ids_[j]] += vals_[j];
    } else {
      for (int64_t j = 0; j < p; ++j) step_[ids[j]] += v[j];
    }
  }
  const float a = float(params_.alpha), inv = 1.0f / float(n);
  float* S = &S_[size_t(ctx.layer) * E_];
  for (int32_t e = 0; e < E_; ++e) S[e] = a * step_[e] * inv + (1.0f - a) * S[e];
}

size_t MrsCache::victim(std::span<const SlotRef> c, SlotRef, const Context&) {
  size_t best = 0;
  for (size_t i = 1; i < c.size(); ++i) {
    const float a = scores_.score(c[i].layer, c[i].expert),
                b = scores_.score(c[best].layer, c[best].expert);
    if (a < b || (a == b && (c[i].layer < c[best].layer ||
                             (c[i].layer == c[best].layer && c[i].expert < c[best].expert)))) {
      best = i;
    }
  }
  return best;
}

}  // namespace moebench
