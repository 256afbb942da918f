// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/token_memo.h"

#include <gtest/gtest.h>

namespace moebench {
namespace {

struct Budget {
  explicit Budget(int64_t b) { TokenMemo::set_budget(b); }
  ~Budget() { TokenMemo::set_budget(0); }
};

TEST(TokenMemo, ATokenIsWrittenOnceAndReadBack) {
  Budget budget(1 << 20);
  TokenMemo memo(10);
  TokenMemo::Table* t = memo.table("gate-reuse|from=1|to=2", 2);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(memo.table("gate-reuse|from=1|to=2", 2), t);  // one table per name
  EXPECT_NE(memo.table("gate-reuse|from=1|to=3", 2), t);
  const int32_t* ids = nullptr;
  const float* w = nullptr;
  EXPECT_FALSE(t->get(4, &ids, &w));
  const int32_t a[2] = {7, 3};
  const float aw[2] = {0.75f, 0.25f};
  t->put(4, a, aw);
  const int32_t b[2] = {1, 2};
  const float bw[2] = {0.5f, 0.5f};
  t->put(4, b, bw);  // already written: the first result stays
  ASSERT_TRUE(t->get(4, &ids, &w));
  EXPECT_EQ(ids[0], 7);
  EXPECT_EQ(ids[1], 3);
  EXPECT_EQ(w[0], 0.75f);
  EXPECT_FALSE(t->get(5, &ids, &w));
}

TEST(TokenMemo, TablesPastTheBudgetAreNotMadeAndTheirBytesReturn) {
  const int64_t before = TokenMemo::total_bytes();
  Budget budget(before + 1000 * (2 * 8 + 1) + 10);  // room for one table of 1,000 tokens, width 2
  {
    TokenMemo memo(1000);
    EXPECT_NE(memo.table("a", 2), nullptr);
    EXPECT_EQ(memo.table("b", 2), nullptr);  // over the budget: callers compute every token
    EXPECT_EQ(memo.table("b", 2), nullptr);
    EXPECT_EQ(memo.table("a", 3), nullptr);  // a name asked for with another width
    EXPECT_EQ(TokenMemo::total_bytes(), before + 1000 * 17);
  }
  EXPECT_EQ(TokenMemo::total_bytes(), before);  // freed with the memo
}

TEST(TokenMemo, NoTablesWithoutABudget) {
  Budget budget(0);
  TokenMemo memo(10);
  EXPECT_EQ(memo.table("a", 2), nullptr);
}

}  // namespace
}  // namespace moebench
