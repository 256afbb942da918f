// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/routing_cache.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "baselines/testing.h"

namespace moebench {
namespace {

// A workload of baselines/testing.h's routing() (2 layers, 4 experts, top-2, one sequence of 12
// decode tokens) whose content key is the test's to choose; counts how often it is read.
std::vector<std::vector<std::vector<int32_t>>> ids(int first_expert) {
  std::vector<std::vector<std::vector<int32_t>>> out;
  for (int t = 0; t < 12; ++t) {
    out.push_back({});
    for (int l = 0; l < 2; ++l)
      out.back().push_back({(first_expert + t + l) % 4, (first_expert + t + l + 1) % 4});
  }
  return out;
}

class KeyedSource : public MemoryTraceSource {
 public:
  KeyedSource(std::string key, int first_expert)
      : MemoryTraceSource(testing::routing(2, 4, 2, ids(first_expert))), key_(std::move(key)) {}
  std::string content_key() const override { return key_; }
  std::unique_ptr<SequenceReader> open(int64_t seq, unsigned fields) const override {
    ++opens;
    return MemoryTraceSource::open(seq, fields);
  }
  mutable std::atomic<int> opens{0};

 private:
  std::string key_;
};

TEST(RoutingCache, CasesReadingOneWorkloadShareOneRouting) {
  reset_routing_cache(int64_t(1) << 30);
  KeyedSource a("k1", 0), b("k1", 0), other("k2", 1);
  auto ra = shared_run_routing(a, 0);
  auto rb = shared_run_routing(b, 0);  // another case's source with the same content
  EXPECT_EQ(ra.get(), rb.get());
  EXPECT_EQ(b.opens, 0);  // not read at all
  EXPECT_NE(shared_run_routing(other, 0).get(), ra.get());
  EXPECT_NE(shared_run_routing(a, 2).get(), ra.get());  // kept top-p scores: another routing
  const RoutingCacheStats st = routing_cache_stats();
  EXPECT_EQ(st.builds, 3);
  EXPECT_EQ(st.hits, 1);
  EXPECT_EQ(st.entries, 3);
  // The shared routing is the one the case would have built.
  const RunRouting own(b, 0);
  for (int64_t t = 0; t < 12; ++t)
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(own.ids(t, l)[j], ra->ids(t, l)[j]);
}

TEST(RoutingCache, AnEmptyKeyOrAZeroBudgetNeverShares) {
  reset_routing_cache(int64_t(1) << 30);
  KeyedSource unkeyed("", 0);
  EXPECT_NE(shared_run_routing(unkeyed, 0).get(), shared_run_routing(unkeyed, 0).get());
  reset_routing_cache(0);
  KeyedSource a("k1", 0);
  EXPECT_NE(shared_run_routing(a, 0).get(), shared_run_routing(a, 0).get());
  EXPECT_EQ(routing_cache_stats().entries, 0);
}

TEST(RoutingCache, TheLeastRecentlyUsedLeaveBeyondTheBudgetAndALargerOneIsNotKept) {
  KeyedSource a("a", 0), b("b", 1), c("c", 2);
  const int64_t one = RunRouting(a, 0).bytes();
  reset_routing_cache(2 * one);
  auto ra = shared_run_routing(a, 0);
  shared_run_routing(b, 0);
  shared_run_routing(a, 0);  // a used after b: b is the least recently used
  shared_run_routing(c, 0);
  RoutingCacheStats st = routing_cache_stats();
  EXPECT_EQ(st.entries, 2);
  EXPECT_LE(st.bytes, st.budget_bytes);
  EXPECT_EQ(shared_run_routing(a, 0).get(), ra.get());  // still there
  const int64_t builds = routing_cache_stats().builds;
  shared_run_routing(b, 0);  // gone: built again
  EXPECT_EQ(routing_cache_stats().builds, builds + 1);
  reset_routing_cache(one - 1);
  shared_run_routing(a, 0);
  EXPECT_EQ(routing_cache_stats().entries, 0);
}

TEST(RoutingCache, CasesAskingAtOnceWaitForOneBuild) {
  reset_routing_cache(int64_t(1) << 30);
  KeyedSource a("k", 0);
  std::vector<std::shared_ptr<const RunRouting>> got(8);
  std::vector<std::thread> ts;
  for (size_t i = 0; i < got.size(); ++i)
    ts.emplace_back([&, i] { got[i] = shared_run_routing(a, 0); });
  for (auto& t : ts) t.join();
  for (const auto& g : got) EXPECT_EQ(g.get(), got[0].get());
  EXPECT_EQ(routing_cache_stats().builds, 1);
  EXPECT_EQ(a.opens, 1);  // its one sequence read once
  reset_routing_cache();
}

}  // namespace
}  // namespace moebench
