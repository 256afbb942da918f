// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// cache = "smoe-lfu": SMoE's cache management.
#include <algorithm>

#include "baselines/smoe/components.h"

namespace moebench {

const cfg::Schema<SmoeLfuCache::Params>& SmoeLfuCache::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.cache");
    s.boolean("fill_after_prefill", &Params::fill_after_prefill,
              "After each prefill, fill the cache with that prefill's most frequent experts.")
        .integer("fill_slots", &Params::fill_slots,
                 "Slots per layer filled after prefill (-1: all).", cfg::at_least(-1));
    return s;
  }();
  return s;
}

void SmoeLfuCache::reset(const CacheSetup& s) {
  setup_ = s;
  const size_t n = size_t(s.layers) * size_t(s.experts);
  count_.assign(n, 0);
  prefill_.assign(n, 0);
  last_.assign(n, 0);
  clock_ = 1;
}

void SmoeLfuCache::on_gate(const Context& ctx) {
  for (const auto& a : ctx.active) {
    const size_t i = size_t(ctx.layer) * setup_.experts + a.expert;
    count_[i] += 1;
    last_[i] = clock_++;
    if (ctx.phase == Phase::kPrefill) prefill_[i] += a.tokens;
  }
}

void SmoeLfuCache::on_insert(int32_t layer, int32_t expert, const Context&) {
  last_[size_t(layer) * setup_.experts + expert] = clock_++;
}

size_t SmoeLfuCache::victim(std::span<const SlotRef> c, SlotRef, const Context&) {
  size_t best = 0;
  auto key = [&](size_t i) {
    const size_t x = size_t(c[i].layer) * setup_.experts + c[i].expert;
    return std::make_tuple(count_[x], last_[x], c[i].layer, c[i].expert);
  };
  for (size_t i = 1; i < c.size(); ++i) {
    if (key(i) < key(best)) best = i;
  }
  return best;
}

void SmoeLfuCache::after_step(const Context& ctx, std::vector<Swap>& out) {
  if (ctx.phase != Phase::kPrefill || !p_.fill_after_prefill) return;
  const int32_t E = setup_.experts;
  const int64_t C =
      p_.fill_slots < 0 ? setup_.slots_per_layer : std::min(p_.fill_slots, setup_.slots_per_layer);
  std::vector<int32_t> order(E);
  for (int32_t l = 0; l < setup_.layers; ++l) {
    const int64_t* f = &prefill_[size_t(l) * E];
    for (int32_t e = 0; e < E; ++e) order[e] = e;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return f[a] > f[b]; });
    std::vector<uint8_t> want(E, 0);
    for (int64_t i = 0; i < C && f[order[i]] > 0; ++i) want[order[i]] = 1;
    // Outgoing: resident experts not wanted, least counted first.
    std::vector<int32_t> outgoing;
    for (int32_t e : ctx.residency->holders(l)) {
      if (!want[e] && ctx.residency->resident(l, e) && !ctx.residency->pinned(l, e))
        outgoing.push_back(e);
    }
    std::stable_sort(outgoing.begin(), outgoing.end(), [&](int32_t a, int32_t b) {
      const size_t x = size_t(l) * E + a, y = size_t(l) * E + b;
      return std::tie(count_[x], last_[x], a) < std::tie(count_[y], last_[y], b);
    });
    int64_t free = std::max<int64_t>(0, ctx.residency->capacity(l) - ctx.residency->used(l));
    if (setup_.global_pool) free = 0;  // a global pool is filled by swaps only
    size_t next_out = 0;
    for (int64_t i = 0; i < C; ++i) {
      const int32_t e = order[i];
      if (!want[e] || ctx.residency->cached(l, e)) continue;
      if (free > 0) {
        out.push_back({SlotRef{-1, -1}, SlotRef{l, e}});
        --free;
      } else if (next_out < outgoing.size()) {
        out.push_back({SlotRef{l, outgoing[next_out++]}, SlotRef{l, e}});
      }
    }
    std::fill(prefill_.begin() + std::ptrdiff_t(size_t(l) * E),
              prefill_.begin() + std::ptrdiff_t(size_t(l + 1) * E), 0);
  }
}

}  // namespace moebench
