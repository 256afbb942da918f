// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Every CUDA runtime and cuBLAS call goes through these: a failure throws
// moebench::Error naming the call as written, the file and line, and the
// library's own message, e.g.
//   CUDA call cudaMalloc(&p, bytes) failed (kernels/cuda/gpu_experts.cu:88):
//   out of memory [cudaErrorMemoryAllocation]
// Only .cu files include this (it needs the CUDA headers).

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "core/util/error.h"

namespace moebench::gpu {

[[noreturn]] void throw_cuda(cudaError_t e, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t s, const char* call, const char* file, int line);

}  // namespace moebench::gpu

#define MB_CUDA(call)                                                     \
  do {                                                                    \
    const cudaError_t mb_cuda_e_ = (call);                                \
    if (mb_cuda_e_ != cudaSuccess)                                        \
      ::moebench::gpu::throw_cuda(mb_cuda_e_, #call, __FILE__, __LINE__); \
  } while (0)

#define MB_CUBLAS(call)                                                       \
  do {                                                                        \
    const cublasStatus_t mb_cublas_s_ = (call);                               \
    if (mb_cublas_s_ != CUBLAS_STATUS_SUCCESS)                                \
      ::moebench::gpu::throw_cublas(mb_cublas_s_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: the launch's own error (bad configuration).
#define MB_CUDA_LAUNCHED(what) MB_CUDA(cudaPeekAtLastError())
