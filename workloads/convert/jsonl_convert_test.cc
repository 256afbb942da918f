// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/convert/jsonl_convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "core/testing/temp_dir.h"
#include "core/trace/memory_source.h"
#include "core/trace/trace.h"
#include "core/util/atomic_file.h"
#include "core/util/error.h"
#include "workloads/stats/trace_stats.h"

namespace moebench {
namespace {

// Mixtral has 32 MoE layers; a log needs every layer of every token.
std::string lines(int seqs, int tokens, bool mark_prompt) {
  std::string s;
  for (int q = 0; q < seqs; ++q) {
    for (int t = 0; t < tokens; ++t) {
      for (int l = 0; l < 32; ++l) {
        s +=
            "{\"seq\": " + std::to_string(q) + ", \"token\": " + std::to_string(t) +
            ", \"layer\": " + std::to_string(l) + ", \"experts\": [" + std::to_string((t + l) % 8) +
            ", " + std::to_string((t + l + 3) % 8) + "], \"probs\": [0.7, 0.3]" +
            (mark_prompt ? std::string(", \"prompt\": ") + (t < 2 ? "true" : "false") : "") + "}\n";
      }
    }
  }
  return s;
}

TEST(JsonlConvert, ConvertsAndRoundTrips) {
  testing::TempDir dir;
  ConvertOptions o;
  o.input = dir.write("log.jsonl", lines(2, 5, true)).string();
  o.out = (dir / "t.safetensors").string();
  o.model = "mixtral-8x7b";
  const ConvertSummary sum = convert_jsonl(o, ConfigPaths::defaults());
  EXPECT_EQ(sum.sequences, 2);
  EXPECT_EQ(sum.tokens, 10);
  EXPECT_EQ(sum.lines, 2 * 5 * 32);
  auto t = open_trace_file(o.out);
  EXPECT_EQ(t->info().sequences[0].prompt_len, 2);
  EXPECT_EQ(t->info().sequences[0].decode_len, 3);
  EXPECT_EQ(t->info().probs, ProbsStorage::kTopP);
  auto r = t->open(1, kAllFields);
  TokenRecord rec;
  ASSERT_TRUE(r->next(rec));
  ASSERT_TRUE(r->next(rec));
  EXPECT_EQ(rec.ids[0], 1);  // token 1, layer 0
  EXPECT_EQ(rec.ids[1], 4);
  EXPECT_FLOAT_EQ(rec.weights[0], 0.7f);
  EXPECT_NEAR(rec.probs[4], 0.3f, 1e-3);  // f16
}

std::string convert_error(const std::string& text) {
  testing::TempDir dir;
  ConvertOptions o;
  o.input = dir.write("log.jsonl", text).string();
  o.out = (dir / "t.safetensors").string();
  o.model = "mixtral-8x7b";
  try {
    convert_jsonl(o, ConfigPaths::defaults());
  } catch (const Error& e) {
    const std::string msg = e.what();
    return msg.substr(msg.find("log.jsonl"));
  }
  return "<ok>";
}

TEST(JsonlConvert, RejectsBadLines) {
  EXPECT_EQ(
      convert_error(
          "{\"seq\": 0, \"token\": 0, \"layer\": 0, \"experts\": [1, 9], \"probs\": [0.5, 0.5]}\n"),
      "log.jsonl:1: key 'experts': expected expert ids in [0, 8), found 9");
  EXPECT_EQ(convert_error("{\"seq\": 0, \"token\": 0, \"layer\": 40, \"experts\": [1, 2], "
                          "\"probs\": [0.5, 0.5]}\n"),
            "log.jsonl:1: key 'layer': expected an integer in [0, 32), found 40");
  EXPECT_EQ(convert_error("not json\n"),
            "log.jsonl:1: expected a JSON object, found invalid JSON "
            "([json.exception.parse_error.101] parse "
            "error at line 1, column 2: syntax error while parsing value - invalid literal; last "
            "read: 'no')");
  EXPECT_EQ(convert_error(
                "{\"seq\": 0, \"token\": 0, \"layer\": 0, \"experts\": [1], \"weights\": [0.5]}\n"),
            "log.jsonl:1: key 'experts': expected an array of 2 expert ids (top-2 of "
            "mixtral-8x7b), found [1]");
  EXPECT_EQ(
      convert_error(
          "{\"seq\": 0, \"token\": 0, \"layer\": 0, \"experts\": [1, 2], \"probs\": [0.5, 0.5]}\n"),
      "log.jsonl: expected every (seq, token, layer) row of tokens 0..n-1 and layers 0..31, found "
      "31 missing "
      "(first: seq 0 token 0 layer 1); --missing hole keeps them as holes that statistics and the "
      "simulator "
      "skip, --missing drop removes tokens with a missing layer, --missing fill copies the "
      "previous token's "
      "routing of that layer");
  const std::string twice =
      "{\"seq\": 0, \"token\": 0, \"layer\": 0, \"experts\": [1, 2], \"probs\": [0.5, 0.5]}\n"
      "{\"seq\": 0, \"token\": 0, \"layer\": 0, \"experts\": [1, 2], \"probs\": [0.5, 0.5]}\n";
  EXPECT_EQ(
      convert_error(twice),
      "log.jsonl:2: expected each (seq, token, layer) once, found seq 0 token 0 layer 0 again (a "
      "log whose positions restart in every forward pass needs --layout per-forward)");
}

// trace convert wrote traces its own reader refused (exit 0), whose error then
// named a token and layer instead of the log's line; other inputs joined or
// doubled sequences, or replaced the log. Each is refused at its line now.
TEST(JsonlConvert, WhatTheTraceReaderWouldRefuseIsRefusedAtTheLogsLine) {
  const std::string head = "{\"seq\": 0, \"token\": 0, \"layer\": 0, \"experts\": [1, 2], ";
  EXPECT_EQ(convert_error(head + "\"probs\": [3.0, 0.5]}\n"),
            "log.jsonl:1: key 'probs': expected probabilities in [0, 1], found 3 in [3.0,0.5]");
  EXPECT_EQ(convert_error(head + "\"weights\": [0, 0]}\n"),
            "log.jsonl:1: key 'weights': expected at least one positive combine weight among the "
            "top-k (as a 32-bit float: values below 1.4e-45 are 0), found [0,0]");
  EXPECT_EQ(convert_error(head + "\"weights\": [1e-46, 1e-46]}\n"),
            "log.jsonl:1: key 'weights': expected at least one positive combine weight among the "
            "top-k (as a 32-bit float: values below 1.4e-45 are 0), found [1e-46,1e-46]");
  EXPECT_EQ(convert_error(head + "\"weights\": [1e39, 0.5]}\n"),
            "log.jsonl:1: key 'weights': expected numbers a 32-bit float holds (magnitude below "
            "3.4e38), found 1e+39");
  // A repeated key: the last one won, and the error blamed a later line.
  EXPECT_EQ(convert_error("{\"seq\": 0, \"token\": 0, \"layer\": 0, \"layer\": 1, \"experts\": "
                          "[1, 2], \"weights\": [0.5, 0.5]}\n"),
            "log.jsonl:1: key 'layer': expected each key once per object, found it twice");
  // String ids are numbered 0, 1, ...: "cmpl-b" after the integer 0 joined sequence 0.
  EXPECT_EQ(convert_error(head + "\"weights\": [0.5, 0.5]}\n" +
                          "{\"seq\": \"cmpl-b\", \"token\": 0, \"layer\": 0, \"experts\": [1, "
                          "2], \"weights\": [0.5, 0.5]}\n"),
            "log.jsonl:2: key 'seq': expected sequence ids of one kind in a file (integers since "
            "line 1), found \"cmpl-b\"");
  // UTF-16 and CR-only files: "invalid JSON" with the likely reason.
  std::string utf16 = "\xff\xfe";
  for (char c : head) utf16 += std::string(1, c) + '\0';
  EXPECT_NE(convert_error(utf16 + "\n").find("the file looks like UTF-16"), std::string::npos);
  EXPECT_NE(convert_error(head + "\"weights\": [0.5, 0.5]}\r" + head + "\"weights\": [1, 1]}\r")
                .find("its lines look separated by CR alone"),
            std::string::npos);
}

TEST(JsonlConvert, AnInputTwiceOrTheOutputOverAnInputIsRefused) {
  testing::TempDir dir;
  const std::string log = lines(1, 2, false);
  ConvertOptions o;
  o.inputs = {dir.write("a.jsonl", log).string(), (dir / "sub" / ".." / "a.jsonl").string()};
  std::filesystem::create_directory(dir / "sub");
  o.out = (dir / "t.safetensors").string();
  o.model = "mixtral-8x7b";
  try {
    convert_jsonl(o, ConfigPaths::defaults());
    ADD_FAILURE() << "the same file twice was converted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected each input file once, found it twice"),
              std::string::npos)
        << e.what();
  }
  o.inputs = {(dir / "a.jsonl").string()};
  o.out = (dir / "a.jsonl").string();
  try {
    convert_jsonl(o, ConfigPaths::defaults());
    ADD_FAILURE() << "the output replaced its input";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected a file other than the inputs, found the input"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_file(dir / "a.jsonl"), log);
}

// The hint left seq= and weights= blank when problem_id and gating_probs
// were the obvious candidates.
TEST(JsonlConvert, TheMappingHintNamesProblemIdsAndGatingProbabilities) {
  EXPECT_NE(convert_error("{\"problem_id\": 3, \"pos\": 0, \"layer_id\": 0, \"topk_ids\": [1, 2], "
                          "\"gating_probs\": [0.6, 0.4]}\n")
                .find("--field seq=problem_id --field token=pos --field layer=layer_id --field "
                      "experts=topk_ids --field probs=gating_probs"),
            std::string::npos);
}

// A log in another system's vocabulary: other key names, full-width router
// logits or probabilities, missing rows.
struct Log {
  testing::TempDir dir;
  ConvertOptions o;
  explicit Log(const std::string& text) {
    o.input = dir.write("log.jsonl", text).string();
    o.out = (dir / "t.safetensors").string();
    o.model = "mixtral-8x7b";
  }
};

std::string hf_lines(int tokens, bool logits, int skip_token = -1, int skip_layer = -1) {
  std::string s;
  for (int t = 0; t < tokens; ++t) {
    for (int l = 0; l < 32; ++l) {
      if (t == skip_token && l == skip_layer) continue;
      s += "{\"request_id\": 3, \"position\": " + std::to_string(t) +
           ", \"layer_idx\": " + std::to_string(l) + ", \"" +
           (logits ? "router_logits" : "router_probs") + "\": [";
      for (int e = 0; e < 8; ++e) {
        // Expert (t + l) % 8 best, then (t + l + 1) % 8, ...
        const int r = (e - t - l + 64) % 8;
        const double v = logits ? 4.0 - 0.5 * r : (r == 0 ? 0.4 : r == 1 ? 0.2 : 0.4 / 6);
        s += (e ? ", " : "") + std::to_string(v);
      }
      s += "]}\n";
    }
  }
  return s;
}

TEST(JsonlConvert, FieldMappingAndFullWidthLogits) {
  Log g(hf_lines(3, true));
  g.o.fields = {{"seq", "request_id"},
                {"token", "position"},
                {"layer", "layer_idx"},
                {"logits", "router_logits"}};
  const ConvertSummary sum = convert_jsonl(g.o, ConfigPaths::defaults());
  EXPECT_EQ(sum.tokens, 3);
  EXPECT_EQ(sum.probs_width, 8);  // full width kept: MRS can use p = 2k
  auto t = open_trace_file(g.o.out);
  EXPECT_EQ(t->info().probs, ProbsStorage::kFull);
  auto r = t->open(0, kAllFields);
  TokenRecord rec;
  ASSERT_TRUE(r->next(rec));
  ASSERT_TRUE(r->next(rec));     // token 1
  EXPECT_EQ(rec.ids[5 * 2], 6);  // layer 5: (1 + 5) % 8 first
  EXPECT_EQ(rec.ids[5 * 2 + 1], 7);
  // Softmax over the 8 logits 4.0, 3.5, ...: the chosen weights are the
  // softmax values renormalised over the top 2 (Mixtral's norm_topk_prob).
  EXPECT_NEAR(rec.weights[10], 1.0 / (1.0 + std::exp(-0.5)), 1e-5);
  double z = 0;
  for (int i = 0; i < 8; ++i) z += std::exp(-0.5 * i);
  EXPECT_NEAR(rec.probs[5 * 8 + 6], 1.0 / z, 1e-3);  // f16
  EXPECT_NEAR(rec.probs[5 * 8 + 0], std::exp(-0.5 * 2) / z,
              1e-3);  // an unchosen expert's probability is kept
}

TEST(JsonlConvert, FullWidthProbsTakeTheTopK) {
  Log g(hf_lines(2, false));
  g.o.fields = {{"seq", "request_id"},
                {"token", "position"},
                {"layer", "layer_idx"},
                {"probs", "router_probs"}};
  const ConvertSummary sum = convert_jsonl(g.o, ConfigPaths::defaults());
  EXPECT_EQ(sum.probs_width, 8);
  auto t = open_trace_file(g.o.out);
  auto r = t->open(0, kAllFields);
  TokenRecord rec;
  ASSERT_TRUE(r->next(rec));
  EXPECT_EQ(rec.ids[0], 0);
  EXPECT_EQ(rec.ids[1], 1);
  EXPECT_NEAR(rec.weights[0], 0.4 / 0.6, 1e-6);
}

TEST(JsonlConvert, UnknownFieldInMappingIsAnError) {
  Log g(hf_lines(1, true));
  g.o.fields = {{"sequence_id", "request_id"}};
  try {
    convert_jsonl(g.o, ConfigPaths::defaults());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected a field among seq, token, layer"),
              std::string::npos)
        << e.what();
  }
}

