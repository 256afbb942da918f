// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/experiment/experiment.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/testing/temp_dir.h"
#include "core/util/atomic_file.h"
#include "core/util/sha256.h"

namespace moebench {
namespace {

Experiment load(const std::string& text, const testing::TempDir& dir) {
  return load_experiment_text(text, "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr);
}

const char* kBase =
    "[suite]\nname = \"t\"\nseed = 7\n"
    "[model]\npreset = \"mixtral-8x7b\"\n"
    "[hardware]\npreset = \"hybrimoe-a6000\"\n";

TEST(Experiment, PresetWithOverride) {
  testing::TempDir dir;
  const Experiment ex = load(std::string(kBase) +
                                 "[workload]\nprompt_len = 32\n"
                                 "[[strategy]]\nname = \"a\"\n",
                             dir);
  ASSERT_EQ(ex.cases.size(), 1u);
  const Case& c = ex.cases[0];
  EXPECT_EQ(ex.suite.name, "t");
  EXPECT_EQ(c.model.name, "mixtral-8x7b");
  EXPECT_EQ(c.hardware.cpu.cores, 10);
  EXPECT_EQ(c.workload.prompt_len, 32);
  EXPECT_EQ(c.workload.seed, 7);  // from [suite] seed
  EXPECT_EQ(c.id.size(), 16u);
  EXPECT_EQ(c.config["model"]["top_k"], 2);
}

TEST(Experiment, SweepIsCartesianProductInFileOrderStrategiesInnermost) {
  testing::TempDir dir;
  const Experiment ex = load(
      "[suite]\nname = \"t\"\n"
      "[workload]\nprompt_len = [32, 128]\n"
      "[model]\npreset = [\"mixtral-8x7b\", \"deepseek-v2-lite\"]\nexpert_dtype = \"int4\"\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n"
      "[[strategy]]\nname = \"a\"\n"
      "[[strategy]]\nname = \"b\"\nresidency.cache_ratio = [0.25, 0.5]\n",
      dir);
  ASSERT_EQ(ex.cases.size(), 2u * 2u * 3u);
  std::vector<std::string> got;
  for (const auto& c : ex.cases) {
    got.push_back(std::to_string(c.workload.prompt_len) + "/" + c.model.name + "/" +
                  c.strategy.name + "/" + std::to_string(c.strategy.residency.cache_ratio));
    EXPECT_EQ(c.model.expert_dtype, WeightDtype::kInt4);
  }
  EXPECT_EQ(got.front(), "32/mixtral-8x7b/a/0.000000");
  EXPECT_EQ(got[1], "32/mixtral-8x7b/b/0.250000");
  EXPECT_EQ(got[2], "32/mixtral-8x7b/b/0.500000");
  EXPECT_EQ(got[3], "32/deepseek-v2-lite/a/0.000000");
  EXPECT_EQ(got[6], "128/mixtral-8x7b/a/0.000000");
  EXPECT_EQ(ex.cases[2].axes, (std::vector<std::pair<std::string, std::string>>{
                                  {"workload.prompt_len", "32"},
                                  {"model.preset", "mixtral-8x7b"},
                                  {"strategy.residency.cache_ratio", "0.5"}}));
  // Case ids are distinct and positions are recorded.
  for (size_t i = 0; i < ex.cases.size(); ++i) EXPECT_EQ(ex.cases[i].index, i);
}

TEST(Experiment, ASweepOverTheCaseCapIsRefusedBeforeAnyCaseIsBuilt) {
  testing::TempDir dir;
  auto range = [](int n) {
    std::string s = "[";
    for (int i = 1; i <= n; ++i) {
      if (i > 1) s += ',';
      s += std::to_string(i);
    }
    s += ']';
    return s;
  };
  // 100 x 100 x 8 x 99 = 7,920,000 cases: once took 16 GB and minutes, now one error.
  const std::string text = std::string(kBase) +
                           "[workload]\nsequences = 100\nprompt_len = " + range(100) +
                           "\ndecode_len = " + range(100) + "\nbatch_size = " + range(8) +
                           "\n[[strategy]]\nname = \"a\"\nresidency.cache_ratio = [" +
                           [] {
                             std::string s;
                             for (int i = 1; i < 100; ++i) {
                               if (i > 1) s += ',';
                               s += std::to_string(i / 100.0);
                             }
                             return s;
                           }() +
                           "]\n";
  try {
    load(text, dir);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("exp.toml:10:14: key 'workload.prompt_len'"), std::string::npos)
        << msg;  // the first axis
    EXPECT_NE(msg.find("at most 100000 cases"), std::string::npos) << msg;
    EXPECT_NE(msg.find("7920000 cases: workload.prompt_len (100) x workload.decode_len (100) x "
                       "workload.batch_size (8) x 99 strategy combination(s)"),
              std::string::npos)
        << msg;
  }
  // The limit is a parameter (run_suite --max-cases).
  const std::string ten = std::string(kBase) + "[workload]\nprompt_len = " + range(10) +
                          "\n[[strategy]]\nname = \"a\"\n";
  EXPECT_THROW(
      load_experiment_text(ten, "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr, 9),
      ConfigError);
  EXPECT_EQ(load_experiment_text(ten, "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr, 10)
                .cases.size(),
            10u);
  // Under the default cap it expands.
  EXPECT_EQ(load(std::string(kBase) + "[workload]\nprompt_len = " + range(10) +
                     "\n[[strategy]]\nname = \"a\"\n",
                 dir)
                .cases.size(),
            10u);
}

TEST(Experiment, StrategyDefaultsApplyUnlessAStrategySetsTheKey) {
  testing::TempDir dir;
  const Experiment ex =
      load(std::string("strategies = [\"all-cpu\"]\n") + kBase +
               "[strategy_defaults]\nresidency.slots_per_layer = 2\nresidency.pool = \"global\"\n"
               "[[strategy]]\npreset = \"gpu-ondemand\"\nresidency.slots_per_layer = [3, 4]\n",
           dir);
  ASSERT_EQ(ex.cases.size(), 3u);
  EXPECT_EQ(ex.cases[0].strategy.name, "all-cpu");
  EXPECT_EQ(ex.cases[0].strategy.residency.slots_per_layer, 2);
  EXPECT_EQ(ex.cases[0].strategy.residency.pool, "global");
  EXPECT_EQ(ex.cases[1].strategy.residency.slots_per_layer, 3);  // its own sweep wins
  EXPECT_EQ(ex.cases[2].strategy.residency.slots_per_layer, 4);
  EXPECT_EQ(ex.cases[2].strategy.residency.pool, "global");
  // A preset name in the defaults is an error that points at it.
  try {
    load(std::string("strategies = [\"all-cpu\"]\n") + kBase +
             "[strategy_defaults]\npreset = \"x\"\n",
         dir);
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("strategy_defaults.preset"), std::string::npos)
        << e.what();
  }
}

TEST(Experiment, CompositeSuiteConcatenatesPartsAndSharesCommonCases) {
  testing::TempDir dir;
  dir.write("parts/a.toml",
            std::string("strategies = [\"all-cpu\", \"fiddler\"]\n[suite]\nname = \"part-a\"\n") +
                "[model]\npreset = \"mixtral-8x7b\"\n[hardware]\npreset = \"hybrimoe-a6000\"\n");
  dir.write("parts/b.toml",
            std::string("strategies = [\"all-cpu\", \"llamacpp\"]\n[suite]\nname = \"part-b\"\n") +
                "[model]\npreset = \"mixtral-8x7b\"\n[hardware]\npreset = \"hybrimoe-a6000\"\n");
  const auto file = dir.write(
      "all.toml", "include = [\"parts/a.toml\", \"parts/b.toml\"]\n[suite]\nname = \"all\"\n");
  const Experiment ex = load_experiment(file, ConfigPaths::defaults(), nullptr);
  EXPECT_EQ(ex.suite.name, "all");
  ASSERT_EQ(ex.cases.size(), 3u);  // all-cpu is the same case in both parts
  EXPECT_EQ(ex.cases[0].strategy.name, "all-cpu");
  EXPECT_EQ(ex.cases[0].parts, (std::vector<std::string>{"part-a", "part-b"}));
  EXPECT_EQ(ex.cases[1].parts, (std::vector<std::string>{"part-a"}));
  EXPECT_EQ(ex.cases[2].strategy.name, "llamacpp");
  EXPECT_EQ(ex.cases[2].parts, (std::vector<std::string>{"part-b"}));
  EXPECT_EQ(ex.cases[2].index, 2u);
  // A part alone has the same case ids.
  const Experiment a = load_experiment(dir / "parts/a.toml", ConfigPaths::defaults(), nullptr);
  EXPECT_EQ(a.cases[0].id, ex.cases[0].id);
  // Other keys next to include are an error naming them; so is a missing part.
  const auto bad =
      dir.write("bad.toml", "include = [\"parts/a.toml\"]\n[model]\npreset = \"mixtral-8x7b\"\n");
  EXPECT_THROW(load_experiment(bad, ConfigPaths::defaults(), nullptr), ConfigError);
  const auto missing = dir.write("missing.toml", "include = [\"parts/nope.toml\"]\n");
  try {
    load_experiment(missing, ConfigPaths::defaults(), nullptr);
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("include[0]"), std::string::npos) << e.what();
  }
}

TEST(Experiment, CaseIdDependsOnlyOnResolvedConfig) {
  testing::TempDir dir;
  const auto a = load(std::string(kBase) + "[[strategy]]\nname = \"a\"\n", dir);
  // Same case written differently (explicit default, other suite name).
  const auto b = load(
      "[suite]\nname = \"other\"\nseed = 7\n[model]\npreset = \"mixtral-8x7b\"\ntop_k = 2\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n[[strategy]]\nname = \"a\"\n",
      dir);
  EXPECT_EQ(a.cases[0].id, b.cases[0].id);
  const auto c =
      load(std::string(kBase) + "[workload]\nseed = 8\n[[strategy]]\nname = \"a\"\n", dir);
  EXPECT_NE(a.cases[0].id, c.cases[0].id);
  // A citation is not configuration: rewording strategy.source keeps the id.
  const auto d = load(
      std::string(kBase) + "[[strategy]]\nname = \"a\"\nsource = \"a paper, section 9\"\n", dir);
  EXPECT_EQ(a.cases[0].id, d.cases[0].id);
  EXPECT_EQ(d.cases[0].config["strategy"]["source"], "a paper, section 9");  // still recorded
}

// A sequence longer than the model's context (mixtral-8x7b: 32,768 tokens,
// prompt and output together) is refused by the key that makes it so; the
// context length is recorded but is not part of the case's id.
TEST(Experiment, ASequenceLongerThanTheModelsContextIsRefused) {
  testing::TempDir dir;
  const auto refused = [&](const std::string& workload, const std::string& key,
                           const std::string& found) {
    try {
      load(std::string(kBase) + "[workload]\n" + workload + "[[strategy]]\nname = \"a\"\n", dir);
      ADD_FAILURE() << "accepted: " << workload;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), key) << e.what();
      EXPECT_GT(e.where().line, 0) << e.what();
      EXPECT_NE(std::string(e.what()).find("context (32768 tokens"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(found), std::string::npos) << e.what();
    }
  };
  refused("prompt_len = 40000\ndecode_len = 8\n", "workload.prompt_len", "40000 + 8 = 40008");
  refused("prompt_len = 32000\ndecode_len = 769\n", "workload.decode_len", "32769");
  refused(
      "scheduler = \"continuous\"\nlengths = \"uniform\"\nprompt_len = 8\n"
      "prompt_len_max = 40000\n",
      "workload.prompt_len_max", "40000 + ");
  const auto fits = load(std::string(kBase) +
                             "[workload]\nprompt_len = 32000\ndecode_len = 768\n"
                             "[[strategy]]\nname = \"a\"\n",
                         dir);
  EXPECT_EQ(fits.cases[0].config["model"]["context_length"], 32768);
  // Not stated (0): nothing is checked, and the case keeps its id.
  const auto with_context = load(
      "[suite]\nname = \"t\"\nseed = 7\n[model]\npreset = \"mixtral-8x7b\"\ncontext_length = 0\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n[workload]\nprompt_len = 32000\ndecode_len = 768\n"
      "[[strategy]]\nname = \"a\"\n",
      dir);
  load(
      "[suite]\nname = \"t\"\nseed = 7\n[model]\npreset = \"mixtral-8x7b\"\ncontext_length = 0\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n[workload]\nprompt_len = 40000\n"
      "[[strategy]]\nname = \"a\"\n",
      dir);
  EXPECT_EQ(with_context.cases[0].id, fits.cases[0].id);  // not part of the id
  EXPECT_FALSE(with_context.cases[0].config["model"].contains("context_length"));
}

// Serving keys (docs/SERVING.md): recorded only where they apply, so the
// papers' fixed-batch cases keep their ids; bad values refused by key.
TEST(Experiment, ServingKeysAreRecordedWhereTheyApplyAndBadOnesRefused) {
  testing::TempDir dir;
  const std::string w = "[workload]\nsequences = 4\nprompt_len = 4\ndecode_len = 2\n";
  const auto plain = load(std::string(kBase) + w + "[[strategy]]\nname = \"a\"\n", dir);
  const auto stated = load(std::string(kBase) + w +
                               "arrival = \"batch\"\nscheduler = \"static\"\nlengths = \"fixed\"\n"
                               "[[strategy]]\nname = \"a\"\n",
                           dir);
  EXPECT_EQ(plain.cases[0].id, stated.cases[0].id);
  EXPECT_FALSE(plain.cases[0].config["workload"].contains("arrival"));
  const auto served = load(std::string(kBase) + w +
                               "arrival = \"poisson\"\nrate = 2.5\nscheduler = \"continuous\"\n"
                               "[[strategy]]\nname = \"a\"\n",
                           dir);
  EXPECT_NE(plain.cases[0].id, served.cases[0].id);
  EXPECT_EQ(served.cases[0].config["workload"]["rate"], 2.5);
  EXPECT_EQ(served.cases[0].config["workload"]["slo"], "local-pc");
  EXPECT_FALSE(served.cases[0].config["workload"].contains("arrival_cv"));
  const auto refused = [&](const std::string& keys, const std::string& key,
                           const std::string& want) {
    try {
      load(std::string(kBase) + w + keys + "[[strategy]]\nname = \"a\"\n", dir);
      ADD_FAILURE() << "accepted: " << keys;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), key) << e.what();
      EXPECT_GT(e.where().line, 0) << e.what();
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  const std::string cont = "scheduler = \"continuous\"\n";
  refused(cont + "arrival = \"poisson\"\nrate = 0\n", "workload.rate", "a number > 0, found 0");
  refused(cont + "arrival = \"poisson\"\nrate = -1.0\n", "workload.rate", "found -1");
  refused(cont + "arrival = \"gamma\"\narrival_cv = 0.0\n", "workload.arrival_cv",
          "a number in [0.01, 20], found 0");
  // Outside the sampler's range: 1e-300 once looped for ever, 1e300 gave NaN times.
  refused(cont + "arrival = \"gamma\"\narrival_cv = 1e-300\n", "workload.arrival_cv",
          "a number in [0.01, 20]");
  refused(cont + "arrival = \"gamma\"\narrival_cv = 1e300\n", "workload.arrival_cv",
          "a number in [0.01, 20]");
  // Arrivals drawn past the span are refused at load, at the key (once blamed on the hardware).
  refused(cont + "arrival = \"poisson\"\nrate = 1e-300\n", "workload.rate", "within 1e+06 s");
  refused(cont + "lengths = \"file\"\narrivals = \"r.jsonl\"\n", "workload.prompt_len",
          "no prompt_len with lengths = \"file\"");
  refused(cont + "max_batch_tokens = 0\n", "workload.max_batch_tokens", "found 0");
  refused("arrival = \"poisson\"\n", "workload.scheduler",
          "a scheduler that serves requests arriving over time (\"continuous\")");
  refused(cont + "rate = 2.0\n", "workload.rate", "no rate with arrival = \"batch\"");
  refused(cont + "arrival = \"file\"\n", "workload.arrivals", "a JSONL file");
  refused(cont + "lengths = \"uniform\"\nprompt_len_max = 2\n", "workload.prompt_len_max",
          "at least prompt_len (4)");
  // The scheduler's checks (core/scheduler/scheduler.cc, check_scheduler): its name, whether it
  // serves arrivals, and no key of another scheduler's.
  refused("max_batch_tokens = 64\n", "workload.max_batch_tokens",
          "no max_batch_tokens with scheduler = \"static\"");
  refused("chunked_prefill = true\n", "workload.chunked_prefill",
          "no chunked_prefill with scheduler = \"static\"");
  refused("scheduler = \"fcfs\"\n", "workload.scheduler",
          "one of static, continuous (moebench config list), found \"fcfs\"");
  refused("slo = \"local-pc\"\n", "workload.slo", "no slo with the fixed batches");
  // The expert cache filling what the KV cache leaves: recorded only where set, and not with a slot
  // count.
  const auto filled = load(
      std::string(kBase) + w + "[[strategy]]\nname = \"a\"\nresidency.cache_fill = true\n", dir);
  EXPECT_NE(plain.cases[0].id, filled.cases[0].id);
  EXPECT_FALSE(plain.cases[0].config["strategy"]["residency"].contains("cache_fill"));
  try {
    load(std::string(kBase) + w +
             "[[strategy]]\nname = \"a\"\nresidency = { cache_fill = true, slots_per_layer = 2 }\n",
         dir);
    ADD_FAILURE() << "cache_fill with slots_per_layer accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "strategy.residency.cache_fill") << e.what();
    EXPECT_NE(std::string(e.what()).find("not both"), std::string::npos) << e.what();
  }
}

// A requests file is read at load: its bytes join the case id (a file
// changed between a run and its --resume once gave a "complete" run of two
// workloads), its lengths are recorded as the longest (the memory checks
// and cache_fill once sized a run from the defaults), and a path that is
// not a regular file or a short file is refused at the suite's key.
TEST(Experiment, ARequestsFileIsReadAtLoadAndHashedIntoTheCaseId) {
  testing::TempDir dir;
  const std::string w =
      "[workload]\nsequences = 2\narrival = \"file\"\nlengths = \"file\"\n"
      "scheduler = \"continuous\"\narrivals = \"r.jsonl\"\n";
  const std::string text = std::string(kBase) + w + "[[strategy]]\nname = \"a\"\n";
  dir.write("r.jsonl",
            "{\"arrival_time\": 1733558400.0, \"prompt_len\": 30, \"output_len\": 5}\n"
            "{\"arrival_time\": 1733558400.5, \"prompt_len\": 12, \"output_len\": 9}\n"
            "{\"arrival_time\": 1733558401.0, \"prompt_len\": 900, \"output_len\": 90}\n");
  const Experiment a = load(text, dir);
  const nlohmann::ordered_json& wj = a.cases[0].config["workload"];
  EXPECT_EQ(wj["prompt_len"], 30);  // the longest of the two requests used
  EXPECT_EQ(wj["decode_len"], 8);   // output_len 9: 8 decode steps
  EXPECT_EQ(wj["arrivals_sha256"].get<std::string>().size(), 64u);
  dir.write("r.jsonl",
            "{\"arrival_time\": 1733558400.0, \"prompt_len\": 30, \"output_len\": 5}\n"
            "{\"arrival_time\": 1733558400.25, \"prompt_len\": 12, \"output_len\": 9}\n");
  EXPECT_NE(load(text, dir).cases[0].id, a.cases[0].id);
  const auto refused = [&](const std::string& workload, const std::string& key,
                           const std::string& want) {
    try {
      load(std::string(kBase) + workload + "[[strategy]]\nname = \"a\"\n", dir);
      ADD_FAILURE() << "accepted: " << workload;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), key) << e.what();
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      if (key != "arrival_time") {
        EXPECT_EQ(e.where().file, "exp.toml") << e.what();
        EXPECT_GT(e.where().line, 0) << e.what();
      }
    }
  };
  refused(std::string(w).replace(w.find("sequences = 2"), 13, "sequences = 3"),
          "workload.sequences", "at most the 2 requests of 'r.jsonl'");
  std::string folder = w;
  folder.replace(folder.find("r.jsonl"), 7, ".");
  refused(folder, "workload.arrivals", "a directory");
  std::string device = w;
  device.replace(device.find("r.jsonl"), 7, "/dev/zero");
  refused(device, "workload.arrivals", "a character device");
  dir.write("r.jsonl",
            "{\"arrival_time\": 5, \"prompt_len\": 1, \"output_len\": 1}\n"
            "{\"arrival_time\": 4, \"prompt_len\": 1, \"output_len\": 1}\n");
  refused(w, "arrival_time", "in order");
}

