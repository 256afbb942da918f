// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Every class of configuration error, with the exact message a user sees:
//   <file>:<line>:<col>: key '<key>': expected <what>, found <what>[; did you mean '<x>'?]

#include <fstream>

#include <gtest/gtest.h>

#include "core/experiment/experiment.h"
#include "core/testing/temp_dir.h"

namespace moebench {
namespace {

// A catalog with two cache kinds; "lru" takes `capacity_hint` (int) and a list param.
class FakeCatalog : public ComponentCatalog {
 public:
  std::vector<std::string> kinds(const std::string& family) const override {
    if (family == "cache") return {"lfu", "lru"};
    return {"none"};
  }
  nlohmann::ordered_json resolve(const std::string&, const std::string& kind,
                                 const cfg::Value& params,
                                 const std::string& prefix) const override {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& e : params.entries()) {
      if (kind == "lru" && e.key == "capacity_hint") {
        if (!e.value.is_int()) {
          throw ConfigError(e.value.where(), prefix + ".capacity_hint", "an integer",
                            e.value.describe());
        }
        j[e.key] = e.value.as_int();
        continue;
      }
      cfg::throw_unknown_key(e, prefix, {"capacity_hint"});
    }
    return j;
  }
  bool is_list_param(const std::string&, const std::string&, const std::string&) const override {
    return false;
  }
};

std::string load_error(const std::string& text, const ComponentCatalog* catalog = nullptr) {
  testing::TempDir dir;
  try {
    load_experiment_text(text, "exp.toml", dir.path(), ConfigPaths::defaults(), catalog);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

const char* kHead =
    "[suite]\nname = \"t\"\n"
    "[hardware]\npreset = \"hybrimoe-a6000\"\n";

TEST(ConfigErrors, UnknownKeySuggestsClosest) {
  const std::string text = std::string(kHead) +
                           "[model]\npreset = \"mixtral-8x7b\"\nhiden_size = 8\n"
                           "[[strategy]]\nname = \"s\"\n";
  EXPECT_EQ(load_error(text),
            "exp.toml:7:1: key 'model.hiden_size': expected a known key of [model], "
            "found unknown key 'hiden_size'; did you mean 'hidden_size'?");
}

TEST(ConfigErrors, UnknownKeyWithoutPlausibleSuggestion) {
  const std::string text = std::string(kHead) +
                           "[workload]\nzzzzzz = 1\n[model]\npreset = \"mixtral-8x7b\"\n"
                           "[[strategy]]\nname = \"s\"\n";
  EXPECT_EQ(load_error(text),
            "exp.toml:6:1: key 'workload.zzzzzz': expected a known key of [workload], "
            "found unknown key 'zzzzzz'");
}

TEST(ConfigErrors, WrongType) {
  const std::string text = std::string(kHead) +
                           "[model]\npreset = \"mixtral-8x7b\"\ntop_k = \"two\"\n"
                           "[[strategy]]\nname = \"s\"\n";
  EXPECT_EQ(
      load_error(text),
      "exp.toml:7:9: key 'model.top_k': expected an integer in [1, 64], found string \"two\"");
}

TEST(ConfigErrors, OutOfRange) {
  const std::string text = std::string(kHead) +
                           "[model]\npreset = \"mixtral-8x7b\"\n"
                           "[workload]\nbatch_size = 0\n"
                           "[[strategy]]\nname = \"s\"\n";
  EXPECT_EQ(load_error(text),
            "exp.toml:8:14: key 'workload.batch_size': expected an integer in [1, 4096], found 0");
}

// A contention term of an unknown kind, or a kind given twice, is refused by key.
TEST(ConfigErrors, ContentionTermsAreCheckedByKey) {
  const std::string head =
      "[suite]\nname = \"t\"\n[model]\npreset = \"mixtral-8x7b\"\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n";
  const std::string tail = "[[strategy]]\nname = \"s\"\n";
  std::string e = load_error(head +
                             "[[hardware.contention]]\nterm = \"gpu-expret\"\nfactor = 1.2\n"
                             "source = \"x\"\n" +
                             tail);
  EXPECT_NE(e.find("key 'hardware.contention[0].term': expected one of"), std::string::npos) << e;
  e = load_error(head +
                 "[[hardware.contention]]\nterm = \"gpu-expert\"\nfactor = 1.2\nsource = \"x\"\n"
                 "[[hardware.contention]]\nterm = \"gpu-expert\"\nper_task_us = 3.0\n"
                 "source = \"x\"\n" +
                 tail);
  EXPECT_NE(e.find("key 'hardware.contention[1].term': expected one entry per term, found "
                   "'gpu-expert' again (contention[0])"),
            std::string::npos)
      << e;
  e = load_error(head +
                 "[[hardware.contention]]\nterm = \"gpu-expert\"\nfactor = 0.0\n"
                 "source = \"x\"\n" +
                 tail);
  EXPECT_NE(e.find("hardware.contention[0].factor"), std::string::npos) << e;
  // An under-copy term scales the overlapped part: a per-task time is refused by key.
  e = load_error(head +
                 "[[hardware.contention]]\nterm = \"cpu-under-copy\"\nfactor = 1.2\n"
                 "per_task_us = 3.0\nsource = \"x\"\n" +
                 tail);
  EXPECT_NE(e.find("key 'hardware.contention[0].per_task_us': expected no per_task_us for an "
                   "under-copy term"),
            std::string::npos)
      << e;
}

// The profile the components plan with: resolved by name into the case (its
// JSON in the case's hardware), refused by key when it is missing, has a
// [planning] of its own or differs in having a GPU; a factor must be positive.
TEST(ConfigErrors, PlanningProfilesAreResolvedAndCheckedByKey) {
  const std::string head =
      "[suite]\nname = \"t\"\n[model]\npreset = \"mixtral-8x7b\"\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n";
  const std::string tail = "[[strategy]]\nname = \"s\"\n";
  testing::TempDir dir;
  const Experiment ex =
      load_experiment_text(head + "[hardware.planning]\npreset = \"smoe-rtx4090\"\n" + tail,
                           "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr);
  ASSERT_EQ(ex.cases.size(), 1u);
  const PlanningSpec& p = ex.cases[0].hardware.planning;
  ASSERT_TRUE(p.estimate);
  EXPECT_EQ(p.estimate->name, "smoe-rtx4090");
  EXPECT_EQ(ex.cases[0].config["hardware"]["planning"]["estimate"]["name"], "smoe-rtx4090");
  // Without [planning] the case's JSON has none (every earlier case keeps its id).
  const Experiment plain =
      load_experiment_text(head + tail, "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr);
  EXPECT_FALSE(plain.cases[0].config["hardware"].contains("planning"));
  EXPECT_NE(plain.cases[0].id, ex.cases[0].id);

  std::string e = load_error(head + "[hardware.planning]\npreset = \"smoe-rtx409\"\n" + tail);
  EXPECT_NE(e.find("exp.toml:8:10: key 'hardware.planning.preset': expected a hardware preset"),
            std::string::npos)
      << e;
  e = load_error(head + "[hardware.planning]\npreset = \"local-cpu\"\n" + tail);
  EXPECT_NE(e.find("key 'hardware.planning.preset': expected a profile with a GPU, as "
                   "'hybrimoe-a6000', found 'local-cpu' (0 GPU)"),
            std::string::npos)
      << e;
  e = load_error(head + "[hardware.planning]\ncpu_expert = 0.0\n" + tail);
  EXPECT_NE(e.find("key 'hardware.planning.cpu_expert'"), std::string::npos) << e;
  // A planning profile that plans with another one is refused.
  {
    std::ofstream f(dir.path() / "nested.toml");
    f << "preset = \"smoe-rtx4090\"\nname = \"nested\"\n[planning]\ngpu_expert = 2.0\n";
  }
  try {
    load_experiment_text(head + "[hardware.planning]\npreset = \"nested.toml\"\n" + tail,
                         "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr);
    ADD_FAILURE() << "a planning profile with a [planning] of its own was accepted";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what())
                  .find("key 'hardware.planning.preset': expected a profile whose components "
                        "plan with its own costs (no [planning]), found 'nested' with a "
                        "[planning] of its own"),
              std::string::npos)
        << err.what();
  }
}

// A table's context: on gpu-layer tables only, once per model, dtype and
// context, and a model's gpu-layer tables all by context or none.
TEST(ConfigErrors, TableContextsAreCheckedByKey) {
  const std::string head =
      "[suite]\nname = \"t\"\n[model]\npreset = \"mixtral-8x7b\"\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n";
  const std::string tail = "[[strategy]]\nname = \"s\"\n";
  auto table = [](const char* lane, const char* context) {
    return std::string("[[hardware.table]]\nlane = \"") + lane +
           "\"\ntokens = [1, 2]\ntime_us = [3, 4]\n" + context;
  };
  std::string e = load_error(head + table("gpu-expert", "context = 64\n") + tail);
  EXPECT_NE(e.find("key 'hardware.table[0].context': expected a context on gpu-layer tables "
                   "only, found context 64 on a gpu-expert table"),
            std::string::npos)
      << e;
  e = load_error(head + table("gpu-layer", "context = 64\n") +
                 table("gpu-layer", "context = 64\n") + tail);
  EXPECT_NE(e.find("key 'hardware.table[1].context': expected one gpu-layer table per model, "
                   "dtype and context, found context 64 again (table[0])"),
            std::string::npos)
      << e;
  e = load_error(head + table("gpu-layer", "context = 64\n") + table("gpu-layer", "") + tail);
  EXPECT_NE(e.find("key 'hardware.table[1].context': expected gpu-layer tables of one model and "
                   "dtype all by context or none"),
            std::string::npos)
      << e;
  e = load_error(head + table("gpu-layer", "context = 0\n") + tail);
  EXPECT_NE(e.find("hardware.table[0].context"), std::string::npos) << e;
}

// The calibration sequences' shape is checked like the run's own.
TEST(ConfigErrors, EmptyCalibrationSequencesAreRefused) {
  const std::string text = std::string(kHead) +
                           "[model]\npreset = \"mixtral-8x7b\"\n"
                           "[workload]\ncalibration_prompt_len = 0\ncalibration_decode_len = 0\n"
                           "[[strategy]]\nname = \"s\"\n";
  const std::string e = load_error(text);
  EXPECT_NE(e.find("key 'workload.calibration_decode_len': expected calibration_prompt_len + "
                   "calibration_decode_len >= 1, found 0 tokens in total"),
            std::string::npos)
      << e;
  const std::string negative = std::string(kHead) +
                               "[model]\npreset = \"mixtral-8x7b\"\n"
                               "[workload]\ncalibration_prompt_len = -3\n"
                               "[[strategy]]\nname = \"s\"\n";
  EXPECT_EQ(load_error(negative),
            "exp.toml:8:26: key 'workload.calibration_prompt_len': expected an integer in [0, "
            "1048576], found -3");
}

TEST(ConfigErrors, OutOfRangeNumberInNestedPresetOverride) {
  const std::string text = std::string(kHead) +
                           "cpu.gemm_efficiency = 1.5\n"
                           "[model]\npreset = \"mixtral-8x7b\"\n[[strategy]]\nname = \"s\"\n";
  EXPECT_EQ(
      load_error(text),
      "exp.toml:5:23: key 'hardware.cpu.gemm_efficiency': expected a number in (0, 1], found 1.5");
}

TEST(ConfigErrors, ChoiceTypoSuggests) {
  const std::string text = std::string(kHead) +
                           "[model]\npreset = \"mixtral-8x7b\"\nexpert_dtype = \"int3\"\n"
                           "[[strategy]]\nname = \"s\"\n";
  EXPECT_EQ(load_error(text),
            "exp.toml:7:16: key 'model.expert_dtype': expected one of 'bf16', 'fp16', 'int8', "
            "'int4', found 'int3'; did you mean 'int8'?");
}

TEST(ConfigErrors, PresetNameTypoSuggestsClosest) {
  const std::string text =
      std::string(kHead) + "[model]\npreset = \"mixtrl-8x7b\"\n[[strategy]]\nname = \"s\"\n";
  const std::string msg = load_error(text);
  EXPECT_EQ(msg.substr(0, 56), "exp.toml:6:10: key 'model.preset': expected a model pres");
  EXPECT_NE(msg.find("expected a model preset in configs/models/ (deepseek-v2-lite, deepseek-v2.5, "
                     "deepseek-v3, mixtral-8x7b, qwen2-57b-a14b, qwen3-235b-a22b, qwen3-30b-a3b, "
                     "tiny-deepseek, tiny-mixtral)"),
            std::string::npos);
  EXPECT_NE(msg.find("found 'mixtrl-8x7b'; did you mean 'mixtral-8x7b'?"), std::string::npos);
}

TEST(ConfigErrors, MissingPresetFile) {
  const std::string text =
      std::string(kHead) +
      "[model]\npreset = \"models/missing.toml\"\n[[strategy]]\nname = \"s\"\n";
  testing::TempDir dir;
  try {
    load_experiment_text(text, "exp.toml", dir.path(), ConfigPaths::defaults(), nullptr);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "exp.toml:6:10: key 'model.preset': expected an existing preset file (a regular "
              "file), found no such file at '" +
                  (dir.path() / "models/missing.toml").string() + "'");
  }
}

TEST(ConfigErrors, MissingExperimentFile) {
  testing::TempDir dir;
  try {
    load_experiment(dir / "none.toml", ConfigPaths::defaults(), nullptr);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "none.toml").string() +
                  ": expected a readable TOML file (a regular file), found no such file");
  }
}

TEST(ConfigErrors, TomlSyntaxError) {
  const std::string msg = load_error("[model]\npreset = \"x\n");
  EXPECT_EQ(msg.substr(0, 13), "exp.toml:2:12");  // the end of the unterminated line
  EXPECT_NE(msg.find(": expected valid TOML, found a syntax error ("), std::string::npos);
}

TEST(ConfigErrors, CrossFieldValidationPointsAtKey) {
  const std::string text =
      std::string(kHead) +
      "[model]\npreset = \"mixtral-8x7b\"\ntop_k = 9\n[[strategy]]\nname = \"s\"\n";
  EXPECT_EQ(
      load_error(text),
      "exp.toml:7:9: key 'model.top_k': expected an integer in [1, routed_experts = 8], found 9");
}

TEST(ConfigErrors, MissingRequiredSection) {
  EXPECT_EQ(load_error("[model]\npreset = \"mixtral-8x7b\"\n[[strategy]]\nname = \"s\"\n"),
            "exp.toml:1:1: key 'hardware': expected a [hardware] table (e.g. preset = "
            "\"hybrimoe-a6000\"), found none");
}

TEST(ConfigErrors, MissingStrategies) {
  EXPECT_EQ(load_error(std::string(kHead) + "[model]\npreset = \"mixtral-8x7b\"\n"),
            "exp.toml:1:1: key 'strategies': expected at least one strategy (strategies = [...] or "
            "[[strategy]] tables), found none");
}

TEST(ConfigErrors, UnknownTopLevelTable) {
  EXPECT_EQ(
      load_error("[modle]\npreset = \"x\"\n"),
      "exp.toml:1:2: key 'modle': expected a known top-level key or table (suite, model, hardware, "
      "workload, strategies, strategy, strategy_defaults), found unknown key 'modle'; did you mean "
      "'model'?");
}

TEST(ConfigErrors, EmptySweepAxis) {
  const std::string text = std::string(kHead) +
                           "[model]\npreset = \"mixtral-8x7b\"\n[workload]\nprompt_len = []\n"
                           "[[strategy]]\nname = \"s\"\n";
  EXPECT_EQ(load_error(text),
            "exp.toml:8:14: key 'workload.prompt_len': expected at least one value for this sweep "
            "axis, found an empty array");
}

TEST(ConfigErrors, ComponentKindTypoSuggests) {
  FakeCatalog cat;
  const std::string text =
      std::string(kHead) +
      "[model]\npreset = \"mixtral-8x7b\"\n[[strategy]]\nname = \"s\"\ncache = \"lrú\"\n";
  EXPECT_EQ(load_error(text, &cat),
            "exp.toml:9:9: key 'strategy.cache': expected a registered cache (lfu, lru), found "
            "'lrú'; did you mean 'lru'?");
}

TEST(ConfigErrors, ComponentUnknownParam) {
  FakeCatalog cat;
  const std::string text = std::string(kHead) +
                           "[model]\npreset = \"mixtral-8x7b\"\n[[strategy]]\nname = \"s\"\n"
                           "[strategy.cache]\nkind = \"lru\"\ncapacity_hnt = 2\n";
  EXPECT_EQ(load_error(text, &cat),
            "exp.toml:11:1: key 'strategy.cache.capacity_hnt': expected a known key of "
            "[strategy.cache], found unknown key 'capacity_hnt'; did you mean 'capacity_hint'?");
}

TEST(ConfigErrors, DuplicateCases) {
  const std::string text = std::string(kHead) +
                           "[model]\npreset = \"mixtral-8x7b\"\n[[strategy]]\nname = "
                           "\"s\"\n[[strategy]]\nname = \"s\"\n";
  const std::string msg = load_error(text);
  EXPECT_EQ(msg.substr(0, 63), "exp.toml:9:1: key 'strategy': expected distinct cases (every co");
  EXPECT_NE(msg.find("found strategy 's' twice with the same model, hardware and workload"),
            std::string::npos);
}

}  // namespace
}  // namespace moebench

