// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Every scheduler in the list (scheduler.cc) runs here on the same inputs,
// as every policy component runs in baselines/conformance_test.cc: a new one
// is checked without a line of test of its own (docs/ADDING_A_SCHEDULER.md).
#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "core/scheduler/scheduler.h"
#include "core/util/detmath.h"

namespace moebench {
namespace {

struct Ran {
  StepPlan plan;
  double start;
};

// Runs `s` to its end against a clock where a step takes step_ns per token
// plus 7 ns (so that time depends on what the scheduler chose).
std::vector<Ran> serve(Scheduler& s, double step_ns) {
  std::vector<Ran> v;
  double now = 0;
  StepPlan sp;
  while (s.next(now, &sp)) {
    const double start = std::max(now, sp.not_before_ns);
    now = start + 7.0 + step_ns * double(sp.tokens.size());
    v.push_back({sp, start});
    if (v.size() > 100000) break;  // a scheduler that never ends fails below, not by hanging
  }
  return v;
}

// A small served workload drawn from `seed`: 1-6 requests of 0-5 prompt and
// 0-4 decode tokens (at least one of the two), arriving over 0-200 ns.
SchedulerInput input(uint64_t seed, const Scheduler& s) {
  uint64_t state = seed;
  const auto draw = [&state](uint64_t n) { return int64_t(det::splitmix64(state) % n); };
  SchedulerInput in;
  const int64_t n = 1 + draw(6);
  double at = 0;
  for (int64_t i = 0; i < n; ++i) {
    SequenceInfo q{draw(6), draw(5)};
    if (q.tokens() == 0) q.decode_len = 1;
    in.sequences.push_back(q);
    if (s.serves_arrivals()) {
      in.arrival_ns.push_back(at);
      at += double(draw(40));
    }
  }
  in.batch_size = 1 + draw(3);
  const std::vector<std::string> own = s.settings();
  const auto reads = [&](const char* k) { return std::count(own.begin(), own.end(), k) > 0; };
  if (reads("max_batch_tokens")) in.max_batch_tokens = 2 + draw(6);
  if (reads("chunked_prefill")) in.chunked_prefill = draw(2) == 1;
  return in;
}

TEST(EveryScheduler, KnowsItsNameItsDocAndOnlyWorkloadKeys) {
  ASSERT_FALSE(scheduler_names().empty());
  EXPECT_EQ(scheduler_names().front(), WorkloadSpec::kDefaultScheduler);  // the list's first
  const auto& keys = WorkloadSpec::schema();
  for (const std::string& name : scheduler_names()) {
    const auto s = make_scheduler(name);
    EXPECT_EQ(s->name(), name);
    EXPECT_FALSE(scheduler_doc(name).empty()) << name;
    // A key it reads that the workload does not have could never be set.
    for (const std::string& k : s->settings()) EXPECT_TRUE(keys.has_field(k)) << name << ": " << k;
  }
  EXPECT_FALSE(make_scheduler(WorkloadSpec::kDefaultScheduler)->serves_arrivals());
}

// Every token of every sequence runs once, a sequence's in order, none
// before its request arrives, a step holds at most batch_size sequences, a
// step with a prompt token is a prefill step, and a decode step's tokens
// are all past their prompts; two runs are the same, and a scheduler that
// plans ahead plans the same steps whatever the clock.
TEST(EveryScheduler, RunsEveryTokenOnceInOrderAfterItsArrival) {
  for (const std::string& name : scheduler_names()) {
    for (uint64_t seed = 1; seed <= 200; ++seed) {
      SCOPED_TRACE(name + " seed " + std::to_string(seed));
      auto s = make_scheduler(name);
      const SchedulerInput in = input(seed, *s);
      s->start(in);
      const std::vector<Ran> v = serve(*s, 3.0);
      std::map<int64_t, int64_t> next_pos;  // per sequence, the position it must run next
      for (const Ran& r : v) {
        ASSERT_FALSE(r.plan.tokens.empty());
        std::set<int64_t> seqs;
        bool prompt_token = false;
        for (const auto& [q, p] : r.plan.tokens) {
          ASSERT_GE(q, 0);
          ASSERT_LT(q, int64_t(in.sequences.size()));
          ASSERT_EQ(p, next_pos[q]) << "sequence " << q;
          ++next_pos[q];
          seqs.insert(q);
          prompt_token |= p < in.sequences[size_t(q)].prompt_len;
          if (!in.arrival_ns.empty()) ASSERT_GE(r.start, in.arrival_ns[size_t(q)]);
        }
        EXPECT_LE(int64_t(seqs.size()), in.batch_size);
        EXPECT_EQ(r.plan.phase, prompt_token ? Phase::kPrefill : Phase::kDecode);
      }
      for (size_t q = 0; q < in.sequences.size(); ++q) {
        EXPECT_EQ(next_pos[int64_t(q)], in.sequences[q].tokens()) << "sequence " << q;
      }
      auto again = make_scheduler(name);
      again->start(in);
      const std::vector<Ran> w = serve(*again, s->plans_ahead() ? 50.0 : 3.0);
      ASSERT_EQ(w.size(), v.size());
      for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(w[i].plan, v[i].plan) << "step " << i;
    }
  }
}

}  // namespace
}  // namespace moebench
