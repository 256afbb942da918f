// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Hostile input, second round: each input class that escaped the
// results folder, hung, or was silently accepted, refused at load with the
// file, line, column and key (the inputs that fit in one file are also in
// fuzz/regressions/experiment/, replayed by ctest).
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "core/experiment/experiment.h"
#include "core/testing/temp_dir.h"

namespace moebench {
namespace {

const char* kCase =
    "[model]\npreset = \"mixtral-8x7b\"\n"
    "[hardware]\npreset = \"hybrimoe-a6000\"\n"
    "[workload]\nsequences = 1\nprompt_len = 4\ndecode_len = 2\n"
    "[[strategy]]\nname = \"a\"\n";

ConfigError load_error(const std::string& text, const testing::TempDir& dir,
                       uint64_t max_cases = kMaxCases) {
  try {
    load_experiment_text(text, "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr, max_cases);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted:\n" << text;
  return ConfigError(Where{}, "", "", "");
}

ConfigError file_error(const std::filesystem::path& file, uint64_t max_cases = kMaxCases) {
  try {
    load_experiment(file, ConfigPaths::defaults(), nullptr, max_cases);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted " << file;
  return ConfigError(Where{}, "", "", "");
}

TEST(HostileInput, ASuiteNameIsANameNotAPath) {
  testing::TempDir dir;
  const ConfigError e = load_error("[suite]\nname = \"..\"\n" + std::string(kCase), dir);
  EXPECT_EQ(e.key(), "suite.name");
  EXPECT_EQ(std::string(e.what()),
            "exp.toml:2:8: key 'suite.name': expected a name of 1 to 128 letters, digits, '-', '_' "
            "or '.', not "
            "starting with '.' (a name, not a path), found '..': it names the folder itself or its "
            "parent");
  EXPECT_EQ(load_error("[suite]\nname = \"a/b\"\n" + std::string(kCase), dir).key(), "suite.name");
  EXPECT_EQ(load_error("[suite]\nname = \"x\\u0007\"\n" + std::string(kCase), dir).key(),
            "suite.name");
  // The default name is the file's: a file named "..toml" (stem ".") gets a hint.
  const auto odd = dir.write("..toml", kCase);
  const ConfigError d = file_error(odd);
  EXPECT_NE(std::string(d.what()).find("the default is the file's name, so set [suite] name"),
            std::string::npos)
      << d.what();
}

TEST(HostileInput, ACompositeSuiteNameIsCheckedToo) {
  testing::TempDir dir;
  dir.write("part.toml", "[suite]\nname = \"part\"\n" + std::string(kCase));
  for (const std::string bad : {"../../../../root/X", "/tmp/X", ".."}) {
    const auto file =
        dir.write("all.toml", "include = [\"part.toml\"]\n[suite]\nname = \"" + bad + "\"\n");
    const ConfigError e = file_error(file);
    EXPECT_EQ(e.key(), "suite.name") << e.what();
    EXPECT_EQ(e.where().line, 3) << e.what();
  }
}

// Five files under 4 KB, each including the next 50 times: 50^4 + ... file
// instances. Counted before anything is expanded, against the case cap;
// once more than 60 s of --dry-run.
TEST(HostileInput, AnIncludeFanOutIsCountedBeforeExpanding) {
  testing::TempDir dir;
  dir.write("f5.toml", "[suite]\nname = \"f5\"\n" + std::string(kCase));
  for (int i = 4; i >= 1; --i) {
    std::string inc = "include = [";
    for (int j = 0; j < 50; ++j) inc += (j ? ", \"f" : "\"f") + std::to_string(i + 1) + ".toml\"";
    const auto f = dir.write("f" + std::to_string(i) + ".toml",
                             inc + "]\n[suite]\nname = \"f" + std::to_string(i) + "\"\n");
    EXPECT_LT(std::filesystem::file_size(f), 4096u);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const ConfigError e = file_error(dir / "f1.toml");
  EXPECT_EQ(e.key(), "include");
  EXPECT_NE(std::string(e.what()).find("expected at most 100000 included experiment files"),
            std::string::npos)
      << e.what();
  // Two levels (2,550 file instances, 2,500 case instances, one distinct
  // case): each distinct file is read and expanded once.
  const Experiment ex = load_experiment(dir / "f3.toml", ConfigPaths::defaults(), nullptr);
  ASSERT_EQ(ex.cases.size(), 1u);
  EXPECT_EQ(ex.cases[0].parts, std::vector<std::string>{"f5"});
  // Both well under a second; not a timing test, a guard against 312
  // million expansions (which take minutes).
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  // A lower cap counts case instances too.
  const ConfigError c = file_error(dir / "f3.toml", 100);
  EXPECT_NE(std::string(c.what()).find("at most 100"), std::string::npos) << c.what();
}

TEST(HostileInput, DerivedSeedsStayInRange) {
  testing::TempDir dir;
  const ConfigError e =
      load_error("[suite]\nseed = 9223372036854775807\nseeds = 3\n" + std::string(kCase), dir);
  EXPECT_EQ(e.key(), "suite.seed");
  EXPECT_NE(std::string(e.what()).find("expected at most 9223372036854775805 with seeds = 3"),
            std::string::npos)
      << e.what();
  EXPECT_NO_THROW(
      load_experiment_text("[suite]\nseed = 9223372036854775805\nseeds = 3\n" + std::string(kCase),
                           "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr));
}

TEST(HostileInput, EveryBandwidthAndRateIsAPositiveNumberAboveAFloor) {
  testing::TempDir dir;
  auto hw = [](const std::string& extra) {
    return "[model]\npreset = \"mixtral-8x7b\"\n[hardware]\npreset = \"hybrimoe-a6000\"\n" + extra +
           "\n[[strategy]]\nname = \"a\"\n";
  };
  // d2h_gbps = 0 was accepted and meant infinitely fast; 1e-308 made every time infinite.
  EXPECT_EQ(load_error(hw("link.d2h_gbps = 0"), dir).key(), "hardware.link.d2h_gbps");
  EXPECT_EQ(load_error(hw("link.h2d_gbps = 1e-308"), dir).key(), "hardware.link.h2d_gbps");
  EXPECT_EQ(load_error(hw("cpu.mem_bw_gbps = 1e-300"), dir).key(), "hardware.cpu.mem_bw_gbps");
  EXPECT_EQ(load_error(hw("gpu.hbm_gbps = 0"), dir).key(), "hardware.gpu.hbm_gbps");
  EXPECT_EQ(load_error(hw("cpu.peak_gflops_bf16 = 1e-9"), dir).key(),
            "hardware.cpu.peak_gflops_bf16");
  EXPECT_EQ(std::string(load_error(hw("link.d2h_gbps = 0"), dir).what()),
            "exp.toml:5:17: key 'hardware.link.d2h_gbps': expected a bandwidth of at least 0.001 "
            "GB/s (1 MB/s) "
            "when a GPU is present, found 0");
}

TEST(HostileInput, DegenerateModelsAreRefusedByName) {
  testing::TempDir dir;
  auto model = [](const std::string& extra) {
    return "[model]\npreset = \"mixtral-8x7b\"\n" + extra +
           "\n[hardware]\npreset = \"hybrimoe-a6000\"\n"
           "[[strategy]]\nname = \"a\"\n";
  };
  EXPECT_EQ(load_error(model("hidden_size = 1"), dir).key(), "model.hidden_size");
  EXPECT_EQ(load_error(model("vocab_size = 0"), dir).key(), "model.vocab_size");
}

TEST(HostileInput, ARealBackendCaseOnAGpuProfileIsRefusedAtLoad) {
  testing::TempDir dir;
  const ConfigError e = load_error("[suite]\nbackend = \"real\"\n" + std::string(kCase), dir);
  EXPECT_EQ(e.key(), "suite.backend");
  EXPECT_NE(std::string(e.what()).find("found \"real\" with hardware 'hybrimoe-a6000' (1 GPU"),
            std::string::npos)
      << e.what();
}

TEST(HostileInput, AnUnknownTopLevelTableListsTheKnownOnes) {
  testing::TempDir dir;
  const ConfigError e = load_error(std::string(kCase) + "[bogus]\nx = 1\n", dir);
  EXPECT_EQ(
      e.expected(),
      "a known top-level key or table (suite, model, hardware, workload, strategies, strategy, "
      "strategy_defaults)");
}

}  // namespace
}  // namespace moebench
