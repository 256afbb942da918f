// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// cache = "lru": least recently used (mixtral-offloading, AdapMoE, the LRU
// line of HybriMoE Fig. 9 and DALI Fig. 7).
#include "baselines/common/components.h"

namespace moebench {

void LruCache::reset(const CacheSetup& s) {
  E_ = s.experts;
  last_.assign(size_t(s.layers) * size_t(s.experts), 0);
  clock_ = 1;
}

void LruCache::on_access(int32_t layer, const ActiveExpert& a, const Context&) {
  last_[size_t(layer) * E_ + a.expert] = clock_++;
}

void LruCache::on_insert(int32_t layer, int32_t expert, const Context&) {
  last_[size_t(layer) * E_ + expert] = clock_++;
}

size_t LruCache::victim(std::span<const SlotRef> c, SlotRef, const Context&) {
  size_t best = 0;
  uint64_t best_t = c.empty() ? 0 : last_[size_t(c[0].layer) * E_ + c[0].expert];
  for (size_t i = 1; i < c.size(); ++i) {
    const uint64_t t = last_[size_t(c[i].layer) * E_ + c[i].expert];
    const bool older = t < best_t;  // ties keep the earlier candidate
    best = older ? i : best;
    best_t = older ? t : best_t;
  }
  return best;
}

}  // namespace moebench
