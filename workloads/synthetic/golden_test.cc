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

TEST(GoldenBytes, SoftmaxTopK) {
  EXPECT_EQ(golden_hash(RoutingFunction::kSoftmaxTopK),
            "e29dfe13703285e2d9953886a8041a33a91dad86965ba896b78c82e5a07158a7");
}
TEST(GoldenBytes, SoftmaxGroupLimited) {
  EXPECT_EQ(golden_hash(RoutingFunction::kSoftmaxGroupLimited),
            "e64defad46bbe25ddf882f0aac135bee1d2770f0a98f1c9a6611b75611a93e04");
}
TEST(GoldenBytes, SigmoidGroupedBias) {
  EXPECT_EQ(golden_hash(RoutingFunction::kSigmoidGroupedBias),
            "b0815793badb62d5eb1562f411d28e5bcfc09ba8182d2c70bd0d77ba904157f0");
}

TEST(GoldenBytes, CrossLayerStructure) {
  EXPECT_EQ(golden_hash(RoutingFunction::kSoftmaxTopK, true),
            "bb29cf0e076e5feab575265a49de3eb8a570b2642047d88297b34f8da998f693");
}

}  // namespace
}  // namespace moebench
