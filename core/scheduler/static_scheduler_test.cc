// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/scheduler/static_scheduler.h"

#include <gtest/gtest.h>

#include "core/util/error.h"

namespace moebench {
namespace {

std::vector<StepPlan> all_steps(Scheduler& s) {
  std::vector<StepPlan> v;
  StepPlan sp;
  while (s.next(0.0, &sp)) v.push_back(sp);
  return v;
}

using Tokens = std::vector<std::pair<int64_t, int64_t>>;

TEST(StaticScheduler, BatchesArePrefilledThenDecodedToTheirLongestSequence) {
  auto s = make_scheduler("static");
  EXPECT_EQ(s->name(), "static");
  EXPECT_TRUE(s->plans_ahead());
  // Three sequences, batches of two: {0, 1} then {2}.
  s->start({{{2, 3}, {1, 1}, {1, 2}}, {}, 2});
  const auto v = all_steps(*s);
  ASSERT_EQ(v.size(), 1u + 3u + 1u + 2u);
  EXPECT_EQ(v[0].phase, Phase::kPrefill);
  EXPECT_EQ(v[0].batch, 0);
  EXPECT_EQ(v[0].decode_step, -1);
  EXPECT_EQ(v[0].tokens, (Tokens{{0, 0}, {0, 1}, {1, 0}}));
  EXPECT_EQ(v[1].tokens, (Tokens{{0, 2}, {1, 1}}));  // both sequences' first decode token
  EXPECT_EQ(v[2].tokens, (Tokens{{0, 3}}));          // sequence 1 has ended
  EXPECT_EQ(v[3].tokens, (Tokens{{0, 4}}));
  EXPECT_EQ(v[3].decode_step, 2);
  EXPECT_EQ(v[4].phase, Phase::kPrefill);
  EXPECT_EQ(v[4].batch, 1);
  EXPECT_EQ(v[4].tokens, (Tokens{{2, 0}}));
  EXPECT_EQ(v[6].tokens, (Tokens{{2, 2}}));
  EXPECT_EQ(v[6].decode_step, 1);
}

TEST(StaticScheduler, EveryTokenOnceAndInOrderForEveryBatchSize) {
  const std::vector<SequenceInfo> seqs = {{3, 0}, {0, 2}, {4, 5}, {1, 1}, {2, 3}};
  for (int64_t b = 1; b <= 7; ++b) {
    StaticScheduler s;
    s.start({seqs, {}, b});
    std::vector<int64_t> next(seqs.size(), 0);
    for (const StepPlan& sp : all_steps(s)) {
      EXPECT_FALSE(sp.tokens.empty());
      for (const auto& [seq, pos] : sp.tokens) {
        EXPECT_EQ(pos, next[size_t(seq)]) << "batch size " << b;
        ++next[size_t(seq)];
      }
    }
    for (size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(next[i], seqs[i].tokens()) << i;
  }
}

TEST(StaticScheduler, ABatchWithoutPromptsStartsWithItsFirstDecodeStep) {
  StaticScheduler s;
  s.start({{{0, 2}, {0, 1}}, {}, 2});
  const auto v = all_steps(s);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].phase, Phase::kDecode);
  EXPECT_EQ(v[0].decode_step, 0);
  EXPECT_EQ(v[0].tokens, (Tokens{{0, 0}, {1, 0}}));
  StaticScheduler none;
  none.start({{}, {}, 4});
  StepPlan sp;
  EXPECT_FALSE(none.next(0.0, &sp));
}

TEST(Scheduler, AnUnknownNameIsRefusedWithTheKnownOnes) {
  try {
    make_scheduler("fifo");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected one of static, continuous, found \"fifo\""),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace moebench
