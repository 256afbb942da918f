// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Oracles: the bounds every comparison shows. They read the future through
// FutureView, which the core gives only to components that declare it.

#include "core/engine/policy.h"
#include "core/policy/component_util.h"

namespace moebench {

// Belady's MIN: evicts the candidate whose next activation is farthest in
// the future (ties: the lower layer, then the lower expert id).
class BeladyCache : public CachePolicy {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.cache";
  };
  using Params = EmptyParams<Tag>;
  explicit BeladyCache(const Params&) {}
  Needs needs(const ModelSpec&) const override {
    Needs n;
    n.future = true;
    return n;
  }
  size_t victim(std::span<const SlotRef> c, SlotRef incoming, const Context& ctx) override;
};

}  // namespace moebench
