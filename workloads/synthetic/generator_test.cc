// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/synthetic/generator.h"

#include <gtest/gtest.h>

#include "core/testing/temp_dir.h"
#include "core/trace/routing.h"
#include "core/util/atomic_file.h"
#include "core/util/sha256.h"
#include "workloads/stats/trace_stats.h"

namespace moebench {
namespace {

SyntheticSource make(const std::string& model, int64_t seed, int64_t seqs, int64_t tokens,
                     bool calib = false, int64_t h = 64) {
  const auto paths = ConfigPaths::defaults();
  const ModelSpec m = load_model(model, paths);
  SyntheticLayout lay;
  lay.sequences.assign(seqs, SequenceInfo{tokens / 2, tokens - tokens / 2});
  lay.seed = seed;
  lay.h_trace = h;
  lay.calibration = calib;
  return SyntheticSource(m, load_generator("auto", m, paths), lay);
}

std::string file_hash(const TraceSource& s, const std::filesystem::path& p) {
  write_trace(s, p, {});
  return sha256_hex(read_file(p));
}

TEST(Generator, SameSeedSameBytesDifferentSeedDifferentBytes) {
  testing::TempDir dir;
  const std::string a = file_hash(make("deepseek-v2-lite", 3, 2, 16), dir / "a.st");
  const std::string b = file_hash(make("deepseek-v2-lite", 3, 2, 16), dir / "b.st");
  const std::string c = file_hash(make("deepseek-v2-lite", 4, 2, 16), dir / "c.st");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Generator, TheContentKeyNamesWhatTheTokensDependOn) {
  // Same inputs, same key (the routing cache shares their routing); seed, stream, length, h_trace
  // and model each change it; the experts' storage dtype, which the tokens do not read, does not.
  const std::string a = make("deepseek-v2-lite", 3, 2, 16).content_key();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, make("deepseek-v2-lite", 3, 2, 16).content_key());
  for (const std::string& other : {make("deepseek-v2-lite", 4, 2, 16).content_key(),
                                   make("deepseek-v2-lite", 3, 2, 16, true).content_key(),
                                   make("deepseek-v2-lite", 3, 2, 18).content_key(),
                                   make("deepseek-v2-lite", 3, 3, 16).content_key(),
                                   make("deepseek-v2-lite", 3, 2, 16, false, 128).content_key(),
                                   make("qwen3-30b-a3b", 3, 2, 16).content_key()})
    EXPECT_NE(a, other);
  const auto paths = ConfigPaths::defaults();
  ModelSpec m = load_model("deepseek-v2-lite", paths);
  m.expert_dtype = WeightDtype::kInt4;
  SyntheticLayout lay;
  lay.sequences.assign(2, SequenceInfo{8, 8});
  lay.seed = 3;
  lay.h_trace = 64;
  EXPECT_EQ(a, SyntheticSource(m, load_generator("auto", m, paths), lay).content_key());
}

TEST(Generator, SequencesAreIndependentStreams) {
  // Sequence 1 is the same whether 2 or 5 sequences are generated.
  const SyntheticSource a = make("qwen3-30b-a3b", 9, 2, 12);
  const SyntheticSource b = make("qwen3-30b-a3b", 9, 5, 12);
  auto ra = a.open(1, kAllFields), rb = b.open(1, kAllFields);
  TokenRecord x, y;
  while (ra->next(x)) {
    ASSERT_TRUE(rb->next(y));
    EXPECT_EQ(x.ids, y.ids);
    EXPECT_EQ(x.gate_input, y.gate_input);
  }
}

TEST(Generator, CalibrationStreamIsDisjointFromEvaluation) {
  const SyntheticSource ev = make("deepseek-v2-lite", 5, 1, 32);
  const SyntheticSource cal = make("deepseek-v2-lite", 5, 1, 32, true);
  auto a = ev.open(0, kIdsWeights), b = cal.open(0, kIdsWeights);
  TokenRecord x, y;
  int same = 0, n = 0;
  while (a->next(x) && b->next(y)) {
    same += x.ids == y.ids;
    ++n;
  }
  EXPECT_LT(same, n / 4);
  EXPECT_NE(ev.info().source, cal.info().source);
}

TEST(Generator, RoutingDoesNotDependOnRequestedFields) {
  const SyntheticSource s = make("deepseek-v3", 2, 1, 6, false, 256);
  auto a = s.open(0, kIdsWeights), b = s.open(0, kAllFields);
  TokenRecord x, y;
  while (a->next(x)) {
    ASSERT_TRUE(b->next(y));
    EXPECT_EQ(x.ids, y.ids);
    EXPECT_EQ(x.weights, y.weights);
    EXPECT_TRUE(x.gate_input.empty());
    EXPECT_EQ(y.gate_input.size(), size_t(58 * 256));
  }
}

// The structure (means, mixing, gates) depends on the model, the parameters
// and h_trace only: the sources of every seed and stream share one, and
// another model, preset or h_trace has its own.
TEST(Generator, SourcesOfOneModelAndPresetShareTheirStructure) {
  const SyntheticSource a = make("deepseek-v2-lite", 1, 2, 8),
                        b = make("deepseek-v2-lite", 7, 3, 12, true);
  EXPECT_EQ(&a.structure(), &b.structure());
  EXPECT_NE(&a.structure(), &make("deepseek-v2-lite", 1, 2, 8, false, 128).structure());
  EXPECT_NE(&a.structure(), &make("qwen3-30b-a3b", 1, 2, 8).structure());
  const auto paths = ConfigPaths::defaults();
  const ModelSpec m = load_model("deepseek-v2-lite", paths);
  GeneratorParams p = load_generator("auto", m, paths);
  p.structure_seed += 1;
  SyntheticLayout lay;
  lay.sequences.assign(2, SequenceInfo{4, 4});
  lay.h_trace = 64;
  EXPECT_NE(&a.structure(), &SyntheticSource(m, p, lay).structure());
}

// kNoRouting skips the router: the gate inputs are the same bits, the ids
// and weights are left empty (the engine's gate-input stream reads so).
TEST(Generator, GateInputsWithoutRoutingAreTheSameBits) {
  const SyntheticSource s = make("qwen3-30b-a3b", 3, 1, 20, false, 128);
  auto a = s.open(0, kGateInput), b = s.open(0, kGateInput | kNoRouting);
  TokenRecord x, y;
  int64_t n = 0;
  while (a->next(x)) {
    ASSERT_TRUE(b->next(y));
    EXPECT_EQ(x.gate_input, y.gate_input);
    EXPECT_FALSE(x.ids.empty());
    EXPECT_TRUE(y.ids.empty());
    EXPECT_TRUE(y.weights.empty());
    ++n;
  }
  EXPECT_FALSE(b->next(y));
  EXPECT_EQ(n, 20);
}

// The gate weights written to trace files really are the router: applying
// them to a token's gate input and routing gives the token's experts.
TEST(Generator, GateWeightsReproduceRouting) {
  for (const std::string model :
       {"mixtral-8x7b", "deepseek-v2.5", "deepseek-v3", "qwen3-30b-a3b"}) {
    const SyntheticSource s = make(model, 11, 1, 4, false, 128);
    const GateWeights* g = s.gate_weights();
    ASSERT_NE(g, nullptr);
    const int64_t L = s.info().moe_layers, E = g->experts, H = g->h, k = s.info().top_k();
    auto r = s.open(0, kAllFields);
    TokenRecord t;
    RoutingScratch scratch;
    std::vector<float> logits(E), probs(E), w(k);
    std::vector<int32_t> ids(k);
    int64_t agree = 0, total = 0;
    while (r->next(t)) {
      for (int64_t l = 0; l < L; ++l) {
        for (int64_t e = 0; e < E; ++e) {
          double acc = g->b(l)[e];
          for (int64_t i = 0; i < H; ++i)
            acc += double(g->w(l)[e * H + i]) * double(t.gate_input[l * H + i]);
          logits[e] = float(acc);
        }
        route(s.info().routing, logits.data(), g->sel(l), ids.data(), w.data(), probs.data(),
              scratch);
        for (int64_t j = 0; j < k; ++j) {
          agree += ids[j] == t.ids[l * k + j];
          ++total;
        }
      }
    }
    // The dense product rounds differently from the fast transform: allow a
    // rare swap between near-tied experts.
    EXPECT_GT(double(agree) / double(total), 0.97) << model;
  }
}

TEST(Generator, RejectsHTraceThatIsNotAPowerOfTwo) {
  try {
    make("mixtral-8x7b", 1, 1, 2, false, 100);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "workload.h_trace: expected a power of two >= 32 (the generator's gates are Hadamard "
              "transforms), found 100");
  }
}

