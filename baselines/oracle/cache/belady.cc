// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// cache = "belady": the optimal replacement for a known future (Belady's
// MIN): evict the cached expert whose next use is farthest away.
#include "baselines/oracle/components.h"
#include "core/util/error.h"

namespace moebench {

size_t BeladyCache::victim(std::span<const SlotRef> c, SlotRef, const Context& ctx) {
  if (!ctx.future) throw InternalError("belady cache without future access");
  size_t best = 0;
  int64_t far = -1;
  for (size_t i = 0; i < c.size(); ++i) {
    const int64_t d = ctx.future->next_use(c[i].layer, c[i].expert);
    if (d > far) {
      far = d;
      best = i;
    } else if (d == far && (c[i].layer < c[best].layer ||
                            (c[i].layer == c[best].layer && c[i].expert < c[best].expert))) {
      best = i;
    }
  }
  return best;
}

}  // namespace moebench
