// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "kernels/cuda/gpu_query.h"

#include <cuda_runtime.h>

namespace moebench {

GpuQuery query_gpus() {
  GpuQuery q;
  q.cuda_compiled = true;
  q.cuda_compiled_version = CUDART_VERSION;
  cudaRuntimeGetVersion(&q.cuda_runtime_version);
  if (cudaDriverGetVersion(&q.cuda_driver_version) != cudaSuccess) q.cuda_driver_version = 0;
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    q.note = cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky error
    return q;
  }
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    GpuDesc d;
    d.index = i;
    d.name = p.name;
    d.sm_major = p.major;
    d.sm_minor = p.minor;
    d.mem_bytes = static_cast<int64_t>(p.totalGlobalMem);
    d.sm_count = p.multiProcessorCount;
    q.gpus.push_back(d);
  }
  if (q.gpus.empty()) q.note = "no CUDA devices";
  return q;
}

}  // namespace moebench
