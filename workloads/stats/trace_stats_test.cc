#include "workloads/stats/trace_stats.h"

#include <gtest/gtest.h>

#include "core/trace/memory_source.h"

namespace moebench {
namespace {

// One sequence of 4 tokens, 2 layers, 4 experts, top-2, hand-checked.
MemoryTraceSource source() {
  TraceInfo info;
  info.model_name = "tiny";
  info.moe_layers = 2;
  info.routing.experts = 4;
  info.routing.top_k = 2;
  info.probs = ProbsStorage::kFull;
  info.h_trace = 2;
  info.sequences = {{0, 4}};
  MemoryTraceSource m(info);
  // layer 0 ids per token: {0,1} {0,2} {0,1} {3,2}; layer 1: {1,2} {1,2} {1,2} {1,2}
  const int32_t l0[4][2] = {{0, 1}, {0, 2}, {0, 1}, {3, 2}};
  for (int t = 0; t < 4; ++t) {
    TokenRecord r;
    r.ids = {l0[t][0], l0[t][1], 1, 2};
    r.weights = {0.5f, 0.5f, 0.5f, 0.5f};
    // probabilities rank the chosen experts first
    r.probs.assign(8, 0.1f);
    r.probs[l0[t][0]] = 0.4f;
    r.probs[l0[t][1]] = 0.3f;
    r.probs[4 + 1] = 0.4f;
    r.probs[4 + 2] = 0.3f;
    // gate inputs: layer 1 = layer 0 + (1, 1)
    r.gate_input = {float(t), 1.0f, float(t) + 1.0f, 2.0f};
    m.add(0, r);
  }
  return m;
}

TEST(TraceStats, HandComputedValues) {
  const MemoryTraceSource src = source();
  const TraceStats st = compute_stats(src, StatsOptions{1, 4});
  EXPECT_EQ(st.tokens, 4);
  EXPECT_EQ(st.counts[0], (std::vector<int64_t>{3, 2, 2, 1}));
  EXPECT_DOUBLE_EQ(st.load_max_over_mean[0], 3.0 / 2.0);
  EXPECT_DOUBLE_EQ(st.load_min_over_mean[0], 1.0 / 2.0);
  EXPECT_DOUBLE_EQ(st.load_max_over_mean[1], 2.0);
  // Overlaps at layer 0: {0,1}->{0,2}: 1, {0,2}->{0,1}: 1, {0,1}->{3,2}: 0  => (1+1+0)/3/2
  EXPECT_DOUBLE_EQ(st.overlap_frac[0], 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(st.overlap_frac[1], 1.0);
  // Reuse by rank over both layers: rank 0 reused 2 of 3 times at layer 0
  // (expert 0 at t=0,1 yes; t=2 no) and always at layer 1.
  ASSERT_EQ(st.reuse_by_rank.size(), 4u);
  EXPECT_DOUBLE_EQ(st.reuse_by_rank[0], (2.0 + 3.0) / 6.0);
  // Reuse distances: layer 0: e0 at 0,1,2 -> d=1,1; e1 at 0,2 -> 2; e2 at 1,3 -> 2; e3 first.
  // layer 1: e1, e2 at 0..3 -> three d=1 each. First uses: 3 (layer 0) + 2 (layer 1).
  EXPECT_EQ(st.reuse_distance_counts[0], 2 + 6);  // "1"
  EXPECT_EQ(st.reuse_distance_counts[1], 2);      // "2"
  EXPECT_EQ(st.reuse_distance_counts[9], 4 + 2);  // "first use"
  // Layer 1 = layer 0 + (1, 1) for every token, so the residual-corrected cosine is 1.
  ASSERT_EQ(st.cos_residual.size(), 1u);
  EXPECT_NEAR(st.cos_residual[0], 1.0, 1e-9);
  EXPECT_LT(st.cos_raw[0], 1.0);
  // Every layer-0 expert is followed by {1,2} at layer 1: conditional max 1.
  EXPECT_DOUBLE_EQ(st.coact_top1[0], 1.0);
  // DALI Fig. 8 heatmap (4 experts: kept). Layer 1 has {1, 2} at every token:
  // over the 3 transitions expert 1 -> 1 and 2 -> 2 each time.
  ASSERT_EQ(st.high_workload_heatmap.size(), 2u * 4 * 4);
  EXPECT_EQ(st.high_workload_heatmap[(1 * 4 + 1) * 4 + 1], 3);
  EXPECT_EQ(st.high_workload_heatmap[(1 * 4 + 2) * 4 + 2], 3);
  const auto j = st.to_json();
  EXPECT_EQ(j["high_workload_heatmap"][1][2][2].get<int>(), 3);
}

}  // namespace
}  // namespace moebench
