// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The GPU layer (label gpu; skipped where no GPU is visible): its attention
// against the CPU reference for a GQA and an MLA model, across more than
// one tile of scores; the router's choices; the other tasks run; attention
// over a longer context takes longer.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <set>

#include "core/experiment/experiment.h"
#include "core/util/error.h"
#include "kernels/cuda/gpu_experts.h"
#include "kernels/cuda/gpu_layer.h"

namespace moebench::gpu {
namespace {

#define REQUIRE_GPU() \
  if (!available()) GTEST_SKIP() << describe_device()

GpuLayer::Options options(const char* model, int64_t max_context) {
  GpuLayer::Options o;
  o.shape = layer_shape(load_model(model, ConfigPaths::defaults()));
  o.max_tokens = 16;
  o.max_sequences = 4;
  o.max_context = max_context;
  o.rings = 2;
  return o;
}

// Every token's and head's output against attention_reference over the
// entries its sequence holds after the call (the new ones included).
void expect_reference(GpuLayer& g, int layer, int64_t T, int64_t S, int64_t C) {
  g.attention(layer, T, S, C);
  g.synchronize();
  const LayerShape& s = g.options().shape;
  const std::vector<float> out = g.last_attention_output(), q = g.last_queries();
  std::vector<float> ref(size_t(s.value_dim));
  double worst = 0;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t seq = t * S / T;
    const std::vector<float> kv = g.cached_entries(layer, seq, C);
    for (int64_t h = 0; h < s.q_heads; ++h) {
      attention_reference(s, q.data() + (t * s.q_heads + h) * s.score_dim, h, kv.data(), C,
                          ref.data());
      for (int64_t d = 0; d < s.value_dim; ++d) {
        const double got = out[size_t((t * s.q_heads + h) * s.value_dim + d)];
        worst = std::max(worst, std::abs(got - ref[size_t(d)]) / (std::abs(ref[size_t(d)]) + 0.05));
      }
    }
  }
  EXPECT_LT(worst, 0.02) << "tokens " << T << ", sequences " << S << ", context " << C;
}

TEST(GpuLayer, GqaAttentionMatchesTheReferenceAcrossTiles) {
  REQUIRE_GPU();
  GpuLayer g(options("qwen3-30b-a3b", 2500), nullptr);
  expect_reference(g, 0, 1, 1, 7);
  expect_reference(g, 1, 6, 3, 40);
  expect_reference(g, 0, 4, 2, 2500);  // three tiles of 1024
}

TEST(GpuLayer, MlaAttentionMatchesTheReference) {
  REQUIRE_GPU();
  GpuLayer g(options("deepseek-v2-lite", 1200), nullptr);
  expect_reference(g, 0, 2, 2, 1200);
  expect_reference(g, 1, 8, 1, 5);  // more new tokens than context: they wrap
}

TEST(GpuLayer, TheRouterChoosesTopKDistinctExperts) {
  REQUIRE_GPU();
  GpuLayer g(options("qwen3-30b-a3b", 64), nullptr);
  g.attention(0, 5, 5, 10);
  g.synchronize();
  const LayerShape& s = g.options().shape;
  const std::vector<int32_t> ids = g.last_routing();
  ASSERT_EQ(ids.size(), size_t(5 * s.top_k));
  for (int64_t t = 0; t < 5; ++t) {
    std::set<int32_t> seen(ids.begin() + t * s.top_k, ids.begin() + (t + 1) * s.top_k);
    EXPECT_EQ(int64_t(seen.size()), s.top_k);
    for (int32_t e : seen) EXPECT_TRUE(e >= 0 && e < s.experts) << e;
  }
}

TEST(GpuLayer, SharedDenseAndHeadRunAndCountsAreChecked) {
  REQUIRE_GPU();
  GpuLayer g(options("deepseek-v2-lite", 64), nullptr);
  g.attention(0, 16, 4, 64);
  g.shared_experts(0, 16);
  g.dense_ffn(0, 16);
  g.lm_head(16);
  g.synchronize();
  EXPECT_THROW(g.attention(0, 17, 1, 1), Error);  // over max_tokens
  EXPECT_THROW(g.attention(0, 2, 3, 1), Error);   // more sequences than tokens
  EXPECT_THROW(g.attention(0, 2, 1, 65), Error);  // over max_context
  GpuLayer q(options("qwen3-30b-a3b", 64), nullptr);
  EXPECT_THROW(q.shared_experts(0, 1), Error);  // no shared experts
  EXPECT_THROW(q.dense_ffn(0, 1), Error);       // no dense layer
}

TEST(GpuLayer, ALongerContextTakesLonger) {
  REQUIRE_GPU();
  GpuLayer::Options o = options("qwen3-30b-a3b", 8192);
  o.max_sequences = 16;
  GpuLayer g(o, nullptr);
  auto time = [&](int64_t C) {
    g.attention(0, 16, 16, C);
    g.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) g.attention(i % 4, 16, 16, C);
    g.synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  EXPECT_GT(time(8192), 1.5 * time(16));
}

}  // namespace
}  // namespace moebench::gpu