TEST(JsonlConvert, MissingRowsErrorDropOrFill) {
  const auto map = std::map<std::string, std::string>{{"seq", "request_id"},
                                                      {"token", "position"},
                                                      {"layer", "layer_idx"},
                                                      {"logits", "router_logits"}};
  {
    Log g(hf_lines(4, true, 2, 7));
    g.o.fields = map;
    try {
      convert_jsonl(g.o, ConfigPaths::defaults());
      ADD_FAILURE() << "a missing row was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("found 1 missing (first: seq 3 token 2 layer 7)"),
                std::string::npos)
          << e.what();
    }
  }
  {
    Log g(hf_lines(4, true, 2, 7));
    g.o.fields = map;
    g.o.missing = "drop";
    const ConvertSummary sum = convert_jsonl(g.o, ConfigPaths::defaults());
    EXPECT_EQ(sum.missing_rows, 1);
    EXPECT_EQ(sum.dropped_tokens, 1);
    EXPECT_EQ(sum.tokens, 3);
  }
  {
    Log g(hf_lines(4, true, 2, 7));
    g.o.fields = map;
    g.o.missing = "fill";
    const ConvertSummary sum = convert_jsonl(g.o, ConfigPaths::defaults());
    EXPECT_EQ(sum.filled_rows, 1);
    EXPECT_EQ(sum.tokens, 4);
    auto t = open_trace_file(g.o.out);
    auto r = t->open(0, kIdsWeights);
    TokenRecord rec, prev;
    ASSERT_TRUE(r->next(rec));
    ASSERT_TRUE(r->next(prev));
    ASSERT_TRUE(r->next(rec));  // token 2: layer 7 copied from token 1
    EXPECT_EQ(rec.ids[7 * 2], prev.ids[7 * 2]);
    EXPECT_NE(rec.ids[6 * 2], prev.ids[6 * 2]);  // the others are its own
  }
  {
    Log g(hf_lines(2, true, 0, 0));  // nothing to copy from at a sequence's start
    g.o.fields = map;
    g.o.missing = "fill";
    EXPECT_THROW(convert_jsonl(g.o, ConfigPaths::defaults()), Error);
  }
}

