// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// moebench replay on a GPU (label gpu; skipped where no GPU is visible):
// a small graph run for real on both host-threading variants, and every
// dependency and every lane's order held in the real times.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "core/experiment/experiment.h"
#include "harness/backend/gpu_replay.h"
#include "kernels/cuda/gpu_experts.h"

namespace moebench {
namespace {

// A layer's worth of lanes: attention on the GPU, a demand load and the GPU
// expert waiting for it, activations to the CPU, two CPU experts, the
// activations back, then the next step's attention waiting for all.
const char* kGraph = R"({"traceEvents": [
  {"cat": "attention", "ph": "X", "tid": 1, "ts": 0, "dur": 200, "args": {"step": 0, "layer": 1, "task": 1}},
  {"cat": "demand-load", "ph": "X", "tid": 0, "ts": 200, "dur": 400,
   "args": {"step": 0, "layer": 1, "expert": 3, "copy": 7}},
  {"cat": "act-to-cpu", "ph": "X", "tid": 3, "ts": 200, "dur": 10,
   "args": {"step": 0, "layer": 1, "tokens": 1, "task": 2, "waits": [1]}},
  {"cat": "cpu-expert", "ph": "X", "tid": 2, "ts": 210, "dur": 300,
   "args": {"step": 0, "layer": 1, "expert": 5, "tokens": 1, "task": 3, "waits": [2]}},
  {"cat": "cpu-expert", "ph": "X", "tid": 2, "ts": 510, "dur": 300,
   "args": {"step": 0, "layer": 1, "expert": 6, "tokens": 1, "task": 4, "waits": [2]}},
  {"cat": "gpu-expert", "ph": "X", "tid": 1, "ts": 600, "dur": 20,
   "args": {"step": 0, "layer": 1, "expert": 3, "tokens": 1, "task": 5, "waits": [1], "copy": 7}},
  {"cat": "act-to-gpu", "ph": "X", "tid": 4, "ts": 810, "dur": 10,
   "args": {"step": 0, "layer": 1, "tokens": 1, "task": 6, "waits": [4]}},
  {"cat": "attention", "ph": "X", "tid": 1, "ts": 820, "dur": 200,
   "args": {"step": 1, "layer": 1, "task": 7, "waits": [5, 6]}}
]})";

TEST(ReplayOnGpu, EveryDependencyAndLaneOrderHoldsInTheRealRun) {
  if (!gpu::available()) GTEST_SKIP() << gpu::describe_device();
  const auto path = std::filesystem::temp_directory_path() / "replay-gpu-test.json";
  std::ofstream(path) << kGraph;
  ReplayOptions opt;
  opt.model = load_model("deepseek-v2-lite", ConfigPaths::defaults());
  opt.threads = 2;
  opt.weights_gib = 0.1;
  opt.max_tokens = 8;
  for (bool one : {false, true}) {
    opt.one_launcher = one;
    ReplayMachine machine(opt);
    ReplayGraph g = load_replay_graph(path.string());
    build_replay_deps(g);
    machine.run(g);
    // Host and GPU clocks are aligned once at the start: allow 50 us.
    const double tol = 50.0;
    std::map<int, double> lane_end;
    for (size_t i = 0; i < g.tasks.size(); ++i) {
      const ReplayTask& t = g.tasks[i];
      EXPECT_GE(t.real_end_us, t.real_start_us) << t.kind;
      for (size_t d : t.deps) {
        EXPECT_GE(t.real_start_us, g.tasks[d].real_end_us - tol)
            << t.kind << " started before " << g.tasks[d].kind << " ended (one launcher: " << one
            << ")";
      }
      if (lane_end.count(t.lane)) {
        EXPECT_GE(t.real_start_us, lane_end[t.lane] - tol) << t.kind;
      }
      lane_end[t.lane] = t.real_end_us;
    }
    // The placeholders last at least their simulated time (attention: 200 us).
    EXPECT_GE(g.tasks[0].real_end_us - g.tasks[0].real_start_us, 190.0);
    const auto s = replay_summary(g);
    EXPECT_GT(s["steps_real_us"].get<double>(), 0.0);
    EXPECT_GT(s["steps_composed_us"].get<double>(), 0.0);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace moebench
