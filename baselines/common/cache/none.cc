// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// cache = "none": for strategies whose residency never changes (static
// placement, no loads into the cache). Asked for a victim, it refuses.
#include <fmt/format.h>

#include "baselines/common/components.h"
#include "core/util/error.h"

namespace moebench {

size_t NoneCache::victim(std::span<const SlotRef>, SlotRef incoming, const Context&) {
  throw Error(fmt::format(
      "cache policy 'none' cannot choose a victim (to make room for expert {} of layer {}): "
      "the strategy loads experts into a full cache; name a cache policy (e.g. cache = \"lru\") "
      "or set residency.admit_on_demand = false",
      incoming.expert, incoming.layer));
}

}  // namespace moebench