TEST(Generator, EveryFamilyPresetLoads) {
  const auto paths = ConfigPaths::defaults();
  for (const std::string m : {"mixtral-8x7b", "deepseek-v2-lite", "deepseek-v2.5", "deepseek-v3",
                              "qwen2-57b-a14b", "qwen3-30b-a3b", "qwen3-235b-a22b"}) {
    const ModelSpec spec = load_model(m, paths);
    const GeneratorParams p = load_generator("auto", spec, paths);
    EXPECT_EQ(p.family, spec.family) << m;
  }
}

// The structure's knobs do what docs/WORKLOADS.md says, measured with trace
// stats on a Mixtral-shaped workload (struct defaults otherwise).
TraceStats knob_stats(const GeneratorParams& p, int64_t seqs = 64, int64_t tokens = 64) {
  const auto paths = ConfigPaths::defaults();
  const ModelSpec m = load_model("mixtral-8x7b", paths);
  SyntheticLayout lay;
  lay.sequences.assign(seqs, SequenceInfo{0, tokens});
  lay.seed = 5;
  lay.h_trace = 64;
  const SyntheticSource src(m, p, lay);
  StatsOptions o;
  o.gate_reuse_distance = 1;
  return compute_stats(src, o);
}

TEST(GeneratorKnobs, TokenStateThatPersistsOverDepthMakesLayersPredictable) {
  GeneratorParams p;
  p.focus = 0;
  p.noise = 1.5;  // the token's own state dominates the gate input
  p.depth_corr = 0.0;
  const double independent = knob_stats(p).gate_reuse_recall_mean(1);
  p.depth_corr = 0.95;
  const double persistent = knob_stats(p).gate_reuse_recall_mean(1);
  EXPECT_GT(persistent, independent + 0.1) << independent << " -> " << persistent;
}

