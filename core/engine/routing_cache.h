// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// One materialised routing per workload and process (speed): the
// cases of a suite that read the same workload (the strategies of a figure,
// both comparisons, every batch size) share one RunRouting instead of each
// generating the whole trace again. A source is shared by its content key
// (TraceSource::content_key; "" never is), so a case reads bit for bit what
// it would have built itself. The routing is immutable once built.
//
// Bounded by bytes: the least recently used routings leave beyond the
// budget, MOEBENCH_ROUTING_CACHE_MIB (default 2048; 0 turns sharing off),
// and one larger than the budget is built for its case alone. Thread-safe:
// cases running at once that ask for the same routing wait for one build.
// A shared routing carries a TokenMemo (core/engine/token_memo.h): per-token
// results the cases of its workload compute once between them.

#include <cstdint>
#include <memory>

#include "core/engine/routing_data.h"

namespace moebench {

std::shared_ptr<const RunRouting> shared_run_routing(const TraceSource& src, int64_t top_p);

// What the cache holds and did (tests and benchmarks).
struct RoutingCacheStats {
  int64_t builds = 0, hits = 0, entries = 0;
  int64_t bytes = 0, budget_bytes = 0;
};
RoutingCacheStats routing_cache_stats();
// Empties the cache and sets its budget (tests); a budget < 0 reads the
// environment again.
void reset_routing_cache(int64_t budget_bytes = -1);

}  // namespace moebench
