// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/config/value.h"

#include <gtest/gtest.h>

namespace moebench::cfg {
namespace {

TEST(Value, ParsesTomlWithPositions) {
  const Value v = parse_toml("a = 1\n[t]\nb = \"x\"\nc = [1, 2.5]\n", "f.toml");
  ASSERT_TRUE(v.is_table());
  const auto* a = v.find_entry("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->value.as_int(), 1);
  EXPECT_EQ(a->key_where.str(), "f.toml:1:1");
  EXPECT_EQ(a->value.where().str(), "f.toml:1:5");
  const Value* t = v.find("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->find("b")->as_string(), "x");
  EXPECT_EQ(t->find("b")->where().line, 3);
  EXPECT_EQ(t->find("c")->items()[1].as_number(), 2.5);
  EXPECT_EQ(t->find("c")->describe(), "array of 2 items");
}

TEST(Value, MergeKeepsOverridePositions) {
  Value base = parse_toml("x = 1\n[n]\na = 1\nb = 2\n", "base.toml");
  const Value over = parse_toml("[n]\nb = 3\nc = 4\n", "over.toml");
  merge_into(base, over);
  EXPECT_EQ(base.find("x")->as_int(), 1);
  EXPECT_EQ(base.find("n")->find("a")->as_int(), 1);
  EXPECT_EQ(base.find("n")->find("b")->as_int(), 3);
  EXPECT_EQ(base.find("n")->find("b")->where().file, "over.toml");
  EXPECT_EQ(base.find("n")->find_entry("b")->key_where.str(), "over.toml:2:1");
  EXPECT_EQ(base.find("n")->find("c")->as_int(), 4);
}

TEST(Value, JsonRoundTrip) {
  const Value v = parse_toml("a = 1\nb = [true, \"s\"]\n[t]\nc = 0.5\n", "f.toml");
  const auto j = v.to_json();
  EXPECT_EQ(j.dump(), R"({"a":1,"b":[true,"s"],"t":{"c":0.5}})");
  const Value back = Value::from_json(nlohmann::json::parse(j.dump()), Where{"j"});
  EXPECT_EQ(back.to_json().dump(), j.dump());
}

TEST(Value, SyntaxErrorNamesFileLineAndColumn) {
  try {
    parse_toml("a = 1\nb = = 2\n", "bad.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where().file, "bad.toml");
    EXPECT_EQ(e.where().line, 2);
    EXPECT_EQ(e.expected(), "valid TOML");
    EXPECT_NE(std::string(e.what()).find("bad.toml:2:"), std::string::npos);
  }
}

TEST(Value, NestingDeeperThanTheLimitIsAConfigErrorNotAStackOverflow) {
  // A dotted key 30,000 parts deep (fuzz/regressions/experiment/deep-dotted-key.toml)
  // once crashed run_suite with SIGSEGV; so did a [a.a...] header.
  std::string deep = "x";
  for (int i = 0; i < 30000; ++i) deep += ".x";
  for (const std::string& text : {deep + " = 1\n", "[" + deep + "]\ny = 1\n"}) {
    try {
      parse_toml(text, "deep.toml");
      FAIL() << "expected a ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.where().file, "deep.toml");
      EXPECT_EQ(e.expected(), "at most 64 levels of nested tables and arrays");
      EXPECT_EQ(e.found().rfind("deeper nesting", 0), 0u) << e.found();
    }
  }
  // Deep enough to overflow the stack inside toml++ itself: refused before parsing.
  std::string deeper = "x";
  for (int i = 0; i < 300000; ++i) deeper += ".x";
  for (const std::string& text :
       {"a = 1\n[" + deeper + "]\ny = 1\n", "t = { " + deeper + " = 1 }\n"}) {
    try {
      parse_toml(text, "deeper.toml");
      FAIL() << "expected a ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.where().line, text[0] == 'a' ? 2 : 1);
      EXPECT_EQ(e.found(), "deeper nesting (counted before parsing)");
    }
  }
  // Dots in strings, comments and floats are not nesting.
  const std::string dots(100000, '.');
  EXPECT_NO_THROW(parse_toml("a = \"" + dots + "\"\nb = '" + dots + "'\nc = \"\"\"\n" + dots +
                                 "\"\"\"\n# " + dots +
                                 "\nd = [1.5, 2.5, 3.5, 4.5, 5.5]\n[e.f]\ng.h = 1.25\n",
                             "dots.toml"));
  // At the limit it parses.
  std::string ok = "x";
  for (int i = 1; i < kMaxNesting; ++i) ok += ".x";
  EXPECT_NO_THROW(parse_toml(ok + " = 1\n", "ok.toml"));
}

}  // namespace
}  // namespace moebench::cfg
