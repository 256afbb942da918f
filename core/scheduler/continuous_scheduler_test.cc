// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/scheduler/continuous_scheduler.h"

#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "core/util/detmath.h"

namespace moebench {
namespace {

using Tokens = std::vector<std::pair<int64_t, int64_t>>;

struct Ran {
  StepPlan plan;
  double start, end;
};

// Runs the scheduler against a clock where every step takes `step_ns`.
std::vector<Ran> serve(Scheduler& s, double step_ns) {
  std::vector<Ran> v;
  double now = 0;
  StepPlan sp;
  while (s.next(now, &sp)) {
    const double start = std::max(now, sp.not_before_ns);
    now = start + step_ns;
    v.push_back({sp, start, now});
  }
  return v;
}

TEST(ContinuousScheduler, AdmitsArrivalsBetweenStepsPrefillFirst) {
  auto s = make_scheduler("continuous");
  EXPECT_EQ(s->name(), "continuous");
  EXPECT_FALSE(s->plans_ahead());
  // Request 0 at 0 (prompt 2, decode 3), request 1 at 15 ns (prompt 1, decode 1).
  s->start({{{2, 3}, {1, 1}}, {0.0, 15.0}, 4, 0});
  const auto v = serve(*s, 10.0);
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0].plan.phase, Phase::kPrefill);
  EXPECT_EQ(v[0].plan.tokens, (Tokens{{0, 0}, {0, 1}}));
  EXPECT_EQ(v[1].plan.tokens, (Tokens{{0, 2}}));  // request 1 has not arrived at 10 ns
  EXPECT_EQ(v[1].plan.decode_step, 0);
  EXPECT_EQ(v[2].plan.phase, Phase::kPrefill);  // it has at 20 ns: its prefill first
  EXPECT_EQ(v[2].plan.tokens, (Tokens{{1, 0}}));
  EXPECT_EQ(v[3].plan.tokens, (Tokens{{0, 3}, {1, 1}}));  // both decode together
  EXPECT_EQ(v[4].plan.tokens, (Tokens{{0, 4}}));
  EXPECT_EQ(v[4].plan.decode_step, 2);
}

TEST(ContinuousScheduler, AnIdleMachineWaitsForTheNextArrival) {
  ContinuousScheduler s;
  s.start({{{1, 1}, {1, 1}}, {5.0, 1000.0}, 1, 0});
  const auto v = serve(s, 10.0);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].plan.not_before_ns, 5.0);
  EXPECT_EQ(v[0].start, 5.0);
  EXPECT_EQ(v[2].plan.not_before_ns, 1000.0);
  EXPECT_EQ(v[2].start, 1000.0);
  EXPECT_EQ(v[2].plan.tokens, (Tokens{{1, 0}}));
}

