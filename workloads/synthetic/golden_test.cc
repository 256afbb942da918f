// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Pinned bytes of a small synthetic trace. This test is compiled twice: with
// the per-ISA clones (AVX-512 / AVX2 / baseline picked at load time) and in
// generator_portable_tests for the x86-64 baseline without clones. Both must
// produce these bytes, so traces are the same whatever instruction set
// computed them. Any change to the generator, the routing math or the file
// layout that changes the bytes must be deliberate: update the hash and say
// so in the commit.

#include <gtest/gtest.h>

#include "core/testing/temp_dir.h"
#include "core/util/atomic_file.h"
#include "core/util/sha256.h"
#include "workloads/synthetic/generator.h"

namespace moebench {
namespace {

// A model defined here (not loaded from configs/) so the pin does not move
// when presets are refitted.
ModelSpec golden_model(RoutingFunction routing) {
  ModelSpec m;
  m.name = "golden";
  m.family = "custom";
  m.num_layers = 3;
  m.hidden_size = 64;
  m.routed_experts = 64;
  m.top_k = 6;
  m.routing = routing;
  m.n_group = 8;
  m.topk_group = 3;
  m.norm_topk_prob = true;
  m.expert_intermediate = 32;
  m.attention = AttentionKind::kGqa;
  m.num_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 16;
  return m;
}

std::string golden_hash(RoutingFunction routing, bool cross_layer = false) {
  testing::TempDir dir;
  GeneratorParams p;  // struct defaults
  if (cross_layer) {  // the cross-layer structure (docs/WORKLOADS.md)
    p.shared_gates = true;
    p.depth_corr = 0.9;
    p.depth_corr_first = 0.6;
    p.depth_corr_hidden = 0.2;
    p.context_first = 0.3;
    p.focus = 2.0;
    p.focus_repeat = 0.25;
  }
  SyntheticLayout lay;
  lay.sequences = {{3, 17}, {0, 5}};
  lay.seed = 7;
  lay.h_trace = 64;
  SyntheticSource src(golden_model(routing), p, lay);
  write_trace(src, dir / "g.safetensors", {});
  return sha256_hex(read_file(dir / "g.safetensors"));
}

// The file's every byte, metadata included: the values changed once when the
// trace's model_hash became the routing hash (ModelSpec::routing_hash), with
// the tensors' bytes unchanged.
TEST(GoldenBytes, SoftmaxTopK) {
  EXPECT_EQ(golden_hash(RoutingFunction::kSoftmaxTopK),
            "2aaccc3c39c665fa3e9e5b4c33e03bbba7034b1f4564f2fe4e4b353be3a0957e");
}
TEST(GoldenBytes, SoftmaxGroupLimited) {
  EXPECT_EQ(golden_hash(RoutingFunction::kSoftmaxGroupLimited),
            "d1d904b7ed3b147313dbd238c665b2b5e44ac6e28790d975d2c49b998572af13");
}
TEST(GoldenBytes, SigmoidGroupedBias) {
  EXPECT_EQ(golden_hash(RoutingFunction::kSigmoidGroupedBias),
            "b107c9796a92cbdc5cfa02aa48220952ec88d7faeea6410d4d7991e78f22428c");
}

TEST(GoldenBytes, CrossLayerStructure) {
  EXPECT_EQ(golden_hash(RoutingFunction::kSoftmaxTopK, true),
            "81b801a63fc01564eab9ac264dec8efc022770ead65b713bdcf789993ed51b3c");
}

}  // namespace
}  // namespace moebench