// one line with "token": 2147483653 was killed at 24 GB (every
// position up to it was allocated), "token": 1e8 ended in std::bad_alloc.
// Missing rows are counted from the rows present, and a gap of more than
// kMaxTokenGap positions is refused by name, in milliseconds.
TEST(JsonlConvert, APositionFarBeyondTheRowsIsRefusedNotAllocated) {
  auto one_line = [](const std::string& token) {
    return "{\"seq\": 0, \"token\": " + token +
           ", \"layer\": 0, \"experts\": [1, 2], \"probs\": [0.7, 0.3]}\n";
  };
  for (const std::string token : {"2147483653", "100000000"}) {
    const std::string e = convert_error(one_line(token));
    EXPECT_NE(e.find("sequence 0: expected token positions 0, 1, 2, ... with at most 4096 "
                     "consecutive positions "
                     "missing, found " +
                     token + " missing before token " + token + " (its first row)"),
              std::string::npos)
        << e;
  }
  // A gap within the limit is still counted, without visiting each position.
  std::string text = lines(1, 2, false);
  for (int l = 0; l < 32; ++l) {
    text += "{\"seq\": 0, \"token\": 4000, \"layer\": " + std::to_string(l) +
            ", \"experts\": [1, 2], \"probs\": [0.7, 0.3]}\n";
  }
  const std::string e = convert_error(text);
  EXPECT_NE(
      e.find("found " + std::to_string(3998 * 32) + " missing (first: seq 0 token 2 layer 0)"),
      std::string::npos)
      << e;
}

