// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Build without CUDA: there is no way to see a GPU, and the manifest says so.
#include "kernels/cuda/gpu_query.h"

namespace moebench {

GpuQuery query_gpus() {
  GpuQuery q;
  q.note = "moebench was built without CUDA (nvcc not found or MOEBENCH_CUDA=OFF)";
  return q;
}

}  // namespace moebench
