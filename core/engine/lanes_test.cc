// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/lanes.h"
#include "core/engine/residency.h"
#include "core/util/error.h"

#include <algorithm>
#include <deque>
#include <random>

#include <set>

#include <gtest/gtest.h>

namespace moebench {
namespace {

Transfer xfer(TaskKind kind, double issue, double dur) {
  Transfer t;
  t.kind = kind;
  t.issue_ns = issue;
  t.earliest_ns = issue;
  t.duration_ns = dur;
  return t;
}

// The task kinds' table (lanes.cc): one row per kind of the enum, in its
// order (task_info indexes it), each name once, found by its name; the
// demand copies are the ones a demand-first link places first.
TEST(TaskKinds, OneRowPerKindInTheEnumsOrderWithUniqueNames) {
  std::set<std::string> names;
  size_t i = 0;
  for (const TaskKindInfo& k : task_kinds()) {
    EXPECT_EQ(size_t(k.kind), i++) << k.name;
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_EQ(task_info_named(k.name), &task_info(k.kind));
    EXPECT_STREQ(to_string(k.kind), k.name);
    EXPECT_EQ(k.demand, k.kind == TaskKind::kDemandLoad || k.kind == TaskKind::kKvToGpu) << k.name;
  }
  EXPECT_EQ(i, size_t(TaskKind::kCount));
  EXPECT_EQ(task_info_named("gpu-magic"), nullptr);
  EXPECT_EQ(task_info(TaskKind::kPrefetchLoad).cls, TaskClass::kWeights);
  EXPECT_EQ(task_info(TaskKind::kActToGpu).cls, TaskClass::kActivations);
}

TEST(Link, DemandLoadOvertakesQueuedPrefetches) {
  Link link(LinkOrder::kDemandFirst);
  const int64_t p1 = link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));  // [0, 5]
  const int64_t p2 = link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));  // [5, 10]
  const int64_t d = link.issue(xfer(TaskKind::kDemandLoad, 1, 5));     // p1 has started; p2 has not
  EXPECT_DOUBLE_EQ(link.get(p1).end_ns, 5);
  EXPECT_DOUBLE_EQ(link.get(d).start_ns, 5);
  EXPECT_DOUBLE_EQ(link.get(d).end_ns, 10);
  EXPECT_DOUBLE_EQ(link.get(p2).start_ns, 10);
  EXPECT_DOUBLE_EQ(link.free_ns(), 15);
}

TEST(Link, FifoKeepsIssueOrder) {
  Link link(LinkOrder::kFifo);
  link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));
  const int64_t p2 = link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));
  const int64_t d = link.issue(xfer(TaskKind::kDemandLoad, 1, 5));
  EXPECT_DOUBLE_EQ(link.get(p2).end_ns, 10);
  EXPECT_DOUBLE_EQ(link.get(d).start_ns, 10);
}

TEST(Link, FixedTransfersAreNeverMoved) {
  Link link(LinkOrder::kDemandFirst);
  link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));
  const int64_t p2 = link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));
  link.fix(p2);  // a GPU task already waits for it
  const int64_t d = link.issue(xfer(TaskKind::kDemandLoad, 1, 5));
  EXPECT_DOUBLE_EQ(link.get(p2).end_ns, 10);
  EXPECT_DOUBLE_EQ(link.get(d).start_ns, 10);
}

TEST(Link, AdvanceCompletesInTimeOrderAndCancelDropsQueuedWork) {
  Link link(LinkOrder::kDemandFirst);
  const int64_t a = link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));
  const int64_t b = link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));
  const int64_t c = link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));
  std::vector<int64_t> done;
  link.advance(5, &done);  // a transfer ending exactly at `now` is complete
  EXPECT_EQ(done, (std::vector<int64_t>{a}));
  EXPECT_TRUE(link.cancel(c, 6));
  EXPECT_FALSE(link.cancel(b, 6));  // b started at 5
  link.advance(1e9, &done);
  EXPECT_EQ(done, (std::vector<int64_t>{a, b}));
  EXPECT_DOUBLE_EQ(link.busy_ns(), 10);
}

