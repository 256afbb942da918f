// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// moebench replay: a simulated case's task graph, read back from
// its Chrome timeline, run for real on a GPU machine with every lane at
// once, and each task's real start and end set beside the simulated ones.
//
// What runs for real: routed experts on the GPU (kernels/cuda/gpu_experts.h,
// from a slot its copy filled or a resident slot), expert copies on the
// H2D stream (pinned host to a device slot, a ring of 512 slots: a copy
// into a slot waits for the last expert that read it), activations on the D2H and
// act-H2D streams (tokens x hidden bf16 bytes), routed and shared experts
// on the CPU (the real backend's kernels and thread pool), and the rest of
// a layer on the GPU (kernels/cuda/gpu_layer.h: an attention task that the
// timeline gives its sequences and context, with norms and router, over a
// KV cache in device memory; the shared experts; a dense layer's FFN; the
// lm head). What stands in for work not implemented for real: a
// predictor's extra GPU work, the GPU parts of an attention run on the CPU
// (residency.attention = "cpu") and an attention of an older timeline
// without its context run as a GPU kernel that keeps the stream busy for
// the simulated duration ("placeholder"), so their dependencies and their
// place on the stream are real and their duration is the model's. Counts
// above the machine's buffers run at the most they hold (ReplayOptions).
//
// Dependencies: each task waits for its lane's earlier tasks (stream or
// thread order), for the tasks the timeline's graph names (args.waits),
// for its own copy (args.copy) and for every task that ended exactly when
// it started in the simulation (what set its start, copies and tasks the
// graph does not name included). One host thread per lane submits in the
// simulated order: GPU-side lanes enqueue with CUDA events, the CPU lane
// runs its experts; a wait across the host/GPU boundary is an event
// synchronisation or a flag (or all GPU-side lanes from one thread:
// ReplayOptions::one_launcher). Real times are on the GPU's event clock and
// the host's steady clock, aligned once at the start (a few microseconds).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/model_spec.h"

namespace moebench {

struct ReplayTask {
  int lane = 0;  // core/engine/lanes.h Lane: 0 h2d, 1 gpu, 2 cpu, 3 d2h, 4 h2d-act
  std::string kind;
  double sim_start_us = 0, sim_end_us = 0;
  int64_t step = -1;
  int32_t layer = -1, expert = -1;
  int64_t tokens = -1, task = -1, copy = -1;
  int64_t sequences = -1, context = -1;  // an attention whole on the GPU (args), -1: unknown
  std::vector<int64_t> waits;            // task ids (args.waits)
  std::vector<size_t> deps;              // indices into the graph's tasks (build_replay_deps)
  bool real = false;  // run for real; false: a placeholder of the simulated duration
  double real_start_us = 0, real_end_us = 0;
};

struct ReplayGraph {
  std::vector<ReplayTask> tasks;  // in simulated start order
};

// Reads a Chrome timeline written by run_suite ([suite] timeline = true)
// and keeps the tasks of steps first_step..last_step (-1: no bound).
// Throws moebench::Error naming the file and what is wrong.
ReplayGraph load_replay_graph(const std::string& path, int64_t first_step = -1,
                              int64_t last_step = -1);
// Whether a task runs for real (above) or as a placeholder.
bool runs_for_real(const ReplayTask& t);
// Fills every task's deps (see above) and which tasks run for real.
void build_replay_deps(ReplayGraph& g);

struct ReplayOptions {
  ModelSpec model;    // the expert shapes and dtype the case ran
  int threads = 1;    // CPU expert threads
  int spin_us = 200;  // their idle polling before sleeping (RealCpuOptions::spin_us)
  // One host thread submits every GPU-side lane's tasks in the simulated
  // order (as a system with one launching thread does: a wait for a CPU
  // expert holds back the GPU work behind it), instead of one thread per
  // lane.
  bool one_launcher = false;
  double weights_gib = 2.0;
  int64_t max_tokens = 512;  // GPU tasks of more tokens run as this many
  // An attention over more sequences or a longer context runs at these
  // (the KV cache's size: rings x sequences x context entries).
  int64_t max_sequences = 64, max_context = 4096;
};

// This machine's GPU and CPU set up for one model's experts (the slot
// pool and pinned blobs, the CPU weight buffers: seconds), then any number
// of graphs of that model run on it.
class ReplayMachine {
 public:
  // Throws moebench::Error when no GPU can be used.
  explicit ReplayMachine(const ReplayOptions& opt);
  ~ReplayMachine();
  // Runs the graph; fills real_start_us and real_end_us (from the first
  // task's start).
  void run(ReplayGraph& g);
  struct State;

 private:
  std::unique_ptr<State> st_;
};

// The real run's own task durations put through the graph the replay
// enforces (each lane in order, every dependency), with nothing else: no
// host hand-offs, no contention. Each task's composed end (and start).
std::vector<double> composed_ends(const ReplayGraph& g, std::vector<double>* starts = nullptr);

// Per step: the simulated, composed and real time (from the previous step's
// last end, or the first start, to the step's last end); per task kind: simulated and real busy
// time. Totals over the steps and three errors (the whole-step validation's split):
//   end_to_end_error   real / simulated - 1
//   table_error        composed / simulated - 1 (the task durations and
//                      what the graph leaves out of the simulation)
//   composition_error  real / composed - 1 (what running the lanes at once
//                      costs that the composition does not see)
nlohmann::ordered_json replay_summary(const ReplayGraph& g);
// The real run as a Chrome timeline (one thread per lane, real times).
std::string replay_chrome_json(const ReplayGraph& g, const std::string& title);

}  // namespace moebench
