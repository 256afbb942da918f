// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Small device helpers the GPU modules share (gpu_experts.cu, gpu_layer.cu):
// warp and block reductions, the SiLU-multiply of an FFN, a grid-stride
// launch size and a checked device allocation. Internal to each .cu file
// that includes it (an anonymous namespace: no relocatable device code).

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/cuda_check.h"

namespace moebench::gpu {
namespace {

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  return warp_reduce(v, SumOp{});
}

// Over the block (blockDim.x a multiple of 32, at most 1024; every thread
// calls it); `red` holds 32 floats. Every thread gets the result.
template <class Op>
__device__ float block_reduce(float v, float* red, float identity, Op op) {
  v = warp_reduce(v, op);
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) red[w] = v;
  __syncthreads();
  v = lane < int(blockDim.x / 32) ? red[lane] : identity;
  return warp_reduce(v, op);  // every warp reduces the partials
}
__device__ float block_sum(float v, float* red) {
  return block_reduce(v, red, 0.0f, SumOp{});
}
__device__ float block_max(float v, float* red) {
  return block_reduce(v, red, -INFINITY, MaxOp{});
}

// gu [tokens x 2 inter] (gate columns, then up) -> h = bf16(silu(g) * u).
__global__ void silu_mul_kernel(const float* gu, int64_t tokens, int64_t inter, __nv_bfloat16* h) {
  const int64_t n = tokens * inter;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / inter, k = i % inter;
    const float g = gu[t * 2 * inter + k], u = gu[t * 2 * inter + inter + k];
    h[i] = __float2bfloat16_rn(g / (1.0f + expf(-g)) * u);
  }
}

// Blocks of 256 threads for a grid-stride loop over n items (at least one, at most 4096).
dim3 grid_for(int64_t n) {
  return dim3(unsigned(std::max<int64_t>(1, std::min<int64_t>((n + 255) / 256, 4096))));
}

template <class T>
T* device_alloc(int64_t count) {
  void* p = nullptr;
  MB_CUDA(cudaMalloc(&p, size_t(std::max<int64_t>(count, 1)) * sizeof(T)));
  return static_cast<T*>(p);
}

}  // namespace
}  // namespace moebench::gpu