TEST(JsonlConvert, GapsAreDroppedOrFilledWholeTokens) {
  std::string text = lines(1, 2, false);  // tokens 0 and 1
  for (int l = 0; l < 32; ++l) {          // token 4: tokens 2 and 3 have no row at all
    text += "{\"seq\": 0, \"token\": 4, \"layer\": " + std::to_string(l) +
            ", \"experts\": [5, 6], \"probs\": [0.7, 0.3]}\n";
  }
  for (const std::string how : {"drop", "fill"}) {
    testing::TempDir dir;
    ConvertOptions o;
    o.input = dir.write("log.jsonl", text).string();
    o.out = (dir / "t.safetensors").string();
    o.model = "mixtral-8x7b";
    o.missing = how;
    const ConvertSummary sum = convert_jsonl(o, ConfigPaths::defaults());
    EXPECT_EQ(sum.missing_rows, 2 * 32) << how;
    if (how == "drop") {
      EXPECT_EQ(sum.dropped_tokens, 2);
      EXPECT_EQ(sum.tokens, 3);
    } else {
      EXPECT_EQ(sum.filled_rows, 2 * 32);
      EXPECT_EQ(sum.tokens, 5);
      auto t = open_trace_file(o.out);
      auto r = t->open(0, kIdsWeights);
      TokenRecord rec;
      std::vector<int32_t> first_ids;
      for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(r->next(rec));
        first_ids.push_back(rec.ids[0]);
      }
      // Tokens 2 and 3 copy token 1 (layer 0: experts (1 + 0) % 8 = 1); token 4 is its own.
      EXPECT_EQ(first_ids, (std::vector<int32_t>{0, 1, 1, 1, 5}));
    }
  }
}

