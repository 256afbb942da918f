// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The tutorial's example policy (docs/ADDING_A_POLICY.md): a
// first-in, first-out expert cache. Copy this directory to start your own.

#include <cstdint>
#include <vector>

#include "core/engine/policy.h"
#include "core/policy/component_util.h"

namespace moebench {

// Evicts the candidate that entered the cache longest ago, whatever its use.
class FifoCache : public CachePolicy {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.cache";
  };
  using Params = EmptyParams<Tag>;  // no parameters; see LfuCache for a Params struct with fields
  explicit FifoCache(const Params&) {}

  void reset(const CacheSetup& s) override;
  void on_insert(int32_t layer, int32_t expert, const Context&) override;
  size_t victim(std::span<const SlotRef> candidates, SlotRef incoming, const Context&) override;

 private:
  int32_t experts_ = 0;
  uint64_t clock_ = 0;
  std::vector<uint64_t> entered_;  // [layer * experts + expert]: when it entered the cache
};

}  // namespace moebench
