// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The GPU layer's shapes from the model presets and its attention's CPU
// reference (no GPU needed; the GPU kernels are held to this reference in
// gpu_layer_test.cc, label gpu).
#include <gtest/gtest.h>

#include <cmath>

#include "core/experiment/experiment.h"
#include "core/util/error.h"
#include "kernels/cuda/gpu_layer_shape.h"

namespace moebench::gpu {
namespace {

ModelSpec preset(const char* name) {
  return load_model(name, ConfigPaths::defaults());
}

TEST(GpuLayerShape, GqaReadsTheModelsAttentionBytesAndItsKvEntry) {
  const ModelSpec m = preset("qwen3-30b-a3b");
  const LayerShape s = layer_shape(m);
  EXPECT_EQ(s.kv_heads, m.num_kv_heads);
  EXPECT_EQ(s.score_dim, m.head_dim);
  EXPECT_EQ(s.in_proj, (m.num_heads + 2 * m.num_kv_heads) * m.head_dim);
  EXPECT_EQ(s.attention_weight_bytes(), m.attention_params() * 2);
  // One token's entry is the model's KV bytes per token of a layer.
  EXPECT_EQ(s.kv_entry_elems * 2, m.kv_bytes_per_token());
  EXPECT_EQ(s.v_offset, m.num_kv_heads * m.head_dim);
  EXPECT_EQ(s.top_k, m.top_k);
  EXPECT_EQ(s.shared_inter, 0);
  EXPECT_EQ(s.dense_inter, 0);
}

TEST(GpuLayerShape, MlaRunsAsOneSharedLatentWithTheModelsParameters) {
  const ModelSpec m = preset("deepseek-v2-lite");
  const LayerShape s = layer_shape(m);
  EXPECT_EQ(s.kv_heads, 1);
  EXPECT_EQ(s.score_dim, m.kv_lora_rank + m.qk_rope_head_dim);
  EXPECT_EQ(s.value_dim, m.kv_lora_rank);
  EXPECT_EQ(s.kv_entry_elems * 2, m.kv_bytes_per_token());
  // Within one row of the hidden size (the input projection's width is rounded up).
  EXPECT_GE(s.attention_weight_bytes(), m.attention_params() * 2);
  EXPECT_LT(s.attention_weight_bytes(), m.attention_params() * 2 + m.hidden_size * 2);
  EXPECT_EQ(s.shared_inter, m.shared_experts * m.shared_intermediate);
  EXPECT_EQ(s.dense_inter, m.dense_intermediate);
  EXPECT_GT(s.dense_inter, 0);
}

TEST(GpuLayerShape, AMissingShapeIsRefusedNamingTheField) {
  ModelSpec m = preset("qwen3-30b-a3b");
  m.num_kv_heads = 5;  // does not divide 32 heads
  try {
    layer_shape(m);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.num_kv_heads: expected a divisor of num_heads, "
                                         "found 5"),
              std::string::npos)
        << e.what();
  }
}

TEST(GpuLayerShape, TheAttentionReferenceIsASoftmaxOverTheEntries) {
  LayerShape s;
  s.q_heads = 2;
  s.kv_heads = 1;
  s.score_dim = s.value_dim = 2;
  s.kv_entry_elems = 4;
  s.v_offset = 2;
  // Two entries: K (1, 0) and (0, 1); V (10, 20) and (30, 40).
  const float entries[] = {1, 0, 10, 20, 0, 1, 30, 40};
  const float q[] = {std::sqrt(2.0f) * std::log(3.0f), 0};  // scores ln 3 and 0: weights 3/4, 1/4
  float out[2];
  attention_reference(s, q, 1, entries, 2, out);
  EXPECT_NEAR(out[0], 0.75 * 10 + 0.25 * 30, 1e-4);
  EXPECT_NEAR(out[1], 0.75 * 20 + 0.25 * 40, 1e-4);
  attention_reference(s, q, 0, entries, 1, out);  // one entry: its V
  EXPECT_NEAR(out[0], 10, 1e-5);
  EXPECT_NEAR(out[1], 20, 1e-5);
}

}  // namespace
}  // namespace moebench::gpu
