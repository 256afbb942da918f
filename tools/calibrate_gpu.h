// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPU half of `moebench calibrate`: on a profile with a GPU,
// measured on the GPU this process sees (kernels/cuda/gpu_experts.h):
//   [[table]] gpu-expert  one routed expert on the GPU by tokens, per model
//                         and dtype (event-timed, weights read from HBM:
//                         64 slots round-robin, more than the L2 holds)
//   [[table]] h2d-expert  one expert's copy into a slot from pinned host
//                         memory (tokens = 1: it does not depend on them);
//                         the blob is the kernels' format: int8 and int4
//                         carry an fp32 scale per 64 weights: 5% (int8) and
//                         9% (int4) more bytes than the model presets' fp16
//                         scale per 128 (bf16: the same bytes)
//   [link] h2d_gbps, d2h_gbps  the best pinned bandwidth over 16-256 MiB
//   [link] latency_us          a 4 KiB pinned copy
//   [gpu] model, mem_gib, kernel_launch_us (host enqueue cost of a launch)
//   [[table]] gpu-layer   a block's attention, norms and router
//                         (kernels/cuda/gpu_layer.h) by tokens, one table
//                         per context: each new token its own sequence up
//                         to 64 (a decode batch's shape; a prefill's tokens
//                         share their sequences' entries, so there the KV
//                         read is an upper bound), reading `context`
//                         entries of a KV cache in device memory
//   [[table]] gpu-shared, gpu-dense-ffn, gpu-lm-head  those tasks by tokens
//                         (bf16 weights: gpu-shared is kept for bf16 runs)
// (host-timed over back-to-back calls on rotating layers: what a step
// that launches them one after another sees, launches included), and, for
// the record (comments), the device's HBM read bandwidth and bf16 GEMM rate.

#include <sstream>
#include <string>
#include <vector>

#include "core/config/hardware_profile.h"

namespace moebench::tools {

struct GpuCalibrateOptions {
  std::vector<std::string> models;
  std::vector<std::string> dtypes;
  std::vector<int64_t> tokens = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  std::vector<int64_t> contexts = {1, 512, 2048, 8192};  // gpu-layer tables
  int repeats = 9;
  // Each table measured while the other lanes run (tools/calibrate_load.h):
  // GPU tables beside CPU experts and copies, h2d-expert beside CPU and GPU
  // experts. The CPU lane's threads and buffers:
  bool under_load = false;
  int cpu_threads = 1;
  double weights_gib = 2.0;
};

// Measures and writes the tables and fields above into `h`; comments for
// the profile's header go to `notes`. Throws moebench::Error naming what
// was found when no GPU can be used.
void calibrate_gpu(HardwareProfile& h, const GpuCalibrateOptions& opt, std::ostringstream& notes);

}  // namespace moebench::tools
