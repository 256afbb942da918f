// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The other lanes' load of calibrate --under-load: the CPU lane runs here;
// the link and GPU lanes need a GPU and say so where there is none (their
// run is part of the device session, scripts/gpu-session.sh).
#include "tools/calibrate_load.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/experiment/experiment.h"
#include "core/util/error.h"
#include "kernels/cuda/gpu_experts.h"

namespace moebench::tools {
namespace {

LaneLoad::Options tiny(bool cpu, bool link, bool gpu) {
  LaneLoad::Options o;
  o.model = load_model("tiny-mixtral", ConfigPaths::defaults());
  o.cpu = cpu;
  o.link = link;
  o.gpu = gpu;
  o.weights_gib = 0.01;
  return o;
}

TEST(LaneLoad, TheCpuLaneRunsUntilStoppedAndSaysWhatItDid) {
  LaneLoad load(tiny(true, false, false));
  EXPECT_EQ(load.describe(), "cpu (1 threads)");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const LaneLoad::Counts c = load.stop();
  EXPECT_GT(c.cpu_tasks, 0);
  EXPECT_EQ(c.copies, 0);
  EXPECT_EQ(c.gpu_tasks, 0);
  // Stopped: nothing runs any more.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(load.stop().cpu_tasks, c.cpu_tasks);
}

TEST(LaneLoad, TheGpuSideLanesNeedAGpu) {
  if (gpu::available()) {
    LaneLoad load(tiny(false, true, true));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const LaneLoad::Counts c = load.stop();
    EXPECT_GT(c.copies, 0);
    EXPECT_GT(c.gpu_tasks, 0);
    return;
  }
  try {
    LaneLoad load(tiny(true, true, false));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("calibrate --under-load: the link lane expected a CUDA "
                                         "device, found"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace moebench::tools