// A demand load moves the transfers behind it up to the first one that
// waits anyway (issued later than the link frees): moved_to stops there, and
// every transfer's times are those of a queue rescheduled in full.
TEST(Link, MovedToEndsAtTheFirstTransferThatKeepsItsTimes) {
  Link link(LinkOrder::kDemandFirst);
  link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));                      // [0, 5]
  const int64_t p2 = link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));   // [5, 10]
  const int64_t p3 = link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));   // [10, 15]
  const int64_t p4 = link.issue(xfer(TaskKind::kPrefetchLoad, 40, 5));  // [40, 45]: waits
  const int64_t p5 = link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));   // [45, 50]
  size_t from = 99, to = 99;
  const int64_t d = link.issue(xfer(TaskKind::kDemandLoad, 1, 5), &from, &to);
  EXPECT_EQ(from, 1u);  // before p2, which had not started
  EXPECT_EQ(to, 4u);    // p2 and p3 moved; p4 starts at its issue time as before
  EXPECT_DOUBLE_EQ(link.get(d).start_ns, 5);
  EXPECT_DOUBLE_EQ(link.get(p2).start_ns, 10);
  EXPECT_DOUBLE_EQ(link.get(p3).end_ns, 20);
  EXPECT_DOUBLE_EQ(link.get(p4).start_ns, 40);
  EXPECT_DOUBLE_EQ(link.get(p5).start_ns, 45);
  // A second demand load pushes p3 past p4's issue time: p4 and p5 move too.
  link.issue(xfer(TaskKind::kDemandLoad, 2, 22), &from, &to);
  EXPECT_EQ(to, 7u);
  EXPECT_DOUBLE_EQ(link.get(p4).start_ns, 42);
  EXPECT_DOUBLE_EQ(link.get(p5).end_ns, 52);
  EXPECT_DOUBLE_EQ(link.free_ns(), 52);
}

// The demand-first rule as first written: a scan of the whole queue. The
// link finds the place by bisection; every random history must agree.
size_t place_by_scan(const Link& link, double issue_ns) {
  const auto& q = link.queue();
  size_t pos = q.size();
  for (size_t i = 0; i < q.size(); ++i) {
    const Transfer& t = link.get(q[i]);
    if (t.kind == TaskKind::kBufferCopy) {
      pos = q.size();
      continue;
    }
    const bool demand = t.kind == TaskKind::kDemandLoad || t.kind == TaskKind::kKvToGpu;
    if (!t.fixed && !demand && t.start_ns > issue_ns && pos == q.size()) pos = i;
  }
  return pos;
}

TEST(Link, DemandPlaceAgreesWithAScanOfTheQueue) {
  const TaskKind kinds[] = {TaskKind::kPrefetchLoad, TaskKind::kDemandLoad, TaskKind::kSwapLoad,
                            TaskKind::kKvToGpu,      TaskKind::kBufferCopy, TaskKind::kRecopy};
  int64_t demands = 0, moved = 0;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    Link link(LinkOrder::kDemandFirst);
    double now = 0;
    std::vector<int64_t> done;
    for (int op = 0; op < 400; ++op) {
      const int r = int(rng() % 10);
      if (r < 6) {
        // Buffer copies are rare in some histories and absent in others.
        const TaskKind k = kinds[rng() % (seed % 2 ? 6 : 4)];
        Transfer t = xfer(k, now + double(rng() % 3), 1 + double(rng() % 7));
        t.earliest_ns = t.issue_ns + double(rng() % 4 == 0 ? rng() % 20 : 0);
        const bool demand = k == TaskKind::kDemandLoad || k == TaskKind::kKvToGpu;
        const size_t want = demand ? place_by_scan(link, t.issue_ns) : link.queue().size();
        size_t from = 999999;
        link.issue(t, &from);
        ASSERT_EQ(from, want) << "seed " << seed << " op " << op;
        demands += demand;
        moved += demand && want < link.queue().size() - 1;
      } else if (r < 7 && !link.queue().empty()) {
        link.fix(link.queue()[rng() % link.queue().size()]);
      } else if (r < 8 && !link.queue().empty()) {
        link.cancel(link.queue()[rng() % link.queue().size()], now);
      } else {
        now += double(rng() % 6);
        done.clear();
        link.advance(now, &done);
      }
      // The fixed transfers are a prefix of the queue (what fix() relies on).
      const auto q = link.queue();
      size_t prefix = 0;
      while (prefix < q.size() && link.get(q[prefix]).fixed) ++prefix;
      for (size_t i = prefix; i < q.size(); ++i)
        ASSERT_FALSE(link.get(q[i]).fixed) << "seed " << seed << " op " << op << " at " << i;
    }
  }
  EXPECT_GT(demands, 500);
  EXPECT_GT(moved, 100);  // the histories do move demand loads forward
}