// --missing hole keeps every position; each missing row is
// a hole (every id kHoleId, every weight 0) that the trace's metadata
// counts, the reader accepts, the statistics leave out, and a mixed or
// miscounted row is refused.
TEST(JsonlConvert, MissingRowsBecomeHolesThatStatisticsSkip) {
  // Tokens 0 and 1 share one of their two experts at every layer ([1, 2],
  // [2, 3]); token 2 has no row at all; token 3 ([5, 6]) lacks layer 5.
  auto row = [](int t, int l, const char* experts) {
    return "{\"seq\": 0, \"token\": " + std::to_string(t) + ", \"layer\": " + std::to_string(l) +
           ", \"experts\": " + experts + ", \"probs\": [0.7, 0.3]}\n";
  };
  std::string text;
  for (int l = 0; l < 32; ++l) text += row(0, l, "[1, 2]") + row(1, l, "[2, 3]");
  for (int l = 0; l < 32; ++l)
    if (l != 5) text += row(3, l, "[5, 6]");
  testing::TempDir dir;
  ConvertOptions o;
  o.input = dir.write("log.jsonl", text).string();
  o.out = (dir / "t.safetensors").string();
  o.model = "mixtral-8x7b";
  o.missing = "hole";
  const ConvertSummary sum = convert_jsonl(o, ConfigPaths::defaults());
  EXPECT_EQ(sum.missing_rows, 32 + 1);
  EXPECT_EQ(sum.hole_rows, 32 + 1);
  EXPECT_EQ(sum.tokens, 4);
  EXPECT_EQ(sum.filled_rows, 0);
  EXPECT_EQ(sum.dropped_tokens, 0);
  auto t = open_trace_file(o.out);
  EXPECT_EQ(t->info().hole_rows, 33);
  auto r = t->open(0, kAllFields);
  TokenRecord rec;
  std::vector<int32_t> layer0, layer5;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(r->next(rec));
    layer0.push_back(rec.ids[0]);
    layer5.push_back(rec.ids[5 * 2]);
  }
  EXPECT_EQ(layer0, (std::vector<int32_t>{1, 2, kHoleId, 5}));
  EXPECT_EQ(layer5, (std::vector<int32_t>{1, 2, kHoleId, kHoleId}));
  EXPECT_EQ(rec.weights[5 * 2], 0.0f);
  EXPECT_EQ(rec.probs[5 * 8 + 5], 0.0f);  // a hole has no probabilities
  // Statistics: 4 x 32 - 33 rows counted; a consecutive pair counts at a
  // layer only where neither row is a hole, so only 0 -> 1 counts, with
  // overlap 1/2 at every layer (a hole read as routing, or a pair across
  // it, would pull the mean below 1/2).
  const TraceStats st = compute_stats(*t);
  EXPECT_EQ(st.hole_rows, 33);
  int64_t counted = 0;
  for (const auto& c : st.counts)
    for (int64_t v : c) counted += v;
  EXPECT_EQ(counted, (4 * 32 - 33) * 2);
  for (double v : st.overlap_frac) EXPECT_EQ(v, 0.5);
  ASSERT_EQ(st.overlap_by_sequence.size(), 1u);
  EXPECT_EQ(st.overlap_by_sequence[0], 0.5);
  EXPECT_EQ(st.repeat_any[0], 1.0);
  EXPECT_NE(st.to_text().find("holes: 33 of 128 (token, layer) rows"), std::string::npos)
      << st.to_text();
}

