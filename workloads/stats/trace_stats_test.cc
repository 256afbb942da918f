// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/stats/trace_stats.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/trace/memory_source.h"
#include "core/util/error.h"

namespace moebench {
namespace {

// One sequence of 4 tokens, 2 layers, 4 experts, top-2, hand-checked.
MemoryTraceSource source(int64_t prompt = 0) {
  TraceInfo info;
  info.model_name = "tiny";
  info.moe_layers = 2;
  info.routing.experts = 4;
  info.routing.top_k = 2;
  info.probs = ProbsStorage::kFull;
  info.h_trace = 2;
  info.sequences = {{prompt, 4 - prompt}};
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

// The fit switches the co-activation table off: nothing else may change.
TEST(TraceStats, CoactivationOffChangesNothingElse) {
  const MemoryTraceSource src = source();
  StatsOptions with{1, 4};
  StatsOptions without = with;
  without.coactivation = false;
  const TraceStats a = compute_stats(src, with), b = compute_stats(src, without);
  EXPECT_EQ(a.coact_top1.size(), 1u);
  EXPECT_TRUE(b.coact_top1.empty());
  auto ja = a.to_json(), jb = b.to_json();
  EXPECT_TRUE(jb["summary"]["coact_top1_mean"].is_null());
  for (auto* j : {&ja, &jb}) {
    (*j)["summary"].erase("coact_top1_mean");
    (*j)["per_layer"].erase("coact_top1");
  }
  EXPECT_EQ(ja.dump(), jb.dump());
}

// What a trace cannot give is "n/a" (null in JSON), never 0.0.
TEST(TraceStats, UnknownStatisticsAreNotAvailableNotZero) {
  MemoryTraceSource full = source();
  // The same routing without gate inputs, and with only the top-2 probabilities.
  TraceInfo info = full.info();
  info.h_trace = 0;
  info.probs = ProbsStorage::kTopP;
  info.top_p = 2;
  MemoryTraceSource m(info);
  auto r = full.open(0, kAllFields);
  TokenRecord rec;
  while (r->next(rec)) {
    rec.gate_input.clear();
    for (int l = 0; l < 2; ++l) {
      for (int e = 0; e < 4; ++e) {
        if (e != rec.ids[l * 2] && e != rec.ids[l * 2 + 1]) rec.probs[l * 4 + e] = 0.0f;
      }
    }
    m.add(0, rec);
  }
  const TraceStats st = compute_stats(m, StatsOptions{1, 4});
  EXPECT_TRUE(st.cos_raw.empty());
  EXPECT_TRUE(std::isnan(st.mean(st.cos_raw)));
  ASSERT_EQ(st.reuse_by_rank.size(), 4u);
  EXPECT_DOUBLE_EQ(st.reuse_by_rank[0], (2.0 + 3.0) / 6.0);  // as with full probabilities
  EXPECT_TRUE(std::isnan(st.reuse_by_rank[2]));              // beyond the stored top-2
  const auto j = st.to_json();
  EXPECT_TRUE(j["summary"]["cos_raw_mean"].is_null());
  EXPECT_TRUE(j["reuse_by_rank"][3].is_null());
  EXPECT_FALSE(j["reuse_by_rank"][1].is_null());
  const std::string text = st.to_text();
  EXPECT_NE(text.find("n/a"), std::string::npos);
  EXPECT_EQ(text.find("0.000    0.000"), std::string::npos) << text;
}

TEST(TraceStats, SingleTokenSequencesHaveNoOverlap) {
  TraceInfo info;
  info.model_name = "tiny";
  info.moe_layers = 1;
  info.routing.experts = 4;
  info.routing.top_k = 1;
  info.sequences = {{1, 0}};
  MemoryTraceSource m(info);
  TokenRecord r;
  r.ids = {2};
  r.weights = {1.0f};
  m.add(0, r);
  const TraceStats st = compute_stats(m, StatsOptions{1, 1});
  EXPECT_TRUE(std::isnan(st.overlap_frac[0]));
  EXPECT_TRUE(st.to_json()["summary"]["overlap_frac_mean"].is_null());
}

// Gate reuse and the Mixtral paper's repetition statistics, hand-computed.
// Gates are the identity (4 experts, H = 4), so a gate input's largest
// coordinates are the predicted experts, whatever the actual routing says.
TEST(TraceStats, GateReuseAndRepetitionHandComputed) {
  TraceInfo info;
  info.model_name = "tiny";
  info.moe_layers = 3;
  info.routing.experts = 4;
  info.routing.top_k = 2;
  info.h_trace = 4;
  info.sequences = {{0, 2}};
  MemoryTraceSource m(info);
  GateWeights g;
  g.layers = 3;
  g.experts = 4;
  g.h = 4;
  g.weight.assign(3 * 4 * 4, 0.0f);
  for (int l = 0; l < 3; ++l) {
    for (int e = 0; e < 4; ++e) g.weight[(l * 4 + e) * 4 + e] = 1.0f;
  }
  g.bias.assign(12, 0.0f);
  g.selection_bias.assign(12, 0.0f);
  m.set_gate_weights(g);
  // Gate inputs: layer 0 ranks experts 0 > 1, layer 1 ranks 1 > 2 (layer 2's input is unused).
  const std::vector<float> h = {4, 3, 0, 0, 0, 4, 3, 0, 1, 0, 0, 0};
  // Actual routing (rank order): token 0: {0,3} {0,2} {2,1}; token 1: {1,0} {0,2} {2,1}.
  for (const auto& ids :
       {std::vector<int32_t>{0, 3, 0, 2, 2, 1}, std::vector<int32_t>{1, 0, 0, 2, 2, 1}}) {
    TokenRecord r;
    r.ids = ids;
    r.weights.assign(6, 0.5f);
    r.gate_input = h;
    m.add(0, r);
  }
  const TraceStats st = compute_stats(m, StatsOptions{1, 4});
  EXPECT_EQ(st.gate_reuse_tokens, 2);
  ASSERT_EQ(st.gate_reuse_top1.size(), 2u);  // distances 1 and 2 (3 layers)
  // d = 1: layer 0 predicts {0,1} for layer 1 = {0,2}: first choice right, recall 1/2.
  //        layer 1 predicts {1,2} for layer 2 = {2,1}: first choice wrong, recall 2/2.
  EXPECT_DOUBLE_EQ(st.gate_reuse_top1[0][0], 1.0);
  EXPECT_DOUBLE_EQ(st.gate_reuse_recall[0][0], 0.5);
  EXPECT_DOUBLE_EQ(st.gate_reuse_top1[0][1], 0.0);
  EXPECT_DOUBLE_EQ(st.gate_reuse_recall[0][1], 1.0);
  EXPECT_TRUE(std::isnan(st.gate_reuse_top1[0][2]));
  // d = 2: layer 0 predicts {0,1} for layer 2 = {2,1}.
  EXPECT_DOUBLE_EQ(st.gate_reuse_top1[1][0], 0.0);
  EXPECT_DOUBLE_EQ(st.gate_reuse_recall[1][0], 0.5);
  EXPECT_DOUBLE_EQ(st.gate_reuse_top1_mean(1), 0.5);
  EXPECT_DOUBLE_EQ(st.gate_reuse_recall_mean(1), 0.75);
  EXPECT_TRUE(std::isnan(st.gate_reuse_top1_mean(3)));
  // Consecutive tokens: layer 0 {0,3} -> {1,0}: first choice changes, one expert shared;
  // layers 1 and 2 repeat exactly.
  EXPECT_DOUBLE_EQ(st.repeat_first[0], 0.0);
  EXPECT_DOUBLE_EQ(st.repeat_any[0], 1.0);
  EXPECT_DOUBLE_EQ(st.repeat_first[1], 1.0);
  // A budget of one token measures every second token.
  StatsOptions one{1, 4};
  one.gate_reuse_tokens = 1;
  EXPECT_EQ(compute_stats(m, one).gate_reuse_tokens, 1);
  // Without gate weights there is no gate reuse, and the text says so.
  MemoryTraceSource none(info);
  for (int t = 0; t < 2; ++t) {
    TokenRecord r;
    r.ids = {0, 3, 0, 2, 2, 1};
    r.weights.assign(6, 0.5f);
    r.gate_input = h;
    none.add(0, r);
  }
  const TraceStats ns = compute_stats(none, StatsOptions{1, 4});
  EXPECT_TRUE(ns.gate_reuse_top1.empty());
  EXPECT_NE(ns.to_text().find("gate reuse: n/a"), std::string::npos);
  EXPECT_TRUE(ns.to_json()["summary"]["gate_reuse_top1_mean"][0].is_null());
}

// with 16-bit probabilities the second chosen expert's score is
// often exactly 0, tied with every unchosen expert; ranking the scores put an
// unchosen zero-score expert at rank 1. Rank 1 is the router's second expert
// (ties go to the chosen ones), and an unchosen expert with score 0 has no rank.
TEST(TraceStats, ReuseByRankDoesNotRankZeroScoreTies) {
  TraceInfo info;
  info.model_name = "tiny";
  info.moe_layers = 1;
  info.routing.experts = 4;
  info.routing.top_k = 2;
  info.probs = ProbsStorage::kFull;
  info.sequences = {{0, 4}};
  MemoryTraceSource m(info);
  // ids per token {0,3} {1,3} {2,3} {0,3}: expert 3, always second, is always reused.
  const int32_t first[4] = {0, 1, 2, 0};
  for (int t = 0; t < 4; ++t) {
    TokenRecord r;
    r.ids = {first[t], 3};
    r.weights = {1.0f, 0.0f};
    r.probs.assign(4, 0.0f);
    r.probs[first[t]] = 1.0f;  // the second expert's probability underflowed to 0
    m.add(0, r);
  }
  const TraceStats st = compute_stats(m, StatsOptions{1, 4});
  ASSERT_EQ(st.reuse_by_rank.size(), 4u);
  EXPECT_DOUBLE_EQ(st.reuse_by_rank[0], 0.0);  // the first expert changes every token
  EXPECT_DOUBLE_EQ(st.reuse_by_rank[1],
                   1.0);  // expert 3 (by id order expert 1 or 2 came first: 1/3 or 0)
  EXPECT_TRUE(std::isnan(st.reuse_by_rank[2]));  // only zero-score unchosen experts there: no rank
  EXPECT_TRUE(std::isnan(st.reuse_by_rank[3]));
}

// papers report decode; a pooled mean hides how sequences differ.
TEST(TraceStats, PhaseViewsAndPerSequenceOverlap) {
  const MemoryTraceSource src = source(2);  // tokens 0-1 prompt, 2-3 decode
  const TraceStats all = compute_stats(src, StatsOptions{1, 4});
  EXPECT_EQ(all.tokens, 4);
  EXPECT_DOUBLE_EQ(all.overlap_frac[0],
                   2.0 / 6.0);  // as without a prompt: pairs within the sequence
  // Per sequence: layer 0 pairs 0.5 + 0.5 + 0, layer 1 three times 1: 4 over 6.
  ASSERT_EQ(all.overlap_by_sequence.size(), 1u);
  EXPECT_DOUBLE_EQ(all.overlap_by_sequence[0], 4.0 / 6.0);
  StatsOptions o{1, 4};
  o.phase = "decode";
  const TraceStats dec = compute_stats(src, o);
  EXPECT_EQ(dec.tokens, 2);
  EXPECT_DOUBLE_EQ(dec.overlap_frac[0],
                   0.0);  // {0,1} -> {3,2}; the prompt's last token is not its predecessor
  EXPECT_DOUBLE_EQ(dec.overlap_frac[1], 1.0);
  EXPECT_EQ(dec.counts[0], (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_NE(dec.to_text().find("1 sequences, 2 tokens (decode only)"), std::string::npos)
      << dec.to_text();
  o.phase = "prefill";
  const TraceStats pre = compute_stats(src, o);
  EXPECT_EQ(pre.tokens, 2);
  EXPECT_DOUBLE_EQ(pre.overlap_frac[0], 0.5);  // {0,1} -> {0,2}
  o.phase = "first";
  EXPECT_THROW(compute_stats(src, o), Error);
}

// The weights' hesitation. source() gives every row weights 0.5,
// 0.5; ReuseByRank's trace 1.0, 0.0 (a router that never hesitates).
TEST(TraceStats, TopKWeightSharesByRank) {
  const TraceStats even = compute_stats(source(), StatsOptions{1, 4});
  ASSERT_EQ(even.topk_weight_median.size(), 2u);
  EXPECT_NEAR(even.topk_weight_median[0], 0.5, 1e-3);
  EXPECT_NEAR(even.topk_weight_median[1], 0.5, 1e-3);
  EXPECT_DOUBLE_EQ(even.topk_weight_below_001[1], 0.0);
  TraceInfo info;
  info.model_name = "tiny";
  info.moe_layers = 1;
  info.routing.experts = 4;
  info.routing.top_k = 2;
  info.sequences = {{0, 3}};
  MemoryTraceSource m(info);
  const float second[3] = {0.0f, 0.004f, 0.3f};
  for (int t = 0; t < 3; ++t) {
    TokenRecord r;
    r.ids = {0, 1};
    r.weights = {1.0f - second[t], second[t]};
    m.add(0, r);
  }
  const TraceStats st = compute_stats(m, StatsOptions{1, 4});
  EXPECT_NEAR(st.topk_weight_median[1], 0.004, 1e-3);  // the middle of 0, 0.004, 0.3
  EXPECT_NEAR(st.topk_weight_below_001[1], 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(st.topk_weight_median[0], 0.996, 1e-3);
  EXPECT_NE(st.to_text().find("combine weight's share of the top-k by rank"), std::string::npos);
}

}  // namespace
}  // namespace moebench