// The link's queues pop from the front by a head index and give the space
// back now and then: against a deque through 20,000 random operations.
TEST(Link, FrontQueueBehavesAsADeque) {
  std::mt19937 rng(7);
  FrontQueue<int64_t> q;
  std::deque<int64_t> d;
  int64_t next = 0;
  for (int op = 0; op < 20000; ++op) {
    const int r = int(rng() % 10);
    if (r < 5) {
      q.push_back(next);
      d.push_back(next++);
    } else if (r < 6 && !d.empty()) {
      const size_t i = rng() % d.size();
      q.insert(i, next);
      d.insert(d.begin() + std::ptrdiff_t(i), next++);
    } else if (r < 7 && !d.empty()) {
      const size_t i = rng() % d.size();
      q.erase(i);
      d.erase(d.begin() + std::ptrdiff_t(i));
    } else if (!d.empty()) {
      q.pop_front();
      d.pop_front();
    }
    ASSERT_EQ(q.size(), d.size()) << "op " << op;
    if (!d.empty()) {
      ASSERT_EQ(q.front(), d.front()) << "op " << op;
      ASSERT_EQ(q.back(), d.back()) << "op " << op;
      const size_t i = rng() % d.size();
      ASSERT_EQ(q[i], d[i]) << "op " << op;
    }
  }
  EXPECT_TRUE(std::equal(q.begin(), q.end(), d.begin(), d.end()));
}

// The under-copy terms' measure: how much of a window the queued transfers
// take (one at a time on the link), gaps and the window's edges excluded.
TEST(Link, CopyingCountsTheQueuedTransfersInsideAWindow) {
  Link link(LinkOrder::kFifo);
  link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));  // [0, 5]
  link.issue(xfer(TaskKind::kPrefetchLoad, 8, 4));  // [8, 12]
  EXPECT_DOUBLE_EQ(link.copying_ns(0, 20), 9.0);
  EXPECT_DOUBLE_EQ(link.copying_ns(3, 10), 4.0);  // [3, 5] and [8, 10]
  EXPECT_DOUBLE_EQ(link.copying_ns(5, 8), 0.0);   // the gap
  EXPECT_DOUBLE_EQ(link.copying_ns(12, 30), 0.0);
  std::vector<int64_t> done;
  link.advance(6, &done);  // the first completes: no longer queued
  EXPECT_DOUBLE_EQ(link.copying_ns(0, 20), 4.0);
}

