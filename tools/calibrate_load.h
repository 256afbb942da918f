// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The other lanes kept busy while a table is measured (moebench calibrate
// --under-load): a run's tasks take longer than their idle tables say
// (docs/GPU.md: GPU experts 1.20-1.34x inside a replay, CPU experts
// 1.14-1.42x, small copies 3.3x), and a table measured under the load of
// the lanes that run beside it carries that into the simulation without a
// fitted term. Each lane is one host thread that submits until stopped:
//   cpu   routed experts of one token on the real backend's CPU kernels and
//         threads (what the CPU lane runs beside a GPU table)
//   link  whole-expert copies from pinned host memory into a ring of device
//         slots (what the H2D link carries beside either)
//   gpu   routed experts on the GPU from those slots (what the GPU runs
//         beside a CPU table; its launching thread is this lane's)
// The GPU lanes queue at most a few tasks ahead (a host wait every 8), as
// a run's launching threads do.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/config/model_spec.h"

namespace moebench::tools {

class LaneLoad {
 public:
  struct Options {
    ModelSpec model;  // the experts' shape and dtype
    bool cpu = false, link = false, gpu = false;
    int threads = 1;           // the CPU lane's kernel threads
    double weights_gib = 0.5;  // the CPU lane's expert buffers (more than the caches hold)
  };
  // Starts the lanes asked for. Throws moebench::Error naming the lane when
  // link or gpu is asked for and no GPU can be used.
  explicit LaneLoad(const Options& o);
  ~LaneLoad();  // stops
  LaneLoad(const LaneLoad&) = delete;
  LaneLoad& operator=(const LaneLoad&) = delete;

  struct Counts {
    int64_t cpu_tasks = 0, copies = 0, gpu_tasks = 0;
  };
  // Stops every lane and waits for its thread; what each did. The first
  // error a lane met is thrown here (moebench::Error).
  Counts stop();
  // "cpu (2 threads), link" for the profile's notes.
  std::string describe() const;

  struct State;

 private:
  std::unique_ptr<State> st_;
};

}  // namespace moebench::tools
