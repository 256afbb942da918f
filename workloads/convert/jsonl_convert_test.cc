#include "workloads/convert/jsonl_convert.h"

#include <gtest/gtest.h>

#include "core/testing/temp_dir.h"
#include "core/trace/trace.h"
#include "core/util/error.h"

namespace moebench {
namespace {

// Mixtral has 32 MoE layers; a log needs every layer of every token.
std::string lines(int seqs, int tokens, bool mark_prompt) {
  std::string s;
  for (int q = 0; q < seqs; ++q) {
    for (int t = 0; t < tokens; ++t) {
      for (int l = 0; l < 32; ++l) {
        s += "{\"seq\": " + std::to_string(q) + ", \"token\": " + std::to_string(t) +
             ", \"layer\": " + std::to_string(l) + ", \"experts\": [" + std::to_string((t + l) % 8) + ", " +
             std::to_string((t + l + 3) % 8) + "], \"probs\": [0.7, 0.3]" +
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
  EXPECT_EQ(rec.ids[0], 1);           // token 1, layer 0
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
  EXPECT_EQ(convert_error("{\"seq\": 0, \"token\": 0, \"layer\": 0, \"experts\": [1, 9], \"probs\": [0.5, 0.5]}\n"),
            "log.jsonl:1: key 'experts': expected expert ids in [0, 8), found 9");
  EXPECT_EQ(convert_error("{\"seq\": 0, \"token\": 0, \"layer\": 40, \"experts\": [1, 2], \"probs\": [0.5, 0.5]}\n"),
            "log.jsonl:1: key 'layer': expected an integer in [0, 32), found 40");
  EXPECT_EQ(convert_error("not json\n"),
            "log.jsonl:1: expected a JSON object, found invalid JSON ([json.exception.parse_error.101] parse "
            "error at line 1, column 2: syntax error while parsing value - invalid literal; last read: 'no')");
  EXPECT_EQ(convert_error("{\"seq\": 0, \"token\": 0, \"layer\": 0, \"experts\": [1], \"probs\": [0.5]}\n"),
            "log.jsonl:1: key 'experts': expected an array of 2 expert ids (top-2 of mixtral-8x7b), found [1]");
  EXPECT_EQ(convert_error("{\"seq\": 0, \"token\": 0, \"layer\": 0, \"experts\": [1, 2], \"probs\": [0.5, 0.5]}\n"),
            "log.jsonl: sequence 0 token 0: expected all 32 MoE layers, found layer 1 missing");
  const std::string twice =
      "{\"seq\": 0, \"token\": 0, \"layer\": 0, \"experts\": [1, 2], \"probs\": [0.5, 0.5]}\n"
      "{\"seq\": 0, \"token\": 0, \"layer\": 0, \"experts\": [1, 2], \"probs\": [0.5, 0.5]}\n";
  EXPECT_EQ(convert_error(twice), "log.jsonl:2: expected each (seq, token, layer) once, found seq 0 token 0 layer 0 again");
}

}  // namespace
}  // namespace moebench
