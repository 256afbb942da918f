// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The C++ forward pass against the PyTorch model it implements: the test
// fixtures (workloads/tiny_moe/testdata, written by train.py --fixture)
// hold two small randomly initialised models, one per family, and the
// logits and routing PyTorch computed for 24 tokens with the same
// bf16-rounded weights.
#include "workloads/model/moe_model.h"
#include "workloads/model/record.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/trace/safetensors.h"
#include "core/util/error.h"

namespace moebench {
namespace {

const std::string kData = "workloads/tiny_moe/testdata/";

struct Case {
  std::string family;
  std::string kernel;
  double tolerance;  // normalised logits error
};

class ForwardMatchesPyTorch : public ::testing::TestWithParam<Case> {};

TEST_P(ForwardMatchesPyTorch, LogitsAndRouting) {
  const Case c = GetParam();
  const auto avail = expert_kernels_available();
  if (std::find(avail.begin(), avail.end(), c.kernel) == avail.end()) GTEST_SKIP() << c.kernel;
  auto m = MoeModel::load(kData + c.family + ".safetensors", c.kernel);
  const ReferenceCheck r = check_reference(*m, kData + c.family + ".reference.safetensors");
  EXPECT_EQ(r.tokens, 24);
  EXPECT_LT(r.logits_error, c.tolerance) << c.family << " " << c.kernel;
  EXPECT_EQ(r.routing_mismatches, 0) << c.family << " " << c.kernel;
  EXPECT_EQ(r.routing_slots, 24 * m->config().layers * m->config().top_k);
  EXPECT_LT(r.max_weight_error, 1e-3);
  EXPECT_EQ(m->position(), 0);  // check_reference leaves the model reset
  // A reference of another model is refused, naming the tensor.
  const std::string other = c.family == "mixtral" ? "deepseek" : "mixtral";
  EXPECT_THROW(check_reference(*m, kData + other + ".reference.safetensors"), Error);
}

// The reference kernel accumulates in fp64 from fp32 activations: it
// differs from PyTorch's fp32 only by summation order. The packed AVX-512
// kernel rounds the expert's activations to bf16; the AVX2 one keeps them
// in fp32 (fp32 sums, in its own order).
INSTANTIATE_TEST_SUITE_P(Families, ForwardMatchesPyTorch,
                         ::testing::Values(Case{"mixtral", "reference", 1e-5},
                                           Case{"deepseek", "reference", 1e-5},
                                           Case{"mixtral", "avx512-bf16-gemm", 2e-2},
                                           Case{"deepseek", "avx512-bf16-gemm", 2e-2},
                                           Case{"mixtral", "avx2-gemm", 1e-4},
                                           Case{"deepseek", "avx2-gemm", 1e-4}),
                         [](const auto& info) {
                           std::string n = info.param.family + "_" + info.param.kernel;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

TEST(MoeModel, DeferralAndSkippingChangeTheOutputAndAreChecked) {
  auto m = MoeModel::load(kData + "deepseek.safetensors");
  const std::vector<int> toks = {72, 101, 108, 108, 111};
  std::vector<float> base, defer1, skip1;
  for (int t : toks) base = m->step(t);
  m->reset();
  for (int t : toks) defer1 = m->step(t, {1, 0});
  m->reset();
  for (int t : toks) skip1 = m->step(t, {0, 1});
  EXPECT_NE(base, defer1);
  EXPECT_NE(base, skip1);
  EXPECT_NE(defer1, skip1);
  // Deferring 0 and skipping 0 is the plain model, bit for bit.
  m->reset();
  std::vector<float> again;
  for (int t : toks) again = m->step(t, {0, 0});
  EXPECT_EQ(base, again);
  // At least one immediate expert: defer + skip < top_k.
  EXPECT_THROW(m->step(1, {int(m->config().top_k), 0}), Error);
  EXPECT_THROW(m->step(1, {0, -1}), Error);
  EXPECT_THROW(m->step(256, {}), Error);
}

TEST(MoeModel, ExecutionOrderNeverChangesTheOutput) {
  // A strategy that only places, caches, prefetches or schedules experts
  // changes where and when each runs: the outputs stay identical, bit for bit.
  for (const char* fam : {"mixtral", "deepseek"}) {
    auto m = MoeModel::load(kData + std::string(fam) + ".safetensors");
    const int K = int(m->config().top_k);
    std::vector<int> rev(static_cast<size_t>(K)), rot(static_cast<size_t>(K));
    for (int i = 0; i < K; ++i) rev[size_t(i)] = K - 1 - i, rot[size_t(i)] = (i + 1) % K;
    const std::vector<int> toks = {84, 104, 101, 32, 76, 79, 82, 68};
    std::vector<float> base, a, b;
    for (int t : toks) base = m->step(t);
    m->reset();
    for (int t : toks) a = m->step(t, {0, 0, rev});
    m->reset();
    for (int t : toks) b = m->step(t, {0, 0, rot});
    EXPECT_EQ(base, a) << fam;
    EXPECT_EQ(base, b) << fam;
    m->reset();
    EXPECT_THROW(m->step(1, {0, 0, {0}}), Error);  // not a permutation of the k ranks
  }
}

TEST(MoeModel, BadFilesAreRejectedWithTheirName) {
  try {
    MoeModel::load("workloads/tiny_moe/testdata/none.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("none.safetensors"), std::string::npos) << e.what();
  }
  // A reference file: a valid safetensors file with the config but no weights.
  try {
    MoeModel::load(kData + "mixtral.reference.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'embed' of shape [256, 32], found none"),
              std::string::npos)
        << e.what();
  }
}

TEST(MoeModel, DeclaresItsModelSpec) {
  auto m = MoeModel::load(kData + "deepseek.safetensors");
  const ModelSpec s = m->spec();
  EXPECT_EQ(s.name, "tiny-deepseek");
  EXPECT_EQ(s.family, "deepseek-v2");
  EXPECT_EQ(s.routed_experts, 16);
  EXPECT_EQ(s.shared_experts, 1);
  EXPECT_EQ(s.moe_layers(), 2);
  const GateWeights g = m->gate_weights();
  EXPECT_EQ(g.layers, 2);
  EXPECT_EQ(int64_t(g.weight.size()), 2 * 16 * 32);
}

}  // namespace
}  // namespace moebench

namespace moebench {
namespace {

TEST(Record, TraceHoldsWhatTheModelRoutedAndRoundTrips) {
  auto m = MoeModel::load(kData + "mixtral.safetensors");
  std::string text;
  for (int i = 0; i < 100; ++i) text += char('a' + i % 26);
  RecordOptions o;
  o.sequences = 2;
  o.seq_len = 20;
  o.prompt_len = 5;
  o.offset = 3;
  auto src = record_trace(*m, text, o, "letters");
  const TraceInfo& info = src->info();
  EXPECT_EQ(info.model_name, "tiny-mixtral");
  EXPECT_EQ(info.moe_layers, 2);
  EXPECT_EQ(info.h_trace, 32);
  EXPECT_EQ(info.total_tokens(), 40);
  ASSERT_NE(src->gate_weights(), nullptr);
  // Sequence 1's fifth token is byte 3 + 20 + 4 of the text, after four others.
  m->reset();
  TokenRecord want;
  for (int t = 0; t < 5; ++t) m->step(text[size_t(3 + 20 + t)], {}, &want);
  auto rd = src->open(1, kAllFields);
  TokenRecord got;
  for (int t = 0; t < 5; ++t) ASSERT_TRUE(rd->next(got));
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_EQ(got.gate_input, want.gate_input);
  // The router applied to the recorded gate input gives the recorded choice.
  const GateWeights* g = src->gate_weights();
  for (int64_t l = 0; l < info.moe_layers; ++l) {
    int best = 0;
    float best_v = -1e30f;
    for (int64_t e = 0; e < g->experts; ++e) {
      float s = 0;
      for (int64_t i = 0; i < g->h; ++i)
        s += g->w(l)[e * g->h + i] * got.gate_input[size_t(l * g->h + i)];
      if (s > best_v) best_v = s, best = int(e);
    }
    EXPECT_EQ(best, got.ids[size_t(l * info.top_k())]) << l;
  }
  // Written and read back.
  const auto path = std::filesystem::temp_directory_path() / "moebench_record_test.safetensors";
  write_trace(*src, path, TraceWriteOptions{});
  auto back = open_trace_file(path);
  EXPECT_EQ(back->info().total_tokens(), 40);
  EXPECT_EQ(back->info().model_name, "tiny-mixtral");
  std::filesystem::remove(path);
  // Too little text names what it needed.
  o.offset = 90;
  EXPECT_THROW(record_trace(*m, text, o, "letters"), Error);
}

TEST(Record, AccuracySweepScoresEveryVariantAgainstTheBaseline) {
  auto m = MoeModel::load(kData + "deepseek.safetensors");  // top-4: defer and skip 1..3
  std::string text;
  for (int i = 0; i < 64; ++i) text += char(32 + (i * 7) % 90);
  RecordOptions o;
  o.sequences = 2;
  o.seq_len = 16;
  const auto rows = accuracy_sweep(*m, text, o, "text", DeferScope::kAll);
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[0].mode, "baseline");
  EXPECT_EQ(rows[0].tokens, 30);
  EXPECT_DOUBLE_EQ(rows[0].agreement, 1.0);
  EXPECT_DOUBLE_EQ(rows[0].kl, 0.0);
  EXPECT_NEAR(rows[0].perplexity, std::exp(rows[0].nll), 1e-9);
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_GT(rows[i].kl, 0.0) << rows[i].mode << rows[i].n;
    EXPECT_LE(rows[i].agreement, 1.0);
  }
  EXPECT_EQ(rows[1].mode, "defer");
  EXPECT_EQ(rows[4].mode, "skip");
  EXPECT_EQ(rows[6].n, 3);
  // Decode scope scores the continuation after the prompt; a prompt longer
  // than the sequence is named.
  o.prompt_len = 6;
  const auto dec = accuracy_sweep(*m, text, o, "text", DeferScope::kDecode);
  EXPECT_EQ(dec[0].tokens, 20);
  o.prompt_len = 16;
  EXPECT_THROW(accuracy_sweep(*m, text, o, "text", DeferScope::kDecode), Error);
}

TEST(Record, DecodeScopeLeavesThePromptUnmodified) {
  auto m = MoeModel::load(kData + "deepseek.safetensors");
  std::string text;
  for (int i = 0; i < 64; ++i) text += char(40 + (i * 11) % 80);
  RecordOptions o;
  o.sequences = 2;
  o.seq_len = 16;
  o.prompt_len = 1;  // both scopes then score the predictions of bytes 1..15
  const auto all = accuracy_sweep(*m, text, o, "text", DeferScope::kAll);
  const auto dec = accuracy_sweep(*m, text, o, "text", DeferScope::kDecode);
  ASSERT_EQ(all.size(), dec.size());
  EXPECT_EQ(all[0].tokens, dec[0].tokens);
  EXPECT_DOUBLE_EQ(all[0].nll, dec[0].nll);  // the unmodified model is the same either way
  // A variant differs: in decode scope the first token (the prompt) runs unmodified.
  for (size_t i = 1; i < all.size(); ++i) EXPECT_NE(all[i].nll, dec[i].nll) << i;
}

TEST(MoeModel, SavedStateResumesTheSequenceExactly) {
  auto m = MoeModel::load(kData + "mixtral.safetensors");
  for (int t : {5, 9, 77}) m->step(t);
  const auto saved = m->save();
  const std::vector<float> a = m->step(12, {1, 0, {}});
  m->step(13);
  m->restore(saved);
  EXPECT_EQ(m->position(), 3);
  const std::vector<float> b = m->step(12, {1, 0, {}});
  EXPECT_EQ(a, b);
  m->reset();
  for (int t : {5, 9, 77}) m->step(t);
  EXPECT_EQ(m->step(12, {1, 0, {}}), a);
  MoeModel::State bad;
  EXPECT_THROW(m->restore(bad), Error);
}

TEST(Record, ClozeItemsAreWordsWithTheirContext) {
  const std::string text =
      "  1 In the beginning God created the heaven and the earth.\n"
      "  2 And the earth was without form, and void; and darkness was upon the face of the deep.\n"
      "  3 And God said, Let there be light: and there was light.\n"
      "  4 And God saw the light, that it was good:\n";
  ClozeOptions o;
  o.items = 5;
  o.context = 20;
  const auto w = cloze_items(text, o, "gen");
  ASSERT_EQ(w.size(), 5u);
  EXPECT_EQ(w[0].word, "God");  // the first word with 20 bytes of text before it
  EXPECT_EQ(w[0].word_begin - w[0].context_begin, 20);
  EXPECT_EQ(text.substr(size_t(w[0].word_begin), 3), "God");
  EXPECT_EQ(w[1].word, "created");
  o.verse_final = true;
  o.items = 3;
  const auto v = cloze_items(text, o, "gen");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].word, "earth");
  EXPECT_EQ(v[1].word, "deep");
  EXPECT_EQ(v[2].word, "light");
  o.items = 4;  // the last verse has no verse after it
  EXPECT_THROW(cloze_items(text, o, "gen"), Error);
}

TEST(Record, ClozeSweepGeneratesEveryVariant) {
  auto m = MoeModel::load(kData + "deepseek.safetensors");
  std::string text;
  for (int r = 0; r < 6; ++r) text += "and the word of the LORD came unto him saying ";
  ClozeOptions o;
  o.items = 12;
  o.context = 24;
  const auto rows = cloze_sweep(*m, text, o, "words");
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[0].mode, "baseline");
  EXPECT_DOUBLE_EQ(rows[0].agreement, 1.0);
  for (const auto& r : rows) {
    EXPECT_EQ(r.items, 12);
    EXPECT_GE(r.accuracy, 0.0);
    EXPECT_LE(r.accuracy, 1.0);
    EXPECT_LE(r.agreement, 1.0);
  }
  // The same run twice gives the same words.
  const auto again = cloze_sweep(*m, text, o, "words");
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].accuracy, again[i].accuracy);
}

}  // namespace
}  // namespace moebench