// A trace's holes are checked at load: a row mixing hole ids with experts,
// or a count that differs from the rows, is refused by name.
TEST(JsonlConvert, HoleRowsAreCheckedWhenATraceIsRead) {
  Log g(lines(1, 3, false));
  convert_jsonl(g.o, ConfigPaths::defaults());
  auto t = open_trace_file(g.o.out);
  MemoryTraceSource mem(t->info());
  auto r = t->open(0, kAllFields);
  TokenRecord rec;
  for (int i = 0; r->next(rec); ++i) {
    if (i == 1) rec.ids[2] = kHoleId;  // layer 1 of token 1: a hole id beside an expert
    mem.add(0, rec);
  }
  const auto out = g.dir / "mixed.safetensors";
  TraceWriteOptions w;
  w.probs = t->info().probs;
  w.top_p = t->info().top_p;
  mem.mutable_info().hole_rows = 1;  // stated, but the row is not a whole hole
  write_trace(mem, out, w);
  try {
    open_trace_file(out);
    ADD_FAILURE() << "a mixed row was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "topk_ids[token 1, layer 1]: expected a hole (every id -1 and every weight 0) "
                  "or expert ids in [0, 8)"),
              std::string::npos)
        << e.what();
  }
}

TEST(JsonlConvert, TopKProbabilitiesOnlyAreStoredAsTopP) {
  Log g(lines(1, 3, false));
  const ConvertSummary sum = convert_jsonl(g.o, ConfigPaths::defaults());
  EXPECT_EQ(sum.probs_width, 2);
  auto t = open_trace_file(g.o.out);
  EXPECT_EQ(t->info().probs, ProbsStorage::kTopP);
  EXPECT_EQ(t->info().top_p, 2);
}

}  // namespace
}  // namespace moebench

