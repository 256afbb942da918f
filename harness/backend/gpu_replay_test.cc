// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Reading a timeline back as a task graph (runs everywhere); running it
// needs a GPU (the device machine: scripts/gpu-session.sh).
#include "harness/backend/gpu_replay.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/util/error.h"

namespace moebench {
namespace {

std::string write_tmp(const std::string& name, const std::string& text) {
  const auto p =
      std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << text;
  return p.string();
}

// Lanes: 0 h2d, 1 gpu, 2 cpu. Attention (task 1), a copy (transfer 7) and
// a GPU expert waiting for both, a CPU expert starting when attention ends
// (no recorded wait: the graph says it through the time), a step-1 task.
const char* kTimeline = R"({"traceEvents": [
  {"name": "thread_name", "ph": "M", "pid": 0, "tid": 1, "args": {"name": "gpu"}},
  {"name": "att", "cat": "attention", "ph": "X", "pid": 0, "tid": 1, "ts": 0.0, "dur": 10.0,
   "args": {"step": 0, "layer": 0, "task": 1}},
  {"name": "copy", "cat": "demand-load", "ph": "X", "pid": 0, "tid": 0, "ts": 2.0, "dur": 30.0,
   "args": {"step": 0, "layer": 0, "expert": 3, "copy": 7}},
  {"name": "cpu", "cat": "cpu-expert", "ph": "X", "pid": 0, "tid": 2, "ts": 10.0, "dur": 50.0,
   "args": {"step": 0, "layer": 0, "expert": 5, "tokens": 1, "task": 3}},
  {"name": "gx", "cat": "gpu-expert", "ph": "X", "pid": 0, "tid": 1, "ts": 32.0, "dur": 5.0,
   "args": {"step": 0, "layer": 0, "expert": 3, "tokens": 1, "task": 2, "waits": [1], "copy": 7}},
  {"name": "att", "cat": "attention", "ph": "X", "pid": 0, "tid": 1, "ts": 60.0, "dur": 10.0,
   "args": {"step": 1, "layer": 0, "task": 4, "waits": [2, 3]}}
]})";

TEST(Replay, TheTimelineBecomesAGraphInSimulatedOrder) {
  const std::string path = write_tmp("replay", kTimeline);
  ReplayGraph g = load_replay_graph(path);
  build_replay_deps(g);
  ASSERT_EQ(g.tasks.size(), 5u);
  std::vector<std::string> kinds;
  for (const auto& t : g.tasks) kinds.push_back(t.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"attention", "demand-load", "cpu-expert", "gpu-expert",
                                             "attention"}));
  // The GPU expert waits for attention (recorded) and its copy (args.copy,
  // also ended when it started).
  EXPECT_EQ(g.tasks[3].deps, (std::vector<size_t>{0, 1}));
  // The CPU expert: for attention, which ended when it started.
  EXPECT_EQ(g.tasks[2].deps, (std::vector<size_t>{0}));
  // Step 1's attention: both recorded waits, the CPU expert also by time.
  EXPECT_EQ(g.tasks[4].deps, (std::vector<size_t>{3, 2}));
  EXPECT_TRUE(g.tasks[3].real);   // the GPU expert runs for real
  EXPECT_FALSE(g.tasks[0].real);  // an attention without its context is a placeholder
  EXPECT_TRUE(g.tasks[1].real);   // the copy runs for real
  // A step range keeps that step's tasks.
  EXPECT_EQ(load_replay_graph(path, 1, 1).tasks.size(), 1u);
  std::filesystem::remove(path);
}

