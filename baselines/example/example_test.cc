// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The tutorial's FIFO cache: evicts in order of entry, whatever the use.
#include <gtest/gtest.h>

#include "baselines/example/components.h"
#include "baselines/testing.h"

namespace moebench {
namespace {

TEST(ExampleFifo, EvictsTheOldestEntryEvenIfJustUsed) {
  FifoCache c{FifoCache::Params{}};
  c.reset(CacheSetup{1, 4, 2, false});
  Context ctx;
  c.on_insert(0, 2, ctx);
  c.on_insert(0, 0, ctx);
  const std::vector<SlotRef> cand = {{0, 0}, {0, 2}};
  EXPECT_EQ(c.victim(cand, SlotRef{0, 1}, ctx), 1u);  // expert 2 entered first
}

TEST(ExampleFifo, RunsInTheEngineAgainstLru) {
  // One layer, 4 experts, 2 slots holding experts 0 and 1. Tokens use {0,2}, {0,3}, {0,2}:
  // LRU keeps the reused expert 0; FIFO evicts it when it is the oldest entry.
  const auto src = testing::routing(1, 4, 2, {{{0, 2}}, {{0, 3}}, {{0, 2}}});
  const ModelSpec m = testing::tiny_model(1, 4, 2);
  auto lru = testing::run(m, testing::round_hardware(),
                          testing::strategy("gpu-ondemand", "lru", "uniform", 2), src);
  auto fifo = testing::run(m, testing::round_hardware(),
                           testing::strategy("gpu-ondemand", "fifo", "uniform", 2), src);
  EXPECT_EQ(lru.metrics.token_hits[1], 3);  // 0, 0, 0
  // FIFO: 0 hits at token 1, then goes as the oldest entry to make room for 2: a miss at
  // token 2, reloaded, a hit at token 3.
  EXPECT_EQ(fifo.metrics.token_hits[1], 2);
}

}  // namespace
}  // namespace moebench
