// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// A trace file as a suite's workload: sequences / prompt_len / decode_len
// select and cap, batch_size is checked against what is selected, the
// synthetic generator's keys are refused, the recorded values are the ones
// that applied, and a broken or mismatched trace is reported at load.
#include "core/trace/trace_workload.h"

#include <gtest/gtest.h>

#include "core/experiment/experiment.h"
#include "core/testing/temp_dir.h"
#include "core/trace/memory_source.h"
#include "core/util/error.h"

namespace moebench {
namespace {

// A Mixtral-shaped trace: sequences with the given (prompt, decode) lengths.
std::filesystem::path write_mixtral_trace(const testing::TempDir& dir, const std::string& name,
                                          std::vector<SequenceInfo> seqs,
                                          const std::string& model_name = "") {
  const ModelSpec m = load_model("mixtral-8x7b", ConfigPaths::defaults());
  TraceInfo info;
  info.model_name = model_name.empty() ? m.name : model_name;
  info.model_hash = m.hash();
  info.moe_layers = m.moe_layers();
  info.routing = RoutingConfig::from_model(m);
  info.probs = ProbsStorage::kTopP;
  info.top_p = 2;
  info.sequences = seqs;
  MemoryTraceSource mem(info);
  for (int64_t s = 0; s < int64_t(seqs.size()); ++s) {
    for (int64_t t = 0; t < seqs[s].tokens(); ++t) {
      TokenRecord r;
      r.probs.assign(m.moe_layers() * 8, 0.0f);
      for (int64_t l = 0; l < m.moe_layers(); ++l) {
        const int32_t a = int32_t((s + t + l) % 8), b = int32_t((s + t + l + 3) % 8);
        r.ids.insert(r.ids.end(), {a, b});
        r.weights.insert(r.weights.end(), {0.7f, 0.3f});
        r.probs[l * 8 + a] = 0.7f;
        r.probs[l * 8 + b] = 0.3f;
      }
      mem.add(s, std::move(r));
    }
  }
  const auto path = dir / name;
  TraceWriteOptions o;
  o.probs = ProbsStorage::kTopP;
  o.top_p = 2;
  o.gate_inputs = false;
  write_trace(mem, path, o);
  return path;
}

Experiment load(const std::string& workload, const testing::TempDir& dir) {
  return load_experiment_text(
      "[suite]\nname = \"t\"\n[model]\npreset = \"mixtral-8x7b\"\n[hardware]\npreset = "
      "\"hybrimoe-a6000\"\n"
      "[workload]\nkind = \"trace\"\ntrace = \"t.safetensors\"\n" +
          workload + "\n[[strategy]]\npreset = \"all-cpu\"\n",
      "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr);
}

std::string load_error(const std::string& workload, const testing::TempDir& dir) {
  try {
    load(workload, dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TraceWorkload, UnsetKeysTakeTheWholeTraceAndRecordWhatApplied) {
  testing::TempDir dir;
  write_mixtral_trace(dir, "t.safetensors", {{10, 5}, {12, 6}, {8, 4}});
  const Experiment ex = load("", dir);
  ASSERT_EQ(ex.cases.size(), 1u);
  const WorkloadSpec& w = ex.cases[0].workload;
  EXPECT_EQ(w.sequences, 3);
  EXPECT_EQ(w.prompt_len, 12);  // the longest prompt kept
  EXPECT_EQ(w.decode_len, 6);
  const auto& j = ex.cases[0].config["workload"];
  EXPECT_EQ(j["sequences"], 3);
  EXPECT_EQ(j["prompt_len"], 12);
  // The synthetic generator's keys did not apply and are not recorded.
  EXPECT_FALSE(j.contains("seed"));
  EXPECT_FALSE(j.contains("generator"));
  EXPECT_FALSE(j.contains("h_trace"));
}

TEST(TraceWorkload, SequencesSelectAndLengthsCap) {
  testing::TempDir dir;
  write_mixtral_trace(dir, "t.safetensors", {{10, 5}, {12, 6}, {8, 4}});
  const Experiment ex = load("sequences = 2\ndecode_len = 3\nbatch_size = 2", dir);
  const WorkloadSpec& w = ex.cases[0].workload;
  EXPECT_EQ(w.sequences, 2);
  EXPECT_EQ(w.prompt_len, 12);
  EXPECT_EQ(w.decode_len, 3);
  EXPECT_EQ(w.batch_size, 2);
  // The source the engine reads is the selection.
  TraceSelection sel;
  sel.sequences = w.sequences;
  sel.prompt_cap = w.prompt_len;
  sel.decode_cap = w.decode_len;
  auto src = select_trace(open_trace_file(dir / "t.safetensors"), sel, "t");
  ASSERT_EQ(src->info().sequences.size(), 2u);
  EXPECT_EQ(src->info().sequences[0].prompt_len, 10);
  EXPECT_EQ(src->info().sequences[0].decode_len, 3);
  EXPECT_EQ(src->info().sequences[1].decode_len, 3);
  auto r = src->open(1, kIdsWeights);
  TokenRecord rec;
  int64_t n = 0;
  while (r->next(rec)) ++n;
  EXPECT_EQ(n, 15);  // 12 prompt + 3 generated
}

TEST(TraceWorkload, PrefillOnlyStudyMayShortenPrompts) {
  testing::TempDir dir;
  write_mixtral_trace(dir, "t.safetensors", {{10, 5}, {12, 6}});
  const Experiment ex = load("prompt_len = 4\ndecode_len = 0", dir);
  EXPECT_EQ(ex.cases[0].workload.prompt_len, 4);
  EXPECT_EQ(ex.cases[0].workload.decode_len, 0);
}

TEST(TraceWorkload, ClearErrorsForSelectionsTheTraceDoesNotHold) {
  testing::TempDir dir;
  write_mixtral_trace(dir, "t.safetensors", {{10, 5}, {12, 6}, {8, 4}, {8, 4}});
  // batch_size larger than the sequences of the trace: was silently run at batch 4.
  std::string e = load_error("batch_size = 64", dir);
  EXPECT_NE(e.find("workload.batch_size"), std::string::npos) << e;
  EXPECT_NE(e.find("at most the 4 sequences"), std::string::npos) << e;
  EXPECT_NE(e.find("exp.toml:"), std::string::npos) << e;  // where
  e = load_error("sequences = 9", dir);
  EXPECT_NE(e.find("at most the 4 sequences"), std::string::npos) << e;
  // Shortening a prompt while keeping generated tokens would pair them with the wrong context.
  e = load_error("prompt_len = 4", dir);
  EXPECT_NE(e.find("workload.prompt_len"), std::string::npos) << e;
  EXPECT_NE(e.find("decode_len = 0"), std::string::npos) << e;
  // Keys of the synthetic generator have no effect on a trace.
  e = load_error("seed = 3", dir);
  EXPECT_NE(e.find("workload.seed"), std::string::npos) << e;
  e = load_error("generator = \"mixtral\"", dir);
  EXPECT_NE(e.find("workload.generator"), std::string::npos) << e;
}

TEST(TraceWorkload, BrokenOrMismatchedTraceIsReportedAtLoad) {
  testing::TempDir dir;
  std::string e = load_error("", dir);  // no file
  EXPECT_NE(e.find("workload.trace"), std::string::npos) << e;
  EXPECT_NE(e.find("no such file"), std::string::npos) << e;
  dir.write("t.safetensors", "not a trace");
  e = load_error("", dir);
  EXPECT_NE(e.find("a valid trace file"), std::string::npos) << e;
  // A trace of another shape.
  testing::TempDir d2;
  write_mixtral_trace(d2, "t.safetensors", {{4, 4}});
  const std::string other =
      "[suite]\nname = \"t\"\n[model]\npreset = \"deepseek-v2-lite\"\n[hardware]\npreset = "
      "\"hybrimoe-a6000\"\n"
      "[workload]\nkind = \"trace\"\ntrace = \"t.safetensors\"\n[[strategy]]\npreset = "
      "\"all-cpu\"\n";
  try {
    load_experiment_text(other, "exp.toml", d2.path(), ConfigPaths::defaults(), nullptr);
    ADD_FAILURE() << "a Mixtral trace was accepted for DeepSeek-V2-Lite";
  } catch (const Error& ex) {
    EXPECT_NE(std::string(ex.what()).find("expected a trace of model 'deepseek-v2-lite'"),
              std::string::npos)
        << ex.what();
  }
}

// a trace whose model_hash does not match its model was taken
// silently; it is taken with a warning that names both hashes.
TEST(TraceWorkload, AnotherModelHashIsAcceptedWithAWarning) {
  testing::TempDir dir;
  const auto path = write_mixtral_trace(dir, "t.safetensors", {{4, 4}});
  ModelSpec m = load_model("mixtral-8x7b", ConfigPaths::defaults());
  const auto src = open_trace_file(path);
  ::testing::internal::CaptureStderr();
  check_trace_model(src->info(), m, "t.safetensors");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // the same model: no warning
  // How the experts are stored does not change the routing: every trace run
  // on Mixtral int4 once warned. No warning, whichever hash the trace has.
  m.expert_dtype = WeightDtype::kInt4;
  for (const std::string& hash : {m.routing_hash(), src->info().model_hash}) {
    TraceInfo info = src->info();
    info.model_hash = hash;
    ::testing::internal::CaptureStderr();
    check_trace_model(info, m, "t.safetensors");
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  }
  m.num_heads += 1;  // the same name, another shape
  ::testing::internal::CaptureStderr();
  check_trace_model(src->info(), m, "t.safetensors");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("the trace's model_hash (" + src->info().model_hash.substr(0, 12) +
                     ") is not model "
                     "'mixtral-8x7b' as this case configures it (" +
                     m.routing_hash().substr(0, 12) + ")"),
            std::string::npos)
      << err;
  m.norm_topk_prob = !m.norm_topk_prob;  // another router
  ::testing::internal::CaptureStderr();
  check_trace_model(src->info(), m, "t.safetensors");
  const std::string err2 = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err2.find("the trace's router differs from model 'mixtral-8x7b': norm_topk_prob"),
            std::string::npos)
      << err2;
}

TEST(TraceWorkload, SameShapeOtherModelIsAcceptedWithAWarning) {
  testing::TempDir dir;
  write_mixtral_trace(dir, "t.safetensors", {{4, 4}}, "my-mixtral-finetune");
  ::testing::internal::CaptureStderr();
  const Experiment ex = load("", dir);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(ex.cases.size(), 1u);
  EXPECT_NE(err.find("recorded for model 'my-mixtral-finetune'"), std::string::npos) << err;
}

}  // namespace
}  // namespace moebench