TEST(GeneratorKnobs, HiddenStateDecorrelatesTheCosineNotTheRouting) {
  // depth_corr_hidden = 0: the gate-invisible half's own state is drawn
  // afresh at every layer, so adjacent gate inputs are less alike while the
  // routing (which reads the visible half only) and gate reuse stay the same.
  GeneratorParams p;
  p.noise = 1.5;
  p.depth_corr = 0.9;
  const TraceStats same = knob_stats(p);
  p.depth_corr_hidden = 0.0;
  const TraceStats fresh = knob_stats(p);
  EXPECT_LT(fresh.mean(fresh.cos_raw), same.mean(same.cos_raw) - 0.1)
      << same.mean(same.cos_raw) << " -> " << fresh.mean(fresh.cos_raw);
  EXPECT_EQ(fresh.gate_reuse_recall_mean(1), same.gate_reuse_recall_mean(1));
  EXPECT_EQ(fresh.repeat_first, same.repeat_first);
}

TEST(GeneratorKnobs, HiddenRotationDecorrelatesTheCosineNotTheRouting) {
  // theta_hidden: the context's mixing turns faster in the gate-invisible
  // half than in the visible one (here not at all: theta = 0). Adjacent gate
  // inputs are less alike, the routing is exactly the same: the random draws
  // and the visible half do not depend on theta_hidden.
  GeneratorParams p;
  p.theta = 0.0;
  p.noise = 0.3;  // the context dominates the gate input
  p.drift = 0.0;
  const TraceStats same = knob_stats(p);
  p.theta_hidden = 1.2;
  const TraceStats turned = knob_stats(p);
  EXPECT_LT(turned.mean(turned.cos_raw), same.mean(same.cos_raw) - 0.05)
      << same.mean(same.cos_raw) << " -> " << turned.mean(turned.cos_raw);
  EXPECT_EQ(turned.gate_reuse_recall_mean(1), same.gate_reuse_recall_mean(1));
  EXPECT_EQ(turned.repeat_first, same.repeat_first);
  // A negative theta_hidden is theta: the same bytes as a preset without it.
  p.theta_hidden = -1.0;
  const TraceStats unset = knob_stats(p);
  EXPECT_EQ(unset.mean(unset.cos_raw), same.mean(same.cos_raw));
}

