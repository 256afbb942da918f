// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Predictors: the router probe reproduces the trace's routing, residual
// vectors, training of the token-wise linear predictor, its artefact, and
// the accuracy report's identities.

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "baselines/testing.h"
#include "core/engine/routing_cache.h"
#include "core/trace/memory_source.h"
#include "core/trace/safetensors.h"
#include "core/util/detmath.h"
#include "predictors/components.h"
#include "predictors/evaluate.h"
#include "workloads/synthetic/generator.h"

namespace moebench {
namespace {

TEST(Dense, DotMatchesDoubleWithinRounding) {
  std::vector<float> a(37), b(37);
  double ref = 0;
  for (int i = 0; i < 37; ++i) {
    a[i] = float(i % 7) - 3.0f;
    b[i] = 0.25f * float(i % 5);
    ref += double(a[i]) * double(b[i]);
  }
  EXPECT_NEAR(dot(a.data(), b.data(), 37), ref, 1e-4);
}

ModelSpec small_model(RoutingFunction f) {
  ModelSpec m = testing::tiny_model(4, 16, 2);
  m.routing = f;
  if (f == RoutingFunction::kSigmoidGroupedBias) {
    m.n_group = 4;
    m.topk_group = 2;
    m.norm_topk_prob = true;
  }
  return m;
}

SyntheticSource synthetic(const ModelSpec& m, int64_t sequences, int64_t tokens,
                          bool calibration = false) {
  GeneratorParams p;
  p.family = "custom";
  SyntheticLayout lay;
  lay.sequences.assign(sequences, SequenceInfo{0, tokens});
  lay.h_trace = 32;
  lay.seed = 3;
  lay.calibration = calibration;
  return SyntheticSource(m, p, lay);
}

TEST(RouterProbe, ReproducesTheTracesRoutingFromItsGateInputs) {
  for (auto f : {RoutingFunction::kSoftmaxTopK, RoutingFunction::kSigmoidGroupedBias}) {
    const ModelSpec m = small_model(f);
    SyntheticSource src = synthetic(m, 4, 32);
    RouterProbe probe;
    probe.init(m, src.gate_weights(), "test");
    int64_t same = 0, total = 0;
    std::vector<int32_t> ids(m.top_k);
    std::vector<float> w(m.top_k);
    TokenRecord rec;
    for (int64_t s = 0; s < 4; ++s) {
      auto rd = src.open(s, kGateInput);
      while (rd->next(rec)) {
        for (int32_t l = 0; l < 4; ++l) {
          probe.route_one(&rec.gate_input[l * 32], l, ids.data(), w.data());
          std::vector<int32_t> a(ids),
              b(rec.ids.begin() + l * m.top_k, rec.ids.begin() + (l + 1) * m.top_k);
          std::sort(a.begin(), a.end());
          std::sort(b.begin(), b.end());
          same += a == b;
          ++total;
        }
      }
    }
    // Dense logits differ from the generator's transform only in summation order.
    EXPECT_GE(double(same) / double(total), 0.99) << int(f);
  }
}

// Fate's cross-layer predictor asks the router for each token's top k + 1
// (top_n): the first k are the router's own top-k, in rank order, and one
// more follows (for grouped routing, within the groups the limit allows).
TEST(RouterProbe, TopNExtendsTheRoutersTopKByTheNextRanked) {
  for (auto f : {RoutingFunction::kSoftmaxTopK, RoutingFunction::kSigmoidGroupedBias}) {
    const ModelSpec m = small_model(f);
    SyntheticSource src = synthetic(m, 2, 16);
    RouterProbe k_probe, n_probe;
    k_probe.init(m, src.gate_weights(), "test");
    n_probe.init(m, src.gate_weights(), "test", m.top_k + 1);
    std::vector<int32_t> a(m.top_k), b(m.top_k + 1);
    std::vector<float> wa(m.top_k), wb(m.top_k + 1);
    TokenRecord rec;
    int64_t checked = 0;
    for (int64_t s = 0; s < 2; ++s) {
      auto rd = src.open(s, kGateInput);
      while (rd->next(rec)) {
        for (int32_t l = 0; l < 4; ++l) {
          k_probe.route_one(&rec.gate_input[l * 32], l, a.data(), wa.data());
          n_probe.route_one(&rec.gate_input[l * 32], l, b.data(), wb.data());
          for (int64_t j = 0; j < m.top_k; ++j) EXPECT_EQ(a[j], b[j]) << int(f);
          EXPECT_EQ(std::count(a.begin(), a.end(), b[m.top_k]), 0) << int(f);
          ++checked;
        }
      }
    }
    EXPECT_EQ(checked, 2 * 16 * 4);
  }
}

TEST(Residual, MeanOfAdjacentLayerDifferences) {
  TraceInfo info;
  info.model_name = "tiny";
  info.moe_layers = 3;
  info.routing.experts = 4;
  info.routing.top_k = 1;
  info.h_trace = 2;
  info.sequences = {{0, 2}};
  MemoryTraceSource src(info);
  // Token 1: layers (1,0) (3,0) (3,4); token 2: (0,0) (1,2) (2,2).
  for (const auto& g : std::vector<std::vector<float>>{{1, 0, 3, 0, 3, 4}, {0, 0, 1, 2, 2, 2}}) {
    TokenRecord r;
    r.ids = {0, 0, 0};
    r.weights = {1, 1, 1};
    r.gate_input = g;
    src.add(0, r);
  }
  const auto res = mean_residuals(src, 0);
  ASSERT_EQ(res.size(), 4u);
  EXPECT_FLOAT_EQ(res[0], 1.5f);  // ((3-1) + (1-0)) / 2
  EXPECT_FLOAT_EQ(res[1], 1.0f);  // ((0-0) + (2-0)) / 2
  EXPECT_FLOAT_EQ(res[2], 0.5f);  // ((3-3) + (2-1)) / 2
  EXPECT_FLOAT_EQ(res[3], 2.0f);  // ((4-0) + (2-2)) / 2
}

// A trace whose next expert is written in the current gate input: a linear
// predictor must learn it.
MemoryTraceSource learnable_trace(int64_t sequences, int64_t tokens) {
  TraceInfo info;
  info.model_name = "tiny";
  info.moe_layers = 2;
  info.routing.experts = 8;
  info.routing.top_k = 1;
  info.h_trace = 16;
  info.source = "";
  info.sequences.assign(sequences, SequenceInfo{2, tokens - 2});
  MemoryTraceSource src(info);
  uint64_t x = 12345;
  for (int64_t s = 0; s < sequences; ++s) {
    std::vector<int32_t> ex(tokens + 1);
    for (auto& e : ex) e = int32_t(det::splitmix64(x) % 8);
    for (int64_t t = 0; t < tokens; ++t) {
      TokenRecord r;
      for (int l = 0; l < 2; ++l) {
        r.ids.push_back(ex[t]);
        r.weights.push_back(1.0f);
        for (int i = 0; i < 16; ++i) r.gate_input.push_back(i == ex[t + 1] + 4 * l ? 3.0f : 0.0f);
      }
      src.add(s, r);
    }
  }
  return src;
}

TEST(Linear, LearnsANextTokenRuleAndRoundTripsItsArtefact) {
  const MemoryTraceSource src = learnable_trace(8, 40);
  LinearTrainOptions o;
  o.lr = 0.05;
  o.max_epochs = 60;
  o.patience = 10;
  o.max_samples = 300;
  const LinearModel m = train_linear(src, o, false);
  EXPECT_EQ(m.samples, 300);
  for (int l = 0; l < 2; ++l) {
    EXPECT_GE(m.val_recall[l], 0.9) << l;
    EXPECT_GE(m.test_recall[l], 0.9) << l;
  }
  // Deterministic, and the same bit for bit however many threads train the layers.
  const LinearModel again = train_linear(src, o, false);
  EXPECT_EQ(again.weight, m.weight);
  for (int64_t threads : {1, 2, 5}) {
    LinearTrainOptions t = o;
    t.threads = threads;
    const LinearModel x = train_linear(src, t, false);
    EXPECT_EQ(x.weight, m.weight) << threads << " threads";
    EXPECT_EQ(x.bias, m.bias) << threads << " threads";
    EXPECT_EQ(x.epochs, m.epochs) << threads << " threads";
    EXPECT_EQ(x.test_recall, m.test_recall) << threads << " threads";
  }
  const auto path = std::filesystem::temp_directory_path() / "moebench_linear_test.safetensors";
  save_linear(m, path);
  const LinearModel back = load_linear(path);
  EXPECT_EQ(back.weight, m.weight);
  EXPECT_EQ(back.bias, m.bias);
  EXPECT_EQ(back.val_recall, m.val_recall);
  EXPECT_EQ(back.top_k, 1);
  std::filesystem::remove(path);
}

TEST(Linear, RejectsAFileThatIsNotAPredictor) {
  const auto path = std::filesystem::temp_directory_path() / "moebench_not_linear.safetensors";
  st::Writer w(path, {{"x", st::DType::kF32, {1}}}, {{"format", "something-else"}});
  const float v = 1;
  w.write_at("x", 0, &v, 4);
  w.commit();
  try {
    load_linear(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected a linear predictor"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Evaluate, IdentitiesOfTheReport) {
  const ModelSpec m = small_model(RoutingFunction::kSoftmaxTopK);
  SyntheticSource eval = synthetic(m, 8, 24);
  SyntheticSource calib = synthetic(m, 8, 24, true);
  const std::vector<float> zero(size_t(3 * 32), 0.0f);
  PredictorEvalOptions o;
  o.batch = 4;
  const auto r = evaluate_predictors(m, eval, &zero, nullptr, o);
  EXPECT_EQ(r.tokens, 8 * 24);
  EXPECT_EQ(r.batch_steps, 2 * 24);
  // Layer 1 predicted from layer 0's input: layer-wise and iteration-wise are the same prediction.
  EXPECT_DOUBLE_EQ(r.recall_layerwise[1], r.recall_iterationwise[1]);
  // Zero residuals: the residual predictor is the layer-wise one.
  for (int l = 1; l < 4; ++l) {
    EXPECT_DOUBLE_EQ(r.recall_residual[l], r.recall_layerwise[l]);
    EXPECT_DOUBLE_EQ(r.top1_residual[l], r.top1_layerwise[l]);
    EXPECT_GE(r.top2_layerwise[l], 0.0);
    EXPECT_LE(r.top2_layerwise[l], 1.0);
  }
  EXPECT_TRUE(std::isnan(r.recall_layerwise[0]));
  EXPECT_TRUE(std::isnan(r.recall_tokenwise[1]));
  // Calibrated residuals raise the cosine to the next layer (the generator drifts its mean).
  const auto res = mean_residuals(calib, 0);
  const auto r2 = evaluate_predictors(m, eval, &res, nullptr, o);
  double raw = 0, corrected = 0;
  for (size_t l = 0; l < r2.cos_raw.size(); ++l) {
    raw += r2.cos_raw[l];
    corrected += r2.cos_residual[l];
  }
  EXPECT_GT(corrected, raw);
}

TEST(OracleAndPrefetch, PerfectPredictionPrefetchesOnlyUsefulExperts) {
  const ModelSpec m = small_model(RoutingFunction::kSoftmaxTopK);
  SyntheticSource src = synthetic(m, 1, 24);
  StrategySpec s = testing::strategy("resident", "lru", "uniform", 4);
  s.prefetcher = testing::component("next-layer");
  s.prefetcher.params = cfg::parse_toml("size = 2\n", "<test>");
  s.predictor = testing::component("oracle");
  const auto r = testing::run(m, testing::round_hardware(), s, src, false);
  EXPECT_GT(r.metrics.prefetch_loads, 0);
  EXPECT_EQ(r.metrics.prefetch_useful, r.metrics.prefetch_loads);
}

TEST(RandomPredictor, PrecisionNearChanceAndDeterministic) {
  const ModelSpec m = small_model(RoutingFunction::kSoftmaxTopK);
  auto run_with = [&](const char* pred) {
    SyntheticSource src = synthetic(m, 1, 64);
    StrategySpec s = testing::strategy("resident", "lru", "uniform", 4);
    s.prefetcher = testing::component("next-layer");
    s.prefetcher.params = cfg::parse_toml("size = 2\n", "<test>");
    s.predictor = testing::component(pred);
    return testing::run(m, testing::round_hardware(), s, src, false).metrics;
  };
  const auto a = run_with("random"), b = run_with("random"), o = run_with("oracle");
  ASSERT_GT(a.prefetch_loads, 0);
  EXPECT_EQ(a.prefetch_loads, b.prefetch_loads);
  EXPECT_EQ(a.prefetch_useful, b.prefetch_useful);
  const double chance = double(m.top_k) / double(m.routed_experts);
  const double precision = double(a.prefetch_useful) / double(a.prefetch_loads);
  // Random picks are useful about top_k / E of the time (binomial; 3 sd margin).
  const double sd = std::sqrt(chance * (1 - chance) / double(a.prefetch_loads));
  EXPECT_NEAR(precision, chance, 3 * sd + 0.02);
  EXPECT_EQ(o.prefetch_useful, o.prefetch_loads);
}

// Cases that share a workload share each token's routed prediction (the
// routing's memo, core/engine/token_memo.h): the second case reads what the
// first wrote, and both run as a case computing everything alone, bit for bit.
TEST(RouterProbe, PredictionsSharedBetweenCasesGiveTheSameRun) {
  const ModelSpec m = small_model(RoutingFunction::kSoftmaxTopK);
  const SyntheticSource calib_src = synthetic(m, 2, 24, true);
  const testing::TraceCalibration calib(calib_src);  // the residual predictor reads its trace
  for (const char* pred : {"gate-reuse", "residual"}) {
    SCOPED_TRACE(pred);
    auto run_with = [&] {
      SyntheticSource src = synthetic(m, 2, 40);
      StrategySpec s = testing::strategy("resident", "lru", "uniform", 4);
      s.prefetcher = testing::component("next-layer");
      s.prefetcher.params = cfg::parse_toml("size = 2\n", "<test>");
      s.predictor = testing::component(pred);
      StrategyInstance st = StrategyInstance::create(s, builtin_registry());
      return simulate(m, testing::round_hardware(), testing::workload_of(src), st, src, &calib,
                      EngineOptions{})
          .metrics;
    };
    reset_routing_cache(0);  // no sharing: no memo
    const int64_t before = TokenMemo::total_bytes();
    const RunMetrics alone = run_with();
    EXPECT_EQ(TokenMemo::total_bytes(), before);
    reset_routing_cache(int64_t(1) << 30);
    const RunMetrics first = run_with();
    const int64_t made = TokenMemo::total_bytes();
    EXPECT_GT(made, before);  // the first case wrote its predictions
    const RunMetrics second = run_with();
    EXPECT_EQ(TokenMemo::total_bytes(), made);  // the second read them: no table made again
    for (const RunMetrics* r : {&first, &second}) {
      ASSERT_GT(alone.prefetch_loads, 0);
      EXPECT_EQ(r->prefetch_loads, alone.prefetch_loads);
      EXPECT_EQ(r->prefetch_useful, alone.prefetch_useful);
      EXPECT_EQ(r->demand_loads, alone.demand_loads);
      EXPECT_EQ(r->makespan_ns, alone.makespan_ns);
    }
  }
  reset_routing_cache();
}

}  // namespace
}  // namespace moebench
