// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPU half of `moebench calibrate` (issue 42): on a profile with a GPU,
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
// and, for the record (comments), the device's HBM read bandwidth and bf16
// GEMM rate. Attention and the rest of a layer (gpu-layer) are not measured
// yet: the profile's roofline stays for them.

#include <sstream>
#include <string>
#include <vector>

#include "core/config/hardware_profile.h"

namespace moebench::tools {

struct GpuCalibrateOptions {
  std::vector<std::string> models;
  std::vector<std::string> dtypes;
  std::vector<int64_t> tokens = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  int repeats = 9;
};

// Measures and writes the tables and fields above into `h`; comments for
// the profile's header go to `notes`. Throws moebench::Error naming what
// was found when no GPU can be used.
void calibrate_gpu(HardwareProfile& h, const GpuCalibrateOptions& opt, std::ostringstream& notes);

}  // namespace moebench::tools