TEST(Replay, TheRestOfALayerRunsForRealWhereTheTimelineSaysEnough) {
  auto task = [](int lane, const char* kind, int64_t tokens, int64_t seqs = -1,
                 int64_t context = -1) {
    ReplayTask t;
    t.lane = lane;
    t.kind = kind;
    t.tokens = tokens;
    t.sequences = seqs;
    t.context = context;
    return t;
  };
  EXPECT_TRUE(runs_for_real(task(1, "attention", 8, 8, 40)));
  EXPECT_FALSE(runs_for_real(task(1, "attention", 8)));         // an older timeline, or the GPU
                                                                // parts of an attention on the CPU
  EXPECT_FALSE(runs_for_real(task(2, "attention", 8, 8, 40)));  // on the CPU lane
  EXPECT_TRUE(runs_for_real(task(1, "shared-experts", 8)));
  EXPECT_TRUE(runs_for_real(task(2, "shared-experts", 8)));
  EXPECT_TRUE(runs_for_real(task(1, "dense-ffn", 8)));
  EXPECT_TRUE(runs_for_real(task(1, "lm-head", 8)));
  EXPECT_FALSE(runs_for_real(task(1, "lm-head", -1)));  // tokens unknown
  EXPECT_FALSE(runs_for_real(task(1, "predict", 8)));   // a predictor's own work
  EXPECT_TRUE(runs_for_real(task(1, "gpu-expert", 4)));
  EXPECT_FALSE(runs_for_real(task(3, "act-to-cpu", 0)));
}

TEST(Replay, TheSummaryComparesRealWithSimulatedPerStepAndKind) {
  const std::string path = write_tmp("replay-sum", kTimeline);
  ReplayGraph g = load_replay_graph(path);
  std::filesystem::remove(path);
  build_replay_deps(g);
  for (auto& t : g.tasks) {  // as if every task took 10% longer, from the same start
    t.real_start_us = t.sim_start_us * 1.1;
    t.real_end_us = t.sim_end_us * 1.1;
  }
  const auto s = replay_summary(g);
  EXPECT_NEAR(s["end_to_end_error"].get<double>(), 0.1, 1e-9);
  // The composition of the real durations gives the real run here: every
  // task started when its lane and its dependencies let it (the copy, with
  // nothing to wait for, at 0 instead of 2.2; step 0 still ends at 66).
  EXPECT_NEAR(s["steps_composed_us"].get<double>(), 77.0, 1e-9);
  EXPECT_NEAR(s["composition_error"].get<double>(), 0.0, 1e-9);
  EXPECT_NEAR(s["table_error"].get<double>(), 0.1, 1e-9);
  // A real run that waited 20 us more somewhere the graph does not say: the
  // composition error sees it, the table error does not.
  g.tasks[4].real_start_us += 20;
  g.tasks[4].real_end_us += 20;
  const auto late = replay_summary(g);
  EXPECT_NEAR(late["composition_error"].get<double>(), 20.0 / 77.0, 1e-9);
  EXPECT_NEAR(late["table_error"].get<double>(), 0.1, 1e-9);
  EXPECT_EQ(s["per_step"].size(), 2u);
  EXPECT_NEAR(s["per_step"][0]["sim_us"].get<double>(), 60.0, 1e-9);  // 0 .. 60
  bool found = false;
  for (const auto& k : s["per_kind"]) {
    if (k["kind"] == "cpu-expert (cpu)") {
      found = true;
      EXPECT_EQ(k["run"], "real");
      EXPECT_NEAR(k["real_over_sim"].get<double>(), 1.1, 1e-9);
    }
  }
  EXPECT_TRUE(found);
}

