// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Build without CUDA (or without cuBLAS): the GPU layer cannot run; its
// constructor throws moebench::Error saying so (kernels/cuda/gpu_layer.h).
#include "core/util/error.h"
#include "kernels/cuda/gpu_experts.h"
#include "kernels/cuda/gpu_layer.h"

namespace moebench::gpu {

struct GpuLayer::Impl {};

GpuLayer::GpuLayer(const Options&, void*) {
  throw Error("GPU layer: expected a build with CUDA, cuBLAS and a GPU, found " +
              describe_device());
}
GpuLayer::~GpuLayer() = default;
// Unreachable: no GpuLayer can be made.
const GpuLayer::Options& GpuLayer::options() const {
  throw Error("GPU layer: not built");
}
int64_t GpuLayer::device_bytes() const {
  return 0;
}
void GpuLayer::attention(int, int64_t, int64_t, int64_t) {}
void GpuLayer::shared_experts(int, int64_t) {}
void GpuLayer::dense_ffn(int, int64_t) {}
void GpuLayer::lm_head(int64_t) {}
void GpuLayer::synchronize() {}
std::vector<int32_t> GpuLayer::last_routing() {
  return {};
}
std::vector<float> GpuLayer::last_attention_output() {
  return {};
}
std::vector<float> GpuLayer::last_queries() {
  return {};
}
std::vector<float> GpuLayer::cached_entries(int, int64_t, int64_t) {
  return {};
}

}  // namespace moebench::gpu