TEST(GeneratorKnobs, FocusMakesTheFirstChoiceDecisive) {
  // A focus feature persists over depth and decides the first choice, so gate
  // reuse gets the first choice right more often than the second.
  GeneratorParams p;
  p.shared_gates = true;
  p.depth_corr = 0.7;
  p.focus = 0;
  const TraceStats plain = knob_stats(p);
  p.focus = 4;
  const TraceStats focused = knob_stats(p);
  const double gap_plain = plain.gate_reuse_top1_mean(1) - plain.gate_reuse_recall_mean(1);
  const double gap_focused = focused.gate_reuse_top1_mean(1) - focused.gate_reuse_recall_mean(1);
  EXPECT_GT(gap_focused, gap_plain + 0.05) << gap_plain << " -> " << gap_focused;
}

TEST(GeneratorKnobs, FocusNeedsSharedGates) {
  GeneratorParams p;
  p.name = "mine";
  p.focus = 1;
  try {
    knob_stats(p, 1, 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "workload generator 'mine': focus = 1 needs shared_gates = true (the focus is a "
              "direction every "
              "layer's router reads), found shared_gates = false");
  }
}

TEST(GeneratorKnobs, FocusRepeatAndContextFirstSetTheTemporalRepetition) {
  // No shared context except the focus, which the first layer does not see:
  // layer 0 repeats its first choice at chance (1/8), later layers about
  // focus_repeat + (1 - focus_repeat) / 8 when the focus decides.
  GeneratorParams p;
  p.shared_gates = true;
  p.rho = 0;
  p.topic = 0;
  p.mean_visible = 0;
  p.skew = 0;
  p.context_first = 0;
  p.focus = 6;
  p.focus_repeat = 0.5;
  const TraceStats st = knob_stats(p, 128, 64);
  EXPECT_LT(st.repeat_first[0], 0.16);
  EXPECT_GT(st.repeat_first[0], 0.09);
  EXPECT_GT(st.repeat_first[20], 0.45);
}

}  // namespace
}  // namespace moebench

namespace moebench {
namespace {

// A suite that sweeps the prompt length pins the calibration shape, so a
// predictor trained offline is trained once; unset, the
// calibration sequences have the run's shape and results keep their case ids.
TEST(SyntheticLayout, CalibrationShapeIsPinnedOnlyWhenSet) {
  WorkloadSpec w;
  w.sequences = 1;
  w.prompt_len = 4096;
  w.decode_len = 1;
  w.calibration_sequences = 8;
  SyntheticLayout run = layout_from_workload(w, false), calib = layout_from_workload(w, true);
  ASSERT_EQ(run.sequences.size(), 1u);
  ASSERT_EQ(calib.sequences.size(), 8u);
  EXPECT_EQ(calib.sequences[0].prompt_len, 4096);
  EXPECT_EQ(calib.sequences[0].decode_len, 1);
  EXPECT_FALSE(w.to_json().contains("calibration_prompt_len"));
  EXPECT_FALSE(w.to_json().contains("calibration_decode_len"));
  w.calibration_prompt_len = 64;
  w.calibration_decode_len = 128;
  run = layout_from_workload(w, false);
  calib = layout_from_workload(w, true);
  EXPECT_EQ(run.sequences[0].prompt_len, 4096);
  EXPECT_EQ(run.sequences[0].decode_len, 1);
  EXPECT_EQ(calib.sequences[0].prompt_len, 64);
  EXPECT_EQ(calib.sequences[0].decode_len, 128);
  EXPECT_EQ(w.to_json().at("calibration_prompt_len"), 64);
}

}  // namespace
}  // namespace moebench