namespace moebench {
namespace {

// three runs to find three mappings. Every missing field is named
// in one error, with a command line that maps them (guessed from the keys).
TEST(JsonlConvert, EveryMissingMappingInOneErrorWithACommandLine) {
  Log g(
      "{\"request_id\": 0, \"position\": 0, \"layer_idx\": 0, \"topk_ids\": [1, 2], "
      "\"topk_weights\": [0.6, 0.4], "
      "\"extra\": 1}\n");
  try {
    convert_jsonl(g.o, ConfigPaths::defaults());
    ADD_FAILURE() << "converted a log without mappings";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("log.jsonl:1: expected the fields seq, token, layer, experts and weights (or "
                     "probs/logits), "
                     "found 5 of them missing: seq (the sequence or request id; looked for 'seq' "
                     "or 'sequence'), "
                     "token"),
              std::string::npos)
        << m;
    EXPECT_NE(
        m.find("the line's keys: request_id, position, layer_idx, topk_ids, topk_weights, extra"),
        std::string::npos)
        << m;
    EXPECT_NE(
        m.find("--model mixtral-8x7b --out " + g.o.out +
               " --field seq=request_id --field token=position "
               "--field layer=layer_idx --field experts=topk_ids --field weights=topk_weights"),
        std::string::npos)
        << m;
  }
  // The command it suggests converts the line (then only the other layers are missing).
  g.o.fields = {{"seq", "request_id"},
                {"token", "position"},
                {"layer", "layer_idx"},
                {"experts", "topk_ids"},
                {"weights", "topk_weights"}};
  g.o.missing = "drop";
  try {
    convert_jsonl(g.o, ConfigPaths::defaults());
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("found none after --missing drop"), std::string::npos)
        << e.what();
  }
}

// Top-k probabilities that sum to 1 on every row look like renormalised
// combine weights: converted as given, and said.
TEST(JsonlConvert, TopKProbsThatSumToOneAreReportedAsLookingRenormalised) {
  Log g(lines(1, 2, false));  // probs [0.7, 0.3]
  const ConvertSummary a = convert_jsonl(g.o, ConfigPaths::defaults());
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(
      a.notes[0].find(
          "the top-2 'probs' sum to 1 on all 64 rows: they look like combine weights renormalised"),
      std::string::npos)
      << a.notes[0];
  EXPECT_NE(open_trace_file(g.o.out)->info().source.find("look like combine weights"),
            std::string::npos);
  std::string text = lines(1, 2, false);
  for (size_t p = text.find("[0.7, 0.3]"); p != std::string::npos; p = text.find("[0.7, 0.3]"))
    text.replace(p, 10, "[0.5, 0.2]");
  Log h(text);
  EXPECT_TRUE(convert_jsonl(h.o, ConfigPaths::defaults()).notes.empty());
}

