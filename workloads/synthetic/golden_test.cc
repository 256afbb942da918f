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

std::string golden_hash(RoutingFunction routing) {
  testing::TempDir dir;
  GeneratorParams p;  // struct defaults
  SyntheticLayout lay;
  lay.sequences = {{3, 17}, {0, 5}};
  lay.seed = 7;
  lay.h_trace = 64;
  SyntheticSource src(golden_model(routing), p, lay);
  write_trace(src, dir / "g.safetensors", {});
  return sha256_hex(read_file(dir / "g.safetensors"));
}

TEST(GoldenBytes, SoftmaxTopK) {
  EXPECT_EQ(golden_hash(RoutingFunction::kSoftmaxTopK), "cbfd27261301b66909b3089685da565aff11b8f0b962e893b530e0b1a1807cfb");
}
TEST(GoldenBytes, SoftmaxGroupLimited) {
  EXPECT_EQ(golden_hash(RoutingFunction::kSoftmaxGroupLimited), "2e7cdd6fb60d5125b4e10d3944207543d58100b8dc8c026f78b90294e3db215b");
}
TEST(GoldenBytes, SigmoidGroupedBias) {
  EXPECT_EQ(golden_hash(RoutingFunction::kSigmoidGroupedBias), "07a8b780f91c56167899ac452003c8bc198e8585074e6ccbf177d552b4fb6172");
}

}  // namespace
}  // namespace moebench