// With a history kept, completed transfers count too until they are
// forgotten (a caller that asks about nothing before that time).
TEST(Link, CopyingCountsCompletedTransfersWhileAHistoryIsKept) {
  Link link(LinkOrder::kFifo);
  link.keep_history(true);
  link.issue(xfer(TaskKind::kPrefetchLoad, 0, 5));   // [0, 5]
  link.issue(xfer(TaskKind::kPrefetchLoad, 8, 4));   // [8, 12]
  link.issue(xfer(TaskKind::kPrefetchLoad, 20, 2));  // [20, 22]
  std::vector<int64_t> done;
  link.advance(13, &done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_DOUBLE_EQ(link.copying_ns(0, 30), 11.0);
  EXPECT_DOUBLE_EQ(link.copying_ns(3, 21), 7.0);  // [3, 5], [8, 12], [20, 21]
  link.forget_before(5);                          // [0, 5] ended at 5: forgotten
  EXPECT_DOUBLE_EQ(link.copying_ns(0, 30), 6.0);
  link.forget_before(100);  // the queued one stays
  EXPECT_DOUBLE_EQ(link.copying_ns(0, 30), 2.0);
}

TEST(EventOrder, TimeThenLanePriorityThenSequence) {
  struct E {
    double t;
    Lane lane;
    int64_t seq;
  };
  std::vector<E> ev = {{5, Lane::kGpu, 0},
                       {5, Lane::kH2D, 3},
                       {4, Lane::kCpu, 9},
                       {5, Lane::kH2D, 1},
                       {5, Lane::kCpu, 2}};
  std::sort(ev.begin(), ev.end(), [](const E& a, const E& b) {
    return event_before(a.t, a.lane, a.seq, b.t, b.lane, b.seq);
  });
  std::vector<int64_t> order;
  for (const auto& e : ev) order.push_back(e.seq);
  // time 4 first; at time 5: H2D (seq 1, then 3), then GPU, then CPU.
  EXPECT_EQ(order, (std::vector<int64_t>{9, 1, 3, 0, 2}));
}

TEST(FifoLane, StartsAtMaxOfReadyAndFree) {
  FifoLane lane;
  double end;
  EXPECT_DOUBLE_EQ(lane.submit(3, 2, &end), 3);
  EXPECT_DOUBLE_EQ(end, 5);
  EXPECT_DOUBLE_EQ(lane.submit(1, 4, &end), 5);  // waits for the lane
  EXPECT_DOUBLE_EQ(end, 9);
  EXPECT_DOUBLE_EQ(lane.busy_ns(), 6);
}

// The cache share and the prefetch buffer: together at most the layer's
// experts; which expert came in through the buffer is cleared when it leaves.
TEST(Residency, CacheShareAndPrefetchBuffer) {
  Residency r(2, 8, 3, 2, false);
  EXPECT_EQ(r.slots_per_layer(), 5);
  EXPECT_EQ(r.cache_slots(), 3);
  EXPECT_EQ(r.buffer_slots(), 2);
  Residency capped(2, 8, 7, 4, false);  // 7 + 4 > 8 experts: the buffer gets what is left
  EXPECT_EQ(capped.slots_per_layer(), 8);
  EXPECT_EQ(capped.cache_slots(), 7);
  EXPECT_EQ(capped.buffer_slots(), 1);
  Residency plain(2, 8, 4, false);
  EXPECT_EQ(plain.buffer_slots(), 0);
  EXPECT_EQ(plain.cache_slots(), 4);
  r.begin_transfer(1, 6, 0, 10.0);
  r.set_buffered(1, 6, true);
  EXPECT_TRUE(r.buffered(1, 6));
  EXPECT_FALSE(r.buffered(0, 6));
  r.complete(1, 6);
  EXPECT_TRUE(r.buffered(1, 6));
  r.evict(1, 6);
  EXPECT_FALSE(r.buffered(1, 6));
}

// Per-layer cache shares (a placement's layer_shares): each layer
// its own cache share and beside it what the buffer may still take, at most
// the layer's experts; only in a per-layer pool and before any placement.
TEST(Residency, PerLayerCacheShares) {
  Residency r(3, 8, 2, 4, false);  // nominal: 2 cached + 4 buffered per layer
  r.set_cache_shares({8, 3, 0});
  EXPECT_EQ(r.cache_share(0), 8);
  EXPECT_EQ(r.buffer_share(0), 0);  // a whole layer: no room for a buffer
  EXPECT_EQ(r.cache_share(1), 3);
  EXPECT_EQ(r.buffer_share(1), 4);
  EXPECT_EQ(r.capacity(1), 7);
  EXPECT_EQ(r.capacity(2), 4);
  for (int32_t e = 0; e < 3; ++e) r.place(1, e);
  EXPECT_FALSE(r.has_room_in(1, false));                       // the cache share is full
  EXPECT_TRUE(r.has_room_in(1, true));                         // the buffer is not
  EXPECT_FALSE(r.has_room_in(2, false));                       // a share of 0
  EXPECT_THROW(r.set_cache_shares({1, 1, 1}), InternalError);  // something is placed already
  Residency global(3, 8, 2, true);
  EXPECT_THROW(global.set_cache_shares({2, 2, 2}), InternalError);
  Residency fresh(3, 8, 2, false);
  EXPECT_THROW(fresh.set_cache_shares({2, 2}), InternalError);  // one share per layer
}

}  // namespace
}  // namespace moebench
