// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/routing_cache.h"

#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "core/util/error.h"

namespace moebench {

namespace {

using Shared = std::shared_ptr<const RunRouting>;

struct Entry {
  std::shared_future<Shared> value;
  int64_t bytes = -1;  // -1 while it is being built
  uint64_t last_use = 0;
};

struct Cache {
  std::mutex mu;
  std::map<std::string, Entry> entries;
  int64_t bytes = 0, budget = -1;  // budget -1: not read yet
  uint64_t clock = 0;
  int64_t builds = 0, hits = 0;
};

Cache& cache() {
  static Cache c;
  return c;
}

int64_t env_budget() {
  const char* v = std::getenv("MOEBENCH_ROUTING_CACHE_MIB");
  if (!v || !*v) return int64_t(2048) << 20;
  char* end = nullptr;
  const long long mib = std::strtoll(v, &end, 10);
  if (*end != '\0' || mib < 0 || mib > (int64_t(1) << 30)) {
    throw Error(fmt::format(
        "MOEBENCH_ROUTING_CACHE_MIB: expected a whole number of MiB from 0 (no sharing) to 2^30, "
        "found '{}'",
        v));
  }
  return int64_t(mib) << 20;
}

// The least recently used built routings leave until the rest fit the
// budget (c.mu held). A routing in use by a case stays alive through its
// shared_ptr; only the cache's reference goes.
void evict(Cache& c) {
  while (c.bytes > c.budget) {
    auto victim = c.entries.end();
    for (auto it = c.entries.begin(); it != c.entries.end(); ++it) {
      if (it->second.bytes >= 0 &&
          (victim == c.entries.end() || it->second.last_use < victim->second.last_use))
        victim = it;
    }
    if (victim == c.entries.end()) return;
    c.bytes -= victim->second.bytes;
    c.entries.erase(victim);
  }
}

}  // namespace

Shared shared_run_routing(const TraceSource& src, int64_t top_p) {
  const std::string content = src.content_key();
  Cache& c = cache();
  std::unique_lock<std::mutex> lock(c.mu);
  if (c.budget < 0) {
    c.budget = env_budget();
    TokenMemo::set_budget(c.budget);
  }
  if (content.empty() || c.budget == 0) {
    lock.unlock();
    return std::make_shared<const RunRouting>(src, top_p);
  }
  const std::string key = content + "|top_p=" + std::to_string(top_p);
  if (auto it = c.entries.find(key); it != c.entries.end()) {
    it->second.last_use = ++c.clock;
    ++c.hits;
    std::shared_future<Shared> f = it->second.value;
    lock.unlock();
    return f.get();  // waits for a build in flight; its error (or cancellation) too
  }
  std::promise<Shared> built;
  c.entries[key] = Entry{built.get_future().share(), -1, ++c.clock};
  ++c.builds;
  lock.unlock();
  Shared r;
  try {
    auto built_routing = std::make_shared<RunRouting>(src, top_p);
    built_routing->enable_memo();  // shared: what one case computes per token, the others reuse
    r = std::move(built_routing);
  } catch (...) {
    built.set_exception(std::current_exception());
    std::lock_guard<std::mutex> g(c.mu);
    c.entries.erase(key);  // the next case tries again
    throw;
  }
  built.set_value(r);
  std::lock_guard<std::mutex> g(c.mu);
  if (auto e = c.entries.find(key); e != c.entries.end()) {
    const int64_t b = r->bytes();
    if (b > c.budget) {
      c.entries.erase(e);  // built for this case (and those that waited for it) alone
    } else {
      e->second.bytes = b;
      c.bytes += b;
      evict(c);
    }
  }
  return r;
}

RoutingCacheStats routing_cache_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  return {c.builds, c.hits, int64_t(c.entries.size()), c.bytes, c.budget};
}

void reset_routing_cache(int64_t budget_bytes) {
  Cache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  c.entries.clear();
  c.bytes = c.builds = c.hits = 0;
  c.clock = 0;
  c.budget = budget_bytes < 0 ? env_budget() : budget_bytes;
  TokenMemo::set_budget(c.budget);
}

}  // namespace moebench
