// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// cache = "fifo": the tutorial's example policy. The core calls on_insert
// whenever an expert takes a slot (placement, load, prefetch, swap) and
// victim whenever a slot must be freed; it owns residency, pinning and
// capacity, and rejects an invalid answer.
#include "baselines/example/components.h"

namespace moebench {

void FifoCache::reset(const CacheSetup& s) {
  experts_ = s.experts;
  clock_ = 1;
  entered_.assign(size_t(s.layers) * size_t(s.experts), 0);
}

void FifoCache::on_insert(int32_t layer, int32_t expert, const Context&) {
  entered_[size_t(layer) * experts_ + expert] = clock_++;
}

size_t FifoCache::victim(std::span<const SlotRef> c, SlotRef, const Context&) {
  size_t oldest = 0;
  for (size_t i = 1; i < c.size(); ++i) {
    if (entered_[size_t(c[i].layer) * experts_ + c[i].expert] <
        entered_[size_t(c[oldest].layer) * experts_ + c[oldest].expert]) {
      oldest = i;
    }
  }
  return oldest;
}

}  // namespace moebench
