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

namespace {
// The step's sequences in token order (a prefill step's tokens come sequence by sequence: each
// once).
void step_sequences(const StepRouting& r, std::vector<int64_t>* out) {
  out->clear();
  for (int64_t t = 0; t < r.tokens(); ++t) {
    if (out->empty() || out->back() != r.seq(t)) out->push_back(r.seq(t));
  }
}
}  // namespace

double ActivationAwareCache::share(int32_t layer, int32_t expert, const std::vector<int64_t>& seqs,
                                   double* sums) const {
  double p = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const std::vector<float>& m = tracer_.eam(seqs[i]);
    if (m.empty()) continue;
    if (std::isnan(sums[i])) {
      sums[i] = 0;
      for (int32_t e = 0; e < E_; ++e) sums[i] += m[size_t(layer) * E_ + e];
    }
    if (sums[i] > 0) p += m[size_t(layer) * E_ + expert] / sums[i];
  }
  return p_.layer_decay ? p * (1.0 - double(layer) / double(L_ + 1)) : p;
}

double ActivationAwareCache::priority(int32_t layer, int32_t expert, const Context& ctx) const {
  std::vector<int64_t> seqs;
  step_sequences(*ctx.routing, &seqs);
  std::vector<double> sums(seqs.size(), std::numeric_limits<double>::quiet_NaN());
  return share(layer, expert, seqs, sums.data());
}

size_t ActivationAwareCache::victim(std::span<const SlotRef> c, SlotRef, const Context& ctx) {
  // Each (sequence, layer) row sum once per call: the same for every candidate of a layer.
  step_sequences(*ctx.routing, &seqs_);
  const size_t S = seqs_.size();
  sums_.assign(size_t(L_) * S, std::numeric_limits<double>::quiet_NaN());
  auto priority = [&](int32_t layer, int32_t expert) {
    return share(layer, expert, seqs_, &sums_[size_t(layer) * S]);
  };
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