TEST(ContinuousScheduler, LimitsHoldAndEveryTokenRunsOnceInOrderNeverBeforeItsArrival) {
  std::vector<SequenceInfo> seqs;
  std::vector<double> arrival;
  uint64_t st = 7;
  double t = 0;
  for (int i = 0; i < 200; ++i) {
    seqs.push_back({int64_t(det::uniform01(st) * 40), 1 + int64_t(det::uniform01(st) * 20)});
    t += det::uniform01(st) * 30.0;
    arrival.push_back(t);
  }
  for (int chunked = 0; chunked < 2; ++chunked) {
    for (int64_t batch : {1, 3, 16}) {
      for (int64_t budget : {0, 8, 64}) {
        ContinuousScheduler s;
        s.start({seqs, arrival, batch, budget, chunked == 1});
        std::vector<int64_t> next(seqs.size(), 0);
        for (const Ran& r : serve(s, 10.0)) {
          ASSERT_FALSE(r.plan.tokens.empty());
          std::map<int64_t, int> per_seq;
          int64_t prompt_tokens = 0;
          for (const auto& [seq, pos] : r.plan.tokens) {
            EXPECT_EQ(pos, next[size_t(seq)]) << "batch " << batch << " budget " << budget;
            ++next[size_t(seq)];
            EXPECT_GE(r.start, arrival[size_t(seq)]);
            ++per_seq[seq];
            // Unchunked, a step is one phase; chunked, a step with a prompt token is a prefill
            // step.
            if (!chunked) {
              EXPECT_EQ(r.plan.phase == Phase::kPrefill, pos < seqs[size_t(seq)].prompt_len);
            } else if (pos < seqs[size_t(seq)].prompt_len) {
              EXPECT_EQ(r.plan.phase, Phase::kPrefill);
            }
            if (pos < seqs[size_t(seq)].prompt_len) ++prompt_tokens;
          }
          EXPECT_LE(int64_t(per_seq.size()), batch);
          // The token budget: a prefill longer than it runs alone; chunked, never exceeded.
          if (budget > 0 && prompt_tokens > budget) {
            EXPECT_EQ(per_seq.size(), 1u);
          }
          if (budget > 0 && chunked) {
            EXPECT_LE(int64_t(r.plan.tokens.size()), budget);
          }
        }
        for (size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(next[i], seqs[i].tokens()) << i;
      }
    }
  }
}

// Chunked prefill: decode tokens first, then prompt chunks filling the
// budget, a prompt's chunks in order over several steps beside others'
// decode tokens; the budget is never exceeded.
TEST(ContinuousScheduler, ChunkedPrefillFillsTheBudgetBesideDecodeTokens) {
  ContinuousScheduler s;
  // Request 0 (prompt 3, decode 4) at 0; request 1 (prompt 6, decode 1) at 15 ns. Budget 4.
  s.start({{{3, 4}, {6, 1}}, {0.0, 15.0}, 4, 4, true});
  const auto v = serve(s, 10.0);
  ASSERT_GE(v.size(), 5u);
  EXPECT_EQ(v[0].plan.tokens, (Tokens{{0, 0}, {0, 1}, {0, 2}}));  // the whole prompt fits
  EXPECT_EQ(v[0].plan.phase, Phase::kPrefill);
  EXPECT_EQ(v[1].plan.tokens, (Tokens{{0, 3}}));  // request 1 not there yet at 10 ns
  EXPECT_EQ(v[1].plan.phase, Phase::kDecode);
  // At 20 ns: request 0's decode token, then 3 of request 1's 6 prompt tokens.
  EXPECT_EQ(v[2].plan.tokens, (Tokens{{0, 4}, {1, 0}, {1, 1}, {1, 2}}));
  EXPECT_EQ(v[2].plan.phase, Phase::kPrefill);  // a mixed step is a prefill step
  EXPECT_EQ(v[3].plan.tokens, (Tokens{{0, 5}, {1, 3}, {1, 4}, {1, 5}}));
  EXPECT_EQ(v[4].plan.tokens, (Tokens{{0, 6}, {1, 6}}));  // its last chunk gave the first token
  EXPECT_EQ(v.size(), 5u);
}

// An M/D/1 queue: one server (batch_size 1), a fixed service time (every
// request a one-token prompt and 3 decode tokens: 4 steps of 1 ms), Poisson
// arrivals at load rho. The mean wait before service is rho D / (2 (1 - rho))
// (Pollaczek-Khinchine); the simulated mean must lie within 3 standard errors
// (batch means over 40 batches of 2,000 requests).
TEST(ContinuousScheduler, MD1QueueingMatchesPollaczekKhinchine) {
  const double step = 1e6, service = 4 * step;
  for (double rho : {0.3, 0.7}) {
    const int n = 80000;
    std::vector<SequenceInfo> seqs(n, SequenceInfo{1, 3});
    std::vector<double> arrival;
    uint64_t st = 11;
    double t = 0;
    for (int i = 0; i < n; ++i) {
      t += -std::log(1.0 - det::uniform01(st)) * service / rho;
      arrival.push_back(t);
    }
    ContinuousScheduler s;
    s.start({seqs, arrival, 1, 0});
    std::vector<double> wait(n, -1);
    for (const Ran& r : serve(s, step)) {
      const int64_t seq = r.plan.tokens[0].first;
      if (wait[size_t(seq)] < 0) wait[size_t(seq)] = r.start - arrival[size_t(seq)];
    }
    const int batches = 40, per = n / batches;
    std::vector<double> means;
    for (int b = 0; b < batches; ++b) {
      double sum = 0;
      for (int i = b * per; i < (b + 1) * per; ++i) sum += wait[size_t(i)];
      means.push_back(sum / per);
    }
    double m = 0, v = 0;
    for (double x : means) m += x / batches;
    for (double x : means) v += (x - m) * (x - m) / (batches - 1);
    const double se = std::sqrt(v / batches);
    const double formula = rho * service / (2 * (1 - rho));
    EXPECT_NEAR(m, formula, 3 * se) << "rho " << rho << ": mean wait " << m / 1e6 << " ms, formula "
                                    << formula / 1e6 << " ms, standard error " << se / 1e6;
    EXPECT_LT(se, 0.1 * formula);  // the test has the power to tell
  }
}

}  // namespace
}  // namespace moebench