// A raw vLLM log: positions restart at 0 in every forward pass (the prefill's
// rows, then one row per layer per decode step). --layout per-forward reads
// the passes in file order; the first pass is the prompt.
TEST(JsonlConvert, PerForwardLayoutNumbersThePassesInFileOrder) {
  auto row = [](int t, int l, int a) {
    return "{\"seq\": 0, \"token\": " + std::to_string(t) + ", \"layer\": " + std::to_string(l) +
           ", \"experts\": [" + std::to_string(a % 8) + ", " + std::to_string((a + 3) % 8) +
           "], \"weights\": [0.6, 0.4]}\n";
  };
  std::string text;
  for (int t = 0; t < 3; ++t)
    for (int l = 0; l < 32; ++l) text += row(t, l, t + l);  // prefill: positions 0-2
  for (int d = 0; d < 2; ++d) {
    for (int l = 0; l < 32; ++l) {
      if (d == 1 && l == 0)
        continue;  // a row the logger dropped: the pass still starts at its first row
      text += row(0, l, 10 * (d + 1) + l);
    }
  }
  Log g(text);
  EXPECT_NE(convert_error(text).find(
                "expected each (seq, token, layer) once, found seq 0 token 0 layer 0 again"),
            std::string::npos);  // read as positions, the second pass repeats position 0
  g.o.layout = "per-forward";
  g.o.missing = "fill";
  const ConvertSummary sum = convert_jsonl(g.o, ConfigPaths::defaults());
  EXPECT_EQ(sum.forward_passes, 3);
  EXPECT_EQ(sum.tokens, 5);
  EXPECT_EQ(sum.missing_rows, 1);
  auto t = open_trace_file(g.o.out);
  EXPECT_EQ(t->info().sequences[0].prompt_len, 3);
  EXPECT_EQ(t->info().sequences[0].decode_len, 2);
  auto r = t->open(0, kIdsWeights);
  TokenRecord rec;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(r->next(rec));
  EXPECT_EQ(rec.ids[5 * 2], (10 + 5) % 8);  // position 3 = the first decode pass
  ASSERT_TRUE(r->next(rec));
  EXPECT_EQ(rec.ids[5 * 2], (20 + 5) % 8);  // position 4 = the second
  EXPECT_EQ(rec.ids[0], (10 + 0) % 8);      // its dropped layer 0 filled from position 3
}

TEST(JsonlConvert, SeveralFilesKeepTheirSequencesApart) {
  testing::TempDir dir;
  ConvertOptions o;
  o.inputs = {dir.write("a.jsonl", lines(1, 3, false)).string(),
              dir.write("b.jsonl", lines(2, 2, false)).string()};
  o.out = (dir / "t.safetensors").string();
  o.model = "mixtral-8x7b";
  const ConvertSummary sum = convert_jsonl(o, ConfigPaths::defaults());
  EXPECT_EQ(sum.sequences, 3);  // a's sequence 0, b's 0 and 1
  EXPECT_EQ(sum.tokens, 3 + 2 * 2);
  auto t = open_trace_file(o.out);
  ASSERT_EQ(t->info().sequences.size(), 3u);
  EXPECT_EQ(t->info().sequences[0].decode_len, 3);
  EXPECT_EQ(t->info().sequences[1].decode_len, 2);
  EXPECT_NE(t->info().source.find("\"inputs\""), std::string::npos);
  // A gap names the file with several inputs.
  o.inputs[1] = dir.write("c.jsonl", lines(1, 1, false) +
                                         "{\"seq\": 0, \"token\": 5000, \"layer\": 0, \"experts\": "
                                         "[1, 2], \"weights\": [0.5, 0.5]}\n")
                    .string();
  try {
    convert_jsonl(o, ConfigPaths::defaults());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sequence 0 of " + o.inputs[1]), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace moebench
