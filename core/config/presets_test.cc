// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Every shipped preset loads, validates, and has the shape its sources say.

#include <gtest/gtest.h>

#include "core/experiment/experiment.h"

namespace moebench {
namespace {

TEST(Presets, EveryModelAndHardwarePresetLoads) {
  const auto paths = ConfigPaths::defaults();
  const auto models = paths.list("models");
  const auto hardware = paths.list("hardware");
  EXPECT_EQ(models, (std::vector<std::string>{"deepseek-v2-lite", "deepseek-v2.5", "deepseek-v3",
                                              "mixtral-8x7b", "qwen2-57b-a14b", "qwen3-235b-a22b",
                                              "qwen3-30b-a3b", "tiny-deepseek", "tiny-mixtral"}));
  for (const auto& m : models) {
    const ModelSpec spec = load_model(m, paths);
    EXPECT_EQ(spec.name, m);
    EXPECT_FALSE(spec.source.empty()) << m;
    EXPECT_EQ(spec.hash().size(), 64u);
  }
  for (const std::string h :
       {"hybrimoe-a6000", "smoe-rtx4090", "ktransformers-a100", "ktransformers-rtx4080",
        "dali-rtx3090", "h100-host", "local-cpu", "moe-lightning-t4"}) {
    const HardwareProfile p = load_hardware(h, paths);
    EXPECT_EQ(p.name, h);
    EXPECT_GT(p.cpu.mem_bw_gbps, 0) << h;
  }
}

// Each model preset's shape, checked against the model's public configuration (docs/COST_MODEL.md).
TEST(Presets, ModelShapesMatchPublicConfigs) {
  const auto paths = ConfigPaths::defaults();
  struct Row {
    const char* name;
    int64_t layers, moe_layers, hidden, experts, top_k, inter, shared, shared_inter;
  };
  const Row rows[] = {
      {"mixtral-8x7b", 32, 32, 4096, 8, 2, 14336, 0, 0},
      {"deepseek-v2-lite", 27, 26, 2048, 64, 6, 1408, 2, 1408},
      {"deepseek-v2.5", 60, 59, 5120, 160, 6, 1536, 2, 1536},
      {"deepseek-v3", 61, 58, 7168, 256, 8, 2048, 1, 2048},
      {"qwen2-57b-a14b", 28, 28, 3584, 64, 8, 2560, 1, 20480},
      {"qwen3-30b-a3b", 48, 48, 2048, 128, 8, 768, 0, 0},
      {"qwen3-235b-a22b", 94, 94, 4096, 128, 8, 1536, 0, 0},
  };
  for (const auto& r : rows) {
    const ModelSpec m = load_model(r.name, paths);
    EXPECT_EQ(m.num_layers, r.layers) << r.name;
    EXPECT_EQ(m.moe_layers(), r.moe_layers) << r.name;
    EXPECT_EQ(m.hidden_size, r.hidden) << r.name;
    EXPECT_EQ(m.routed_experts, r.experts) << r.name;
    EXPECT_EQ(m.top_k, r.top_k) << r.name;
    EXPECT_EQ(m.expert_intermediate, r.inter) << r.name;
    EXPECT_EQ(m.shared_experts, r.shared) << r.name;
    EXPECT_EQ(m.shared_intermediate, r.shared_inter) << r.name;
  }
  const ModelSpec v3 = load_model("deepseek-v3", paths);
  EXPECT_EQ(v3.routing, RoutingFunction::kSigmoidGroupedBias);
  EXPECT_EQ(v3.n_group, 8);
  EXPECT_EQ(v3.topk_group, 4);
}

// KTransformers Table 1 splits parameters into GPU (everything but routed
// experts) and CPU (routed experts): DS-3 17B / 654B, DS-2 13B / 223B,
// QW-2 8B / 49B. Our shapes reproduce both columns.
TEST(Presets, ParameterSplitMatchesKTransformersTable1) {
  const auto paths = ConfigPaths::defaults();
  struct Row {
    const char* name;
    double gpu_b, cpu_b;
  };
  for (const Row& r :
       {Row{"deepseek-v3", 17, 654}, Row{"deepseek-v2.5", 13, 223}, Row{"qwen2-57b-a14b", 8, 49}}) {
    const ModelSpec m = load_model(r.name, paths);
    const double gpu = double(m.non_expert_params()) / 1e9;
    const double cpu = double(m.moe_layers() * m.routed_experts * m.expert_params()) / 1e9;
    EXPECT_NEAR(gpu, r.gpu_b, 0.5) << r.name;  // the table rounds to whole billions
    EXPECT_NEAR(cpu, r.cpu_b, 0.5) << r.name;
  }
  EXPECT_NEAR(double(load_model("mixtral-8x7b", paths).total_params()) / 1e9, 46.7, 0.1);
}

TEST(Presets, ExpertBytesPerFormat) {
  const auto paths = ConfigPaths::defaults();
  ModelSpec m = load_model("deepseek-v3", paths);
  const int64_t elems = 7168 * 2048;  // one matrix
  m.expert_dtype = WeightDtype::kBf16;
  EXPECT_EQ(m.expert_bytes(), 3 * 2 * elems);
  m.expert_dtype = WeightDtype::kInt8;
  EXPECT_EQ(m.expert_bytes(), 3 * (elems + elems / 128 * 2));
  m.expert_dtype = WeightDtype::kInt4;
  EXPECT_EQ(m.expert_bytes(), 3 * (elems / 2 + elems / 128 * 2));
  // SMoE section IV-D: caching 8 experts per layer of DS-V3 in 4-bit takes
  // "roughly 10 GB", in 8-bit it "would exceed 20 GB".
  const double gb4 = 8.0 * m.moe_layers() * double(m.expert_bytes()) / 1e9;
  m.expert_dtype = WeightDtype::kInt8;
  const double gb8 = 8.0 * m.moe_layers() * double(m.expert_bytes()) / 1e9;
  EXPECT_NEAR(gb4, 10.5, 0.5);
  EXPECT_GT(gb8, 20.0);
}

TEST(Presets, AttentionAndKvShapes) {
  const auto paths = ConfigPaths::defaults();
  const ModelSpec mix = load_model("mixtral-8x7b", paths);
  EXPECT_EQ(mix.attention_params(), 4096 * 4096 * 2 + 2 * 4096 * 1024);
  EXPECT_EQ(mix.kv_bytes_per_token(), 2 * 8 * 128 * 2);
  const ModelSpec v3 = load_model("deepseek-v3", paths);
  EXPECT_EQ(v3.kv_bytes_per_token(), (512 + 64) * 2);  // MLA caches the compressed KV
}

}  // namespace
// hybrimoe-a6000's CPU kernel rate fitted on kTransformers' llama.cpp-derived
// kernels was once not applied to llama.cpp itself (it ran at the profile's
// 2432 GFLOP/s against 737), so "llama.cpp slowest in prefill" could not
// hold, and all-CPU prefilled 2.5x faster than llama.cpp on the same CPU. The
// fitted entry is the testbed's default: every strategy, whatever its kernel
// family, runs the rate the testbed's evidence gives.
TEST(Presets, EveryStrategyRunsTheTestbedsFittedKernelRate) {
  const Experiment ex = load_experiment_text(
      "strategies = [\"llamacpp\", \"ktransformers\", \"all-cpu\", \"fiddler\"]\n[model]\n"
      "preset = \"mixtral-8x7b\"\nexpert_dtype = \"int4\"\n[hardware]\npreset = "
      "\"hybrimoe-a6000\"\n[workload]\nsequences = 1\nprompt_len = 4\ndecode_len = 2\n",
      "t.toml", ".", ConfigPaths::defaults(), nullptr);
  ASSERT_EQ(ex.cases.size(), 4u);
  double fitted = 0;
  for (const auto& k : ex.cases[0].hardware.cpu_kernels) {
    if (k.dtype == "int4" && k.family == "ktransformers" && k.testbed_default) {
      fitted = k.compute_gflops;
    }
  }
  EXPECT_GT(fitted, 0.0);
  for (const Case& c : ex.cases) {
    EXPECT_EQ(
        implementation_hardware(c.hardware, c.strategy, c.model, c.comparison).cpu.expert_gflops,
        fitted)
        << c.strategy.name;
  }
}

}  // namespace moebench
