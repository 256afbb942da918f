// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/results/records.h"

#include <gtest/gtest.h>

#include "core/results/run_dir.h"
#include "core/testing/temp_dir.h"
#include "core/util/atomic_file.h"

namespace moebench {
namespace {

TEST(Records, FlattenNestedObjects) {
  const auto j = nlohmann::ordered_json::parse(R"({"a":{"b":1,"c":{"d":"x"}},"e":[1,2]})");
  EXPECT_EQ(flatten(j).dump(), R"({"a.b":1,"a.c.d":"x","e":[1,2]})");
  EXPECT_EQ(flatten(j, "p").dump(), R"({"p.a.b":1,"p.a.c.d":"x","p.e":[1,2]})");
}

TEST(Records, JsonlAndCsvShareColumns) {
  RunRecord a, b;
  a.fields["x_ms"] = 1.5;
  a.fields["name"] = "with, comma";
  b.fields["name"] = "quote\"d";
  b.fields["extra"] = nlohmann::ordered_json::array({1, 2});
  const std::vector<Column> fixed = {{"name", ""}, {"x_ms", ""}};
  const auto cols = column_order(fixed, {a, b});
  EXPECT_EQ(cols, (std::vector<std::string>{"name", "x_ms", "extra"}));
  EXPECT_EQ(to_jsonl(cols, {a, b}),
            "{\"name\":\"with, comma\",\"x_ms\":1.5,\"extra\":null}\n"
            "{\"name\":\"quote\\\"d\",\"x_ms\":null,\"extra\":[1,2]}\n");
  EXPECT_EQ(to_csv(cols, {a, b}),
            "name,x_ms,extra\n"
            "\"with, comma\",1.5,\n"
            "\"quote\"\"d\",,\"[1,2]\"\n");
}

TEST(Records, RunDirectoryStoresCasesAndRegeneratesRuns) {
  testing::TempDir dir;
  RunDirectory run(dir / "results" / "s" / "r1");
  run.prepare();
  EXPECT_FALSE(run.has_manifest());
  run.write_manifest({{"schema_version", 1}});
  EXPECT_TRUE(run.has_manifest());
  EXPECT_EQ(run.read_manifest()["schema_version"], 1);
  run.write_case("abc", {{"case_id", "abc"}, {"rows", 2}});
  // A stale temporary from a killed writer is ignored and cleaned.
  dir.write("results/s/r1/cases/0123456789abcdef.json.tmp.999999.0", "{trunc");
  // A file of the user's that only looks like a temporary is never ours.
  dir.write("results/s/r1/draft.tmp.999999.0", "a draft");
  const auto done = run.finished_cases();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done.at("abc")["rows"], 2);
  RunRecord r;
  r.fields["case_id"] = "abc";
  run.write_runs(identity_columns(), {r});
  const std::string csv = read_file(run.path() / "runs.csv");
  EXPECT_EQ(csv.substr(0, 26), "suite,run_id,case_id,case_");
  EXPECT_EQ(read_file(run.path() / "runs.jsonl").substr(0, 41),
            "{\"suite\":null,\"run_id\":null,\"case_id\":\"ab");
  run.prepare();  // removes the stale temporary
  EXPECT_FALSE(
      std::filesystem::exists(dir / "results/s/r1/cases/0123456789abcdef.json.tmp.999999.0"));
  EXPECT_EQ(read_file(dir / "results/s/r1/draft.tmp.999999.0"), "a draft");
}

}  // namespace
}  // namespace moebench