TEST(Replay, TheRealRunIsWrittenAsATimelineBesideTheSimulatedOne) {
  const std::string path = write_tmp("replay-json", kTimeline);
  ReplayGraph g = load_replay_graph(path);
  std::filesystem::remove(path);
  build_replay_deps(g);
  for (auto& t : g.tasks) {
    t.real_start_us = t.sim_start_us + 1;
    t.real_end_us = t.sim_end_us + 3;
  }
  const auto j = nlohmann::json::parse(replay_chrome_json(g, "r"));
  int lanes = 0, tasks = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M") {
      ++lanes;
      continue;
    }
    ++tasks;
    EXPECT_NEAR(e["dur"].get<double>(), e["args"]["sim_dur_us"].get<double>() + 2, 1e-9);
    EXPECT_NEAR(e["ts"].get<double>(), e["args"]["sim_start_us"].get<double>() + 1, 1e-9);
  }
  EXPECT_EQ(lanes, 5);
  EXPECT_EQ(tasks, 5);
  EXPECT_EQ(j["traceEvents"][5 + 3]["name"], "gpu-expert L0 E3");
  EXPECT_EQ(j["traceEvents"][5 + 3]["args"]["run"], "real");
  EXPECT_EQ(j["traceEvents"][5]["args"]["run"], "placeholder");
}

TEST(Replay, BadTimelinesAreRefusedByName) {
  const std::string bad = write_tmp("replay-bad", "{\"traceEvents\": 5}");
  try {
    load_replay_graph(bad);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected a Chrome timeline with a traceEvents array"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(bad);
  const std::string lane = write_tmp(
      "replay-lane",
      R"({"traceEvents": [{"cat": "attention", "ph": "X", "tid": 9, "ts": 0, "dur": 1, "args": {}}]})");
  try {
    load_replay_graph(lane);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("traceEvents[0]: tid: expected a lane 0 to 4, found 9"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(lane);
  // A task kind that is not in the engine's table (core/engine/lanes.cc) is refused with the kinds.
  const std::string kind = write_tmp(
      "replay-kind",
      R"({"traceEvents": [{"cat": "gpu-magic", "ph": "X", "tid": 1, "ts": 0, "dur": 1, "args": {}}]})");
  try {
    load_replay_graph(kind);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("traceEvents[0]: cat: expected a task kind (attention, "
                                         "dense-ffn, "),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("kv-to-gpu), found 'gpu-magic'"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(kind);
  // Copies the replay cannot reproduce with whole experts (a reduced-precision
  // copy, a copy with a write-back) are refused by name.
  for (const char* flag : {"reduced", "writeback"}) {
    const std::string f = write_tmp(
        std::string("replay-") + flag,
        std::string(R"({"traceEvents": [{"cat": "demand-load", "ph": "X", "pid": 0, "tid": 0,
          "ts": 0, "dur": 1, "args": {"step": 0, "layer": 2, "expert": 5, "copy": 1, ")") +
            flag + R"(": true}}]})");
    try {
      load_replay_graph(f);
      FAIL() << "accepted " << flag;
    } catch (const Error& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("traceEvents[0]: demand-load (step 0, layer 2, expert 5): expected "
                       "whole-expert host-to-device copies"),
                std::string::npos)
          << w;
      EXPECT_NE(w.find(std::string(flag) == "reduced" ? "reduced_copy_ratio" : "writeback = true"),
                std::string::npos)
          << w;
    }
    std::filesystem::remove(f);
  }
  // A KV-cache copy on the host-to-device lane (attention on the GPU over a
  // host KV cache) is not an expert copy: refused by name.
  const std::string kv =
      write_tmp("replay-kv", R"({"traceEvents": [{"cat": "kv-to-gpu", "ph": "X", "pid": 0, "tid": 0,
        "ts": 0, "dur": 1, "args": {"step": 0, "layer": 1, "copy": 1}}]})");
  try {
    load_replay_graph(kv);
    FAIL() << "accepted a KV copy";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("traceEvents[0]: kv-to-gpu (step 0, layer 1): expected "
                                         "expert copies on the host-to-device lane, found a "
                                         "KV-cache copy"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(kv);
  const std::string empty = write_tmp("replay-empty", kTimeline);
  EXPECT_THROW(load_replay_graph(empty, 5, 6), Error);  // no tasks in those steps
  std::filesystem::remove(empty);
  EXPECT_THROW(load_replay_graph("/nonexistent/timeline.json"), Error);
}

}  // namespace
}  // namespace moebench
