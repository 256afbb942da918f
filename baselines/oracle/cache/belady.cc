// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// cache = "belady": the optimal replacement for a known future (Belady's
// MIN): evict the cached expert whose next use is farthest away.
#include "baselines/oracle/components.h"
#include "core/util/error.h"

#include <tuple>

namespace moebench {

// The victim is the candidate used last: its next use is the farthest in
// steps, then (in one step) in the latest layer, then (in one layer, with
// experts admitted one at a time) the latest in admission order; what is
// left tied goes to the lowest expert. Among candidates never used again
// (any choice is optimal) the lowest (layer, expert).
size_t BeladyCache::victim(std::span<const SlotRef> c, SlotRef, const Context& ctx) {
  if (!ctx.future) throw InternalError("belady cache without future access");
  const FutureView& f = *ctx.future;
  struct Key {
    int64_t steps, layer, position, expert;
  };
  auto key = [&](size_t i) {
    const int64_t d = f.next_use(c[i].layer, c[i].expert);
    if (d >= FutureView::kNever)
      return Key{FutureView::kNever, -c[i].layer, 0, -int64_t(c[i].expert)};
    return Key{d, c[i].layer, f.use_position(d, c[i].layer, c[i].expert), -int64_t(c[i].expert)};
  };
  auto later = [](const Key& a, const Key& b) {
    return std::tie(a.steps, a.layer, a.position, a.expert) >
           std::tie(b.steps, b.layer, b.position, b.expert);
  };
  size_t best = 0;
  Key best_key = key(0);
  for (size_t i = 1; i < c.size(); ++i) {
    const Key k = key(i);
    if (later(k, best_key)) {
      best = i;
      best_key = k;
    }
  }
  return best;
}

}  // namespace moebench