TEST(Experiment, ListFieldIsAValueNotAnAxis) {
  testing::TempDir dir;
  const Experiment ex = load(std::string(kBase) +
                                 "[[hardware.table]]\nlane = \"cpu-expert\"\ntokens = [1, 2]\n"
                                 "time_us = [10, 20]\n[[strategy]]\nname = \"a\"\n",
                             dir);
  ASSERT_EQ(ex.cases.size(), 1u);
  ASSERT_EQ(ex.cases[0].hardware.tables.size(), 1u);
  EXPECT_EQ(ex.cases[0].hardware.tables[0].tokens, (std::vector<double>{1, 2}));
}

// the candidates' measured times ("auto"'s choice) load, and a
// malformed entry is refused naming the key.
TEST(Experiment, KernelTimesLoadAndAreChecked) {
  testing::TempDir dir;
  const std::string kt =
      "[[hardware.kernel_time]]\nmodel = \"m\"\ndtype = \"int8\"\nkernel = \"k\"\n";
  const Experiment ex = load(
      std::string(kBase) + kt + "tokens = [1, 4]\ntime_us = [10, 20]\n[[strategy]]\nname = \"a\"\n",
      dir);
  ASSERT_EQ(ex.cases[0].hardware.kernel_times.size(), 1u);
  EXPECT_EQ(ex.cases[0].hardware.kernel_times[0].kernel, "k");
  EXPECT_EQ(kernel_times_for(ex.cases[0].hardware, "m", "int8").size(), 1u);
  EXPECT_TRUE(kernel_times_for(ex.cases[0].hardware, "m", "bf16").empty());
  auto error = [&](const std::string& body) {
    try {
      load(std::string(kBase) + body + "[[strategy]]\nname = \"a\"\n", dir);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string e = error(kt + "tokens = [1, 4]\ntime_us = [10]\n");
  EXPECT_NE(e.find("kernel_time[0]"), std::string::npos) << e;
  EXPECT_NE(e.find("time_us"), std::string::npos) << e;
  e = error(kt + "tokens = [0, 4]\ntime_us = [10, 20]\n");
  EXPECT_NE(e.find("strictly ascending values >= 1"), std::string::npos) << e;
  e = error(kt + "tokens = [1]\ntime_us = [10]\n" + kt + "tokens = [1]\ntime_us = [10]\n");
  EXPECT_NE(e.find("one entry per model, dtype and kernel"), std::string::npos) << e;
  e = error(
      "[[hardware.kernel_time]]\nmodel = \"m\"\ndtype = \"fp8\"\nkernel = \"k\"\ntokens = "
      "[1]\ntime_us = [1]\n");
  EXPECT_NE(e.find("bf16, int8 or int4"), std::string::npos) << e;
}

// generated presets (a calibrated profile under results/) are
// found through MOEBENCH_CONFIG_PATH before the tracked configs/.
TEST(Experiment, ConfigPathFindsGeneratedPresetsFirst) {
  testing::TempDir a, b;
  a.write("hardware/local-cpu.toml", "name = \"generated\"\n");
  ::setenv("MOEBENCH_CONFIG_PATH", (a.path().string() + "::" + b.path().string()).c_str(), 1);
  const ConfigPaths p = ConfigPaths::defaults();
  ::setenv("MOEBENCH_CONFIG_PATH", (b.path() / "missing").string().c_str(), 1);
  std::string e;
  try {
    ConfigPaths::defaults();
  } catch (const Error& err) {
    e = err.what();
  }
  ::unsetenv("MOEBENCH_CONFIG_PATH");
  ASSERT_GE(p.roots.size(), 3u);
  EXPECT_EQ(p.roots[0], a.path());
  EXPECT_EQ(p.roots[1], b.path());
  EXPECT_EQ(p.find("hardware", "local-cpu"), a.path() / "hardware" / "local-cpu.toml");
  EXPECT_NE(p.find("hardware", "hybrimoe-a6000"), std::nullopt);  // the tracked ones after them
  EXPECT_NE(e.find("MOEBENCH_CONFIG_PATH: expected directories"), std::string::npos) << e;
  EXPECT_NE(e.find("no such file"), std::string::npos) << e;
  EXPECT_EQ(ConfigPaths::defaults().roots.size(), p.roots.size() - 2);
}

// A strategies/all-cpu.toml on MOEBENCH_CONFIG_PATH that was really
// on-demand loading ran as "all-cpu" (TBT 72.6 -> 7,729 ms) with no warning,
// and nothing recorded which file was used. Now a shadowing file with other
// contents is warned about, and every case records each preset file and its
// hash (the manifest and rows carry them).
TEST(Experiment, APresetShadowedOnTheSearchPathIsWarnedAndRecorded) {
  testing::TempDir cfg;
  cfg.write("strategies/all-cpu.toml", "preset = \"gpu-ondemand\"\nname = \"all-cpu\"\n");
  ::setenv("MOEBENCH_CONFIG_PATH", cfg.path().c_str(), 1);
  const ConfigPaths paths = ConfigPaths::defaults();
  ::unsetenv("MOEBENCH_CONFIG_PATH");
  ::testing::internal::CaptureStderr();
  const Experiment ex = load_experiment_text(
      "strategies = [\"all-cpu\"]\n[model]\npreset = \"mixtral-8x7b\"\n[hardware]\npreset = "
      "\"hybrimoe-a6000\"\n[workload]\nsequences = 1\nprompt_len = 4\ndecode_len = 2\n",
      "t.toml", ".", paths, nullptr);
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::string mine = (cfg.path() / "strategies" / "all-cpu.toml").string();
  EXPECT_NE(err.find("warning: preset 'all-cpu' (strategies): using " + mine + ", which shadows"),
            std::string::npos)
      << err;
  ASSERT_EQ(ex.cases.size(), 1u);
  std::map<std::string, PresetFile> by;
  for (const PresetFile& p : ex.cases[0].presets) by[p.kind + "/" + p.name] = p;
  ASSERT_TRUE(by.count("strategies/all-cpu"));
  EXPECT_EQ(by["strategies/all-cpu"].path, mine);
  EXPECT_EQ(by["strategies/all-cpu"].sha256, sha256_hex(read_file(mine)));
  EXPECT_TRUE(by.count("strategies/gpu-ondemand"));  // the preset it extends
  EXPECT_TRUE(by.count("models/mixtral-8x7b"));
  EXPECT_TRUE(by.count("hardware/hybrimoe-a6000"));
  // The built-ins alone: nothing shadowed, nothing said.
  ::testing::internal::CaptureStderr();
  load_experiment_text(
      "strategies = [\"all-cpu\"]\n[model]\npreset = \"mixtral-8x7b\"\n[hardware]\npreset = "
      "\"hybrimoe-a6000\"\n[workload]\nsequences = 1\nprompt_len = 4\ndecode_len = 2\n",
      "t.toml", ".", ConfigPaths::defaults(), nullptr);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(Experiment, LocalPresetFileAndInheritance) {
  testing::TempDir dir;
  dir.write("my/small.toml",
            "preset = \"mixtral-8x7b\"\nname = \"small-mixtral\"\nnum_layers = 4\n");
  const Experiment ex = load(
      "[model]\npreset = \"my/small.toml\"\nhidden_size = 1024\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n[[strategy]]\nname = \"a\"\n",
      dir);
  EXPECT_EQ(ex.cases[0].model.name, "small-mixtral");
  EXPECT_EQ(ex.cases[0].model.num_layers, 4);
  EXPECT_EQ(ex.cases[0].model.hidden_size, 1024);
  EXPECT_EQ(ex.cases[0].model.routed_experts, 8);  // inherited from mixtral-8x7b
}

TEST(Experiment, DescribeListsEveryModelField) {
  const auto docs = ModelSpec::schema().docs();
  EXPECT_GT(docs.size(), 30u);
  for (const auto& d : docs) {
    EXPECT_FALSE(d.doc.empty()) << d.key;
    EXPECT_FALSE(d.type.empty()) << d.key;
  }
  const auto hw = HardwareProfile::schema().docs();
  bool found = false;
  for (const auto& d : hw) {
    if (d.key == "cpu.mem_bw_gbps") {
      found = true;
      EXPECT_EQ(d.unit, "GB/s");
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace moebench

namespace moebench {
namespace {

TEST(Experiment, SeedsReplicateSyntheticCasesAcrossWorkloadSeeds) {
  testing::TempDir dir;
  const Experiment ex = load_experiment_text(
      "[suite]\nname = \"t\"\nseed = 7\nseeds = 3\n[model]\npreset = \"mixtral-8x7b\"\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n[workload]\nprompt_len = [8, 16]\n"
      "[[strategy]]\npreset = \"all-cpu\"\n[[strategy]]\npreset = \"llamacpp\"\n",
      "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr);
  ASSERT_EQ(ex.cases.size(), 2u * 3u * 2u);
  // Seeds inside the other axes, strategies innermost: both strategies see each seed.
  EXPECT_EQ(ex.cases[0].workload.seed, 7);
  EXPECT_EQ(ex.cases[1].workload.seed, 7);
  EXPECT_EQ(ex.cases[2].workload.seed, 8);
  EXPECT_EQ(ex.cases[5].workload.seed, 9);
  EXPECT_EQ(ex.cases[6].workload.seed, 7);
  EXPECT_EQ(ex.cases[6].workload.prompt_len, 16);
  EXPECT_EQ(ex.cases[2].axes.back(), (std::pair<std::string, std::string>{"workload.seed", "8"}));
  // A workload that sets its own seed is not replicated.
  const Experiment one = load_experiment_text(
      "[suite]\nname = \"t\"\nseeds = 3\n[model]\npreset = \"mixtral-8x7b\"\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n[workload]\nseed = 4\n[[strategy]]\npreset = "
      "\"all-cpu\"\n",
      "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr);
  ASSERT_EQ(one.cases.size(), 1u);
  EXPECT_EQ(one.cases[0].workload.seed, 4);
}

}  // namespace
}  // namespace moebench

namespace moebench {
namespace {

// Two comparisons: `comparison` lists them as a sweep axis; the
// mode is in the case id and every row; as-published runs each strategy on
// its own stack and kernels with the testbed's entries, mechanism every
// strategy on the one named implementation.
TEST(Experiment, ComparisonAxisKeepsTheTwoComparisonsApart) {
  testing::TempDir dir;
  const Experiment ex = load_experiment_text(
      "[suite]\nname = \"t\"\ncomparison = [\"as-published\", \"mechanism\"]\n"
      "[model]\npreset = \"qwen2-57b-a14b\"\nexpert_dtype = \"int4\"\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n"
      "[[strategy]]\npreset = \"ktransformers\"\n[[strategy]]\npreset = \"hybrimoe\"\n",
      "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr);
  ASSERT_EQ(ex.cases.size(), 4u);
  std::map<std::pair<std::string, std::string>, const Case*> by;
  std::set<std::string> ids;
  for (const Case& c : ex.cases) {
    by[{c.comparison.mode, c.strategy.name}] = &c;
    ids.insert(c.id);
    EXPECT_EQ(c.config["run"]["comparison"]["mode"], c.comparison.mode);
    EXPECT_EQ(
        c.axes.back().first == "suite.comparison" || c.axes.front().first == "suite.comparison",
        true);
  }
  EXPECT_EQ(ids.size(), 4u);  // the mode is part of the id
  const auto& kt = by.at({"as-published", "ktransformers"})->config["implementation"];
  const auto& hy = by.at({"as-published", "hybrimoe"})->config["implementation"];
  // The per-layer host time fitted on kTransformers' measured latency is paid by every system
  // on its stack; HybriMoE, whose paper says it cut that overhead, pays its share (an unknown) ...
  EXPECT_EQ(kt["stack_entry"], "ktransformers (measured on ktransformers)");
  EXPECT_GT(kt["layer_overhead_us"].get<double>(), 1000);
  EXPECT_EQ(hy["stack_entry"].get<std::string>().find("ktransformers (measured on ktransformers), "
                                                      "host time x "),
            0u);
  EXPECT_LT(hy["layer_overhead_us"].get<double>(), kt["layer_overhead_us"].get<double>());
  // ... and the kernel fit applies to both.
  EXPECT_EQ(kt["cpu_kernel_entry"], hy["cpu_kernel_entry"]);
  // Mechanism: both on the profile's own implementation, the same numbers.
  const auto& mk = by.at({"mechanism", "ktransformers"})->config["implementation"];
  const auto& mh = by.at({"mechanism", "hybrimoe"})->config["implementation"];
  EXPECT_EQ(mk, mh);
  EXPECT_EQ(mk["stack"], "generic");
  EXPECT_EQ(by.at({"mechanism", "hybrimoe"})->config["run"]["comparison"]["stack"], "generic");
}

TEST(Experiment, ComparisonModeIsChecked) {
  testing::TempDir dir;
  try {
    load_experiment_text(
        "[suite]\nname = \"t\"\ncomparison = \"mechanisms\"\n[model]\npreset = \"mixtral-8x7b\"\n"
        "[hardware]\npreset = \"hybrimoe-a6000\"\n[[strategy]]\npreset = \"all-cpu\"\n",
        "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr);
    FAIL() << "an unknown comparison was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "key 'suite.comparison': expected as-published or mechanism, found "
                  "'mechanisms'"),
              std::string::npos)
        << e.what();
  }
}

// a strategy preset names a base preset and writes only what
// differs; a component of the same kind keeps the base's other parameters,
// one whose kind changes starts from its own defaults.
TEST(Experiment, StrategyPresetsExtendABase) {
  const ConfigPaths paths = ConfigPaths::defaults();
  const StrategySpec base = load_strategy("hybrimoe", paths, nullptr);
  const StrategySpec code = load_strategy("hybrimoe-code", paths, nullptr);
  EXPECT_EQ(code.name, "hybrimoe-code");
  EXPECT_EQ(code.variant, "code");
  EXPECT_EQ(code.placement.kind, base.placement.kind);                // inherited
  EXPECT_EQ(code.residency.cache_ratio, base.residency.cache_ratio);  // inherited
  EXPECT_EQ(code.residency.admission, base.residency.admission);
  EXPECT_EQ(code.implementation.stack, base.implementation.stack);
  EXPECT_EQ(code.residency.late_prefetch, "issue");  // overridden
  EXPECT_EQ(base.residency.late_prefetch, "before-demand");
  ASSERT_EQ(code.cache.kind, "mrs");  // same kind: alpha from the base, update overridden
  EXPECT_EQ(code.cache.params.find("alpha")->as_number(), 0.5);
  EXPECT_EQ(code.cache.params.find("update")->as_string(), "first-token");
  EXPECT_EQ(base.cache.params.find("update")->as_string(), "mean");
  EXPECT_EQ(code.assigner.kind, "hybrimoe-greedy");  // a new kind: none of the base's keys
  EXPECT_EQ(code.assigner.params.find("timeline"), nullptr);

  testing::TempDir dir;
  dir.write("mine.toml",
            "preset = \"hybrimoe-code\"\nname = \"mine\"\n[residency]\ncache_ratio = 0.5\n");
  const StrategySpec mine = load_strategy((dir.path() / "mine.toml").string(), paths, nullptr);
  EXPECT_EQ(mine.name, "mine");
  EXPECT_EQ(mine.residency.cache_ratio, 0.5);
  EXPECT_EQ(mine.assigner.kind, "hybrimoe-greedy");  // two levels up the chain
  EXPECT_EQ(mine.placement.kind, "uniform");
}

}  // namespace
}  // namespace moebench
