// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/kernel_choice.h"

#include <gtest/gtest.h>

#include <random>

#include "core/testing/random_vec.h"
#include "core/util/error.h"
#include "kernels/cpu/thread_pool.h"

namespace moebench {
namespace {

TEST(KernelChoice, InterpolatesBetweenCountsAndScalesBeyond) {
  const KernelTiming t{"k", {1, 4, 8}, {10, 40, 48}};
  EXPECT_DOUBLE_EQ(timing_at(t, 1), 10);
  EXPECT_DOUBLE_EQ(timing_at(t, 2), 20);
  EXPECT_DOUBLE_EQ(timing_at(t, 6), 44);
  EXPECT_DOUBLE_EQ(timing_at(t, 16), 96);  // in proportion beyond the last count
  const KernelTiming from4{"k", {4, 8}, {40, 48}};
  EXPECT_DOUBLE_EQ(timing_at(from4, 1), 40);  // the first entry below the first count
}

TEST(KernelChoice, SwitchesWhereTheCurvesCross) {
  // a: 100 us flat to 8 tokens, then 10 us per token; b: 160 us flat to 32.
  const KernelTiming a{"a", {1, 8, 16, 32}, {100, 100, 180, 340}};
  const KernelTiming b{"b", {1, 8, 16, 32}, {160, 160, 160, 160}};
  const auto s = fastest_kernels({a, b});
  // a(T) = 100 + 10 (T - 8) < 160 up to T = 13, equal at 14 (the tie to a), b from 15.
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], (KernelSegment{1, "a"}));
  EXPECT_EQ(s[1], (KernelSegment{15, "b"}));
  EXPECT_EQ(describe(s), "a 1-14, b 15+");
  EXPECT_EQ(describe({{1, "a"}, {2, "b"}, {3, "a"}}), "a 1, b 2, a 3+");
}

// The test: at every token count measured, auto runs a kernel no
// slower than any other candidate measured there. Random curves, crossing
// several times, on different token grids.
TEST(KernelChoice, NeverPicksAKernelMeasuredSlower) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> us(50, 500);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<KernelTiming> ts;
    const int n = 2 + int(rng() % 3);
    for (int k = 0; k < n; ++k) {
      KernelTiming t;
      t.kernel = "k" + std::to_string(k);
      double tok = 1;
      while (tok <= 512) {
        t.tokens.push_back(tok);
        t.time_us.push_back(us(rng));
        tok += 1 + double(rng() % 40);
      }
      ts.push_back(t);
    }
    const auto segs = fastest_kernels(ts);
    auto pick = [&](int64_t T) {
      size_t i = 0;
      while (i + 1 < segs.size() && T >= segs[i + 1].first_tokens) ++i;
      return segs[i].kernel;
    };
    for (const auto& t : ts) {
      for (double T : t.tokens) {
        const std::string chosen = pick(int64_t(T));
        double chosen_us = 0;
        for (const auto& c : ts)
          if (c.kernel == chosen) chosen_us = timing_at(c, T);
        for (const auto& c : ts) {
          EXPECT_LE(chosen_us, timing_at(c, T)) << "trial " << trial << ": at " << T << " tokens "
                                                << chosen << " picked over " << c.kernel;
        }
      }
    }
  }
}

TEST(KernelChoice, RefusesMalformedTimings) {
  EXPECT_THROW(fastest_kernels({}), Error);
  EXPECT_THROW(fastest_kernels({{"a", {1, 2}, {3}}}), Error);
  EXPECT_THROW(fastest_kernels({{"a", {2, 1}, {3, 4}}}), Error);
  EXPECT_THROW(fastest_kernels({{"a", {0, 1}, {3, 4}}}), Error);
  try {
    fastest_kernels({{"a", {1, 2}, {3, -1}}});
    FAIL() << "a negative time was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
  }
}

TEST(KernelChoice, CandidatesAreThePackedOwnKernelsThisCpuRuns) {
  for (WeightDtype d : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
    for (const auto& name : auto_candidates(d)) {
      const auto k = make_expert_kernel(name);
      EXPECT_TRUE(k->supports(d)) << name;
      EXPECT_TRUE(k->needs_packed()) << name;
    }
  }
  EXPECT_TRUE(auto_candidates(WeightDtype::kFp16).empty());
}

// A segmented kernel runs each segment's kernel: its output is that
// kernel's output bit for bit, at counts on both sides of every switch.
TEST(KernelChoice, SegmentedKernelRunsEachSegmentsKernel) {
  const auto cands = auto_candidates(WeightDtype::kInt8);
  if (cands.size() < 2) GTEST_SKIP() << "fewer than two packed int8 kernels on this CPU";
  const std::vector<KernelSegment> segs = {{1, cands[0]}, {3, cands[1]}, {6, cands[0]}};
  const auto k = make_segmented_kernel("auto[test]", segs);
  EXPECT_EQ(k->name(), "auto[test]");
  EXPECT_TRUE(k->needs_packed());
  ExpertWeights e = ExpertWeights::random({128, 96}, WeightDtype::kInt8, 3);
  e.pack();
  ThreadPool pool(2);
  for (int64_t T : {1, 2, 3, 5, 6, 9}) {
    const std::string want = T < 3 || T >= 6 ? cands[0] : cands[1];
    EXPECT_EQ(kernel_for(*k, T), want) << T;
    const auto x = testing::random_vec(size_t(T * 128), 11 + uint64_t(T));
    const std::vector<float> w(size_t(T), 0.5f);
    std::vector<float> got(size_t(T * 128), 0.0f), ref(got);
    k->run(e, x.data(), T, w.data(), got.data(), &pool);
    make_expert_kernel(want)->run(e, x.data(), T, w.data(), ref.data(), &pool);
    EXPECT_EQ(got, ref) << T << " tokens";
  }
}

TEST(KernelChoice, SegmentedKernelRefusesBadSegments) {
  EXPECT_THROW(make_segmented_kernel("x", {}), Error);
  EXPECT_THROW(make_segmented_kernel("x", {{2, "reference"}}), Error);
  EXPECT_THROW(make_segmented_kernel("x", {{1, "reference"}, {1, "reference"}}), Error);
  EXPECT_THROW(make_segmented_kernel("x", {{1, "no-such-kernel"}}), Error);
  const auto packed = auto_candidates(WeightDtype::kBf16);
  if (!packed.empty()) {
    // the reference reads unpacked weights, the candidates packed ones
    EXPECT_THROW(make_segmented_kernel("x", {{1, "reference"}, {4, packed[0]}}), Error);
  }
}

}  // namespace
}  // namespace moebench
