// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// cache = "activation-aware": MoE-Infinity's activation-aware caching. An
// expert's priority is its share of its layer's activations in the EAMs of
// the requests of the current step (summed over them; reused experts of a
// request are kept), times 1 - l / (L + 1) (experts of shallow layers first:
// they have the least time to be prefetched); the victim has the lowest
// priority, ties the least recently used. A prefetch waiting for its layer
// (loaded in this step for a later layer, not used yet) goes last, as the
// public code's eviction loop spares its current prefetch candidates. Open
// decision (docs/STRATEGIES.md): the paper describes this ranking; the
// public code's eviction loop walks the cached experts by their visit count.
#include <cmath>
#include <limits>

#include "baselines/moe_infinity/components.h"

namespace moebench {

const cfg::Schema<ActivationAwareCache::Params>& ActivationAwareCache::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.cache");
    s.boolean("layer_decay", &Params::layer_decay,
              "Weight a priority by 1 - l / (L + 1), keeping shallow layers' experts longer.");
    return s;
  }();
  return s;
}

void ActivationAwareCache::reset(const CacheSetup& s) {
  L_ = s.layers;
  E_ = s.experts;
  last_.assign(size_t(s.layers) * size_t(s.experts), 0);
  inserted_step_.assign(size_t(s.layers) * size_t(s.experts), -1);
  used_.assign(size_t(s.layers) * size_t(s.experts), 0);
  clock_ = 1;
  tracer_.reset(s.layers, s.experts);
}

void ActivationAwareCache::on_gate(const Context& ctx) {
  tracer_.observe(ctx);
}

void ActivationAwareCache::on_access(int32_t layer, const ActiveExpert& a, const Context&) {
  last_[size_t(layer) * E_ + a.expert] = clock_++;
  used_[size_t(layer) * E_ + a.expert] = 1;
}

void ActivationAwareCache::on_insert(int32_t layer, int32_t expert, const Context& ctx) {
  const size_t i = size_t(layer) * E_ + expert;
  last_[i] = clock_++;
  inserted_step_[i] = ctx.step;
  used_[i] = 0;
}

bool ActivationAwareCache::waiting(const SlotRef& s, const Context& ctx) const {
  const size_t i = size_t(s.layer) * E_ + s.expert;
  return s.layer > ctx.layer && inserted_step_[i] == ctx.step && !used_[i];
}

void ActivationAwareCache::after_step(const Context& ctx, std::vector<Swap>&) {
  tracer_.finish_step(ctx);  // capacity 0: the finished requests' EAMs are dropped
}

double ActivationAwareCache::priority(int32_t layer, int32_t expert, const Context& ctx) const {
  const StepRouting& r = *ctx.routing;
  double p = 0;
  int64_t prev = -1;
  for (int64_t t = 0; t < r.tokens(); ++t) {
    const int64_t s = r.seq(t);
    if (s == prev) continue;  // a prefill step's tokens come sequence by sequence
    prev = s;
    const std::vector<float>& m = tracer_.eam(s);
    if (m.empty()) continue;
    double sum = 0;
    for (int32_t e = 0; e < E_; ++e) sum += m[size_t(layer) * E_ + e];
    if (sum > 0) p += m[size_t(layer) * E_ + expert] / sum;
  }
  return p_.layer_decay ? p * (1.0 - double(layer) / double(L_ + 1)) : p;
}

double ActivationAwareCache::priority_cached(int32_t layer, int32_t expert) {
  double p = 0;
  const size_t S = seqs_.size();
  for (size_t i = 0; i < S; ++i) {
    const std::vector<float>& m = tracer_.eam(seqs_[i]);
    if (m.empty()) continue;
    double& sum = sums_[size_t(layer) * S + i];
    if (std::isnan(sum)) {
      sum = 0;
      for (int32_t e = 0; e < E_; ++e) sum += m[size_t(layer) * E_ + e];
    }
    if (sum > 0) p += m[size_t(layer) * E_ + expert] / sum;
  }
  return p_.layer_decay ? p * (1.0 - double(layer) / double(L_ + 1)) : p;
}

size_t ActivationAwareCache::victim(std::span<const SlotRef> c, SlotRef, const Context& ctx) {
  // The step's sequences as priority() visits them, and no row sum yet.
  const StepRouting& r = *ctx.routing;
  seqs_.clear();
  for (int64_t t = 0; t < r.tokens(); ++t) {
    if (seqs_.empty() || seqs_.back() != r.seq(t)) seqs_.push_back(r.seq(t));
  }
  sums_.assign(size_t(L_) * seqs_.size(), std::numeric_limits<double>::quiet_NaN());
  auto priority = [&](int32_t layer, int32_t expert) { return priority_cached(layer, expert); };
  size_t best = 0;
  bool best_w = waiting(c[0], ctx);
  double best_p = priority(c[0].layer, c[0].expert);
  uint64_t best_t = last_[size_t(c[0].layer) * E_ + c[0].expert];
  for (size_t i = 1; i < c.size(); ++i) {
    const bool w = waiting(c[i], ctx);
    const double p = priority(c[i].layer, c[i].expert);
    const uint64_t t = last_[size_t(c[i].layer) * E_ + c[i].expert];
    if (w != best_w ? !w : (p < best_p || (p == best_p && t < best_t))) {
      best = i;
      best_w = w;
      best_p = p;
      best_t = t;
    }
  }
  return best;
}

}  // namespace moebench