namespace moebench {
namespace {

const char* kImplHead =
    "[suite]\nname = \"t\"\n"
    "[model]\npreset = \"mixtral-8x7b\"\n"
    "[hardware]\npreset = \"local-cpu\"\n";

TEST(ConfigErrors, ImplementationUnknownKey) {
  const std::string text =
      std::string(kImplHead) + "[[strategy]]\nname = \"s\"\nimplementation = { stak = \"x\" }\n";
  EXPECT_EQ(load_error(text),
            "exp.toml:9:20: key 'strategy.implementation.stak': expected a known key of "
            "[strategy.implementation], "
            "found unknown key 'stak'; did you mean 'stack'?");
}

TEST(ConfigErrors, CpuKernelEfficiencyOutOfRange) {
  const std::string text =
      std::string(kImplHead) +
      "[[hardware.cpu_kernel]]\nfamily = \"ggml\"\nbw_efficiency = -0.5\n"
      "evidence = \"assumption\"\nsource = \"x\"\n[[strategy]]\nname = \"s\"\n";
  EXPECT_EQ(load_error(text),
            "exp.toml:9:17: key 'hardware.cpu_kernel[0].bw_efficiency': expected -1 (unset) or a "
            "value in range, "
            "found -0.5");
}

TEST(ConfigErrors, CpuKernelEvidenceRequired) {
  const std::string text =
      std::string(kImplHead) +
      "[[hardware.cpu_kernel]]\nfamily = \"ggml\"\nbw_efficiency = 0.5\nsource = \"x\"\n"
      "[[strategy]]\nname = \"s\"\n";
  EXPECT_NE(load_error(text).find("key 'hardware.cpu_kernel[0].evidence': expected one of"),
            std::string::npos)
      << load_error(text);
}

TEST(ConfigErrors, StackGpuBandwidthEfficiencyOutOfRange) {
  const std::string text =
      std::string(kImplHead) +
      "[[hardware.stack]]\nname = \"a\"\ngpu_bw_efficiency = 1.5\nevidence = \"paper\"\n"
      "source = \"x\"\n[[strategy]]\nname = \"s\"\n";
  EXPECT_EQ(load_error(text),
            "exp.toml:9:21: key 'hardware.stack[0].gpu_bw_efficiency': expected a number in [-1, "
            "1], found 1.5")
      << load_error(text);
}

TEST(ConfigErrors, DuplicateStackName) {
  const std::string text =
      std::string(kImplHead) +
      "[[hardware.stack]]\nname = \"a\"\nevidence = \"paper\"\nsource = \"x\"\n"
      "[[hardware.stack]]\nname = \"a\"\nevidence = \"paper\"\nsource = \"y\"\n"
      "[[strategy]]\nname = \"s\"\n";
  EXPECT_EQ(load_error(text),
            "exp.toml:12:8: key 'hardware.stack[1].name': expected one entry per stack, "
            "found 'a' again (stack[0])");
}

// A fitted number describes one system's implementation as measured.
TEST(ConfigErrors, FittedEntryNamesTheSystemItWasMeasuredOn) {
  const std::string text = std::string(kImplHead) +
                           "[[hardware.stack]]\nname = \"a\"\nlayer_overhead_us = 10\nevidence = "
                           "\"fitted\"\nsource = \"x\"\n"
                           "[[strategy]]\nname = \"s\"\n";
  EXPECT_NE(load_error(text).find(
                "key 'hardware.stack[0].measured_on': expected the system whose measured times "
                "the fit describes (evidence = \"fitted\"), found none"),
            std::string::npos)
      << load_error(text);
  // An entry applies to every system on its stack: a second entry for another system is refused,
  // and a system that differs names its share of the host time.
  const std::string two = std::string(kImplHead) +
                          "[[hardware.stack]]\nname = \"a\"\nlayer_overhead_us = 10\nevidence = "
                          "\"fitted\"\nsource = \"x\"\n"
                          "measured_on = \"p\"\n"
                          "[[hardware.stack]]\nname = \"a\"\nlayer_overhead_us = 20\nevidence = "
                          "\"fitted\"\nsource = \"y\"\n"
                          "measured_on = \"q\"\n[[strategy]]\nname = \"s\"\n";
  EXPECT_NE(load_error(two).find("expected one entry per stack, found 'a' again"),
            std::string::npos)
      << load_error(two);
  const std::string stack = std::string(kImplHead) +
                            "[[hardware.stack]]\nname = \"a\"\nlayer_overhead_us = 10\nevidence = "
                            "\"fitted\"\nsource = \"x\"\nmeasured_on = \"p\"\n";
  EXPECT_NE(load_error(stack + "differs = [\"q\"]\n[[strategy]]\nname = \"s\"\n")
                .find("key 'hardware.stack[0].differs_share': expected the share of "
                      "layer_overhead_us the systems in differs pay, found none"),
            std::string::npos)
      << load_error(stack + "differs = [\"q\"]\n[[strategy]]\nname = \"s\"\n");
  EXPECT_NE(
      load_error(stack + "differs = [\"q\"]\ndiffers_share = -0.5\n[[strategy]]\nname = \"s\"\n")
          .find("key 'hardware.stack[0].differs_share': expected -1 (unset) or a value in "
                "range, found -0.5"),
      std::string::npos);
  EXPECT_EQ(
      load_error(stack + "differs = [\"q\"]\ndiffers_share = 0.5\n[[strategy]]\nname = \"s\"\n"),
      "<no error>");
  // One testbed default per dtype.
  const std::string k =
      "[[hardware.cpu_kernel]]\nevidence = \"paper\"\nsource = \"x\"\n"
      "testbed_default = true\n";
  EXPECT_NE(load_error(std::string(kImplHead) + k + "family = \"a\"\n" + k +
                       "family = \"b\"\n[[strategy]]\nname = \"s\"\n")
                .find("key 'hardware.cpu_kernel[1].testbed_default': expected one testbed "
                      "default per dtype, found a second for dtype '*'"),
            std::string::npos);
}

// A testbed's unknown (scripts/testbed-region): a range, and "solved" only for
// a key a calibration target fits.
TEST(ConfigErrors, TestbedUnknownRangeAndRole) {
  const std::string empty_range =
      std::string(kHead) +
      "[[hardware.unknown]]\nkey = \"link.h2d_gbps\"\nlow = 5.0\nhigh = 2.0\nsource = \"x\"\n"
      "[model]\npreset = \"mixtral-8x7b\"\n[[strategy]]\nname = \"s\"\n";
  EXPECT_NE(load_error(empty_range).find("high': expected a value above low (5), found 2"),
            std::string::npos)
      << load_error(empty_range);
  const std::string unfitted =
      std::string(kHead) +
      "[[hardware.unknown]]\nkey = \"link.h2d_gbps\"\nrole = \"solved\"\nlow = 5.0\nhigh = "
      "20.0\nsource = \"x\"\n"
      "[model]\npreset = \"mixtral-8x7b\"\n[[strategy]]\nname = \"s\"\n";
  EXPECT_NE(load_error(unfitted).find("role': expected 'sampled' for a key no [[calibration]] "
                                      "target fits, found 'solved' for 'link.h2d_gbps'"),
            std::string::npos)
      << load_error(unfitted);
}

}  // namespace
}  // namespace moebench
