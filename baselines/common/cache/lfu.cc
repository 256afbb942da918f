// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// cache = "lfu": least frequently used (llama.cpp/KTransformers-style
// frequency caching in HybriMoE Table I; SMoE's eviction order).
#include "baselines/common/components.h"

namespace moebench {

const cfg::Schema<LfuCache::Params>& LfuCache::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.cache");
    s.choice("count", &Params::count, {"steps", "tokens"},
             "Per activation add 1 (steps) or the tokens routed to the expert (tokens).")
        .boolean("reset_on_evict", &Params::reset_on_evict,
                 "Forget an expert's count when it is evicted.");
    return s;
  }();
  return s;
}

void LfuCache::reset(const CacheSetup& s) {
  E_ = s.experts;
  count_.assign(size_t(s.layers) * size_t(s.experts), 0);
  last_.assign(size_t(s.layers) * size_t(s.experts), 0);
  clock_ = 1;
}

void LfuCache::on_access(int32_t layer, const ActiveExpert& a, const Context&) {
  const size_t i = size_t(layer) * E_ + a.expert;
  count_[i] += p_.count == "tokens" ? a.tokens : 1;
  last_[i] = clock_++;
}

void LfuCache::on_insert(int32_t layer, int32_t expert, const Context&) {
  last_[size_t(layer) * E_ + expert] = clock_++;
}

void LfuCache::on_evict(int32_t layer, int32_t expert, const Context&) {
  if (p_.reset_on_evict) count_[size_t(layer) * E_ + expert] = 0;
}

size_t LfuCache::victim(std::span<const SlotRef> c, SlotRef, const Context&) {
  size_t best = 0;
  auto key = [&](size_t i) {
    const size_t x = size_t(c[i].layer) * E_ + c[i].expert;
    return std::make_tuple(count_[x], last_[x], c[i].layer, c[i].expert);
  };
  for (size_t i = 1; i < c.size(); ++i) {
    if (key(i) < key(best)) best = i;
  }
  return best;
}

}  // namespace moebench
