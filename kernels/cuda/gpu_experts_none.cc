// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Build without CUDA (or without cuBLAS): no GPU can be used; every entry point that needs one
// throws moebench::Error saying so (kernels/cuda/gpu_experts.h).
#include "kernels/cuda/gpu_experts.h"

#include "core/util/error.h"
#include "kernels/cuda/gpu_query.h"

namespace moebench::gpu {

namespace {
std::string why() {
  const std::string note = query_gpus().note;
  return note.empty() ? "a build with CUDA but without cuBLAS" : note;
}
[[noreturn]] void no_cuda(const char* what) {
  throw Error(std::string(what) + ": expected a build with CUDA, cuBLAS and a GPU, found " + why());
}
}  // namespace

bool available() {
  return false;
}
std::string describe_device() {
  return "no GPU: " + why();
}
std::shared_ptr<uint8_t> pinned_bytes(int64_t) {
  no_cuda("pinned host memory");
}

struct GpuExperts::Impl {};
GpuExperts::GpuExperts(const Options&) {
  no_cuda("GPU experts");
}
GpuExperts::~GpuExperts() = default;
const ExpertBlob& GpuExperts::blob() const {
  no_cuda("GPU experts");
}
int GpuExperts::slots() const {
  no_cuda("GPU experts");
}
int64_t GpuExperts::device_bytes() const {
  no_cuda("GPU experts");
}
void GpuExperts::load(int, const uint8_t*) {
  no_cuda("GPU experts");
}
void GpuExperts::put_activations(const float*, const float*, const float*, int64_t) {
  no_cuda("GPU experts");
}
void GpuExperts::compute(int, int64_t, bool) {
  no_cuda("GPU experts");
}
void GpuExperts::get_output(float*, int64_t) {
  no_cuda("GPU experts");
}
void GpuExperts::synchronize() {
  no_cuda("GPU experts");
}
void* GpuExperts::stream(Lane) {
  no_cuda("GPU experts");
}
int GpuExperts::record(Lane) {
  no_cuda("GPU experts");
}
double GpuExperts::elapsed_ms(int, int) {
  no_cuda("GPU experts");
}
void GpuExperts::clear_events() {
  no_cuda("GPU experts");
}
void GpuExperts::wait(Lane, int) {
  no_cuda("GPU experts");
}
void GpuExperts::host_wait(int) {
  no_cuda("GPU experts");
}
void GpuExperts::spin(Lane, double) {
  no_cuda("GPU experts");
}
void GpuExperts::copy(Lane, int64_t) {
  no_cuda("GPU experts");
}
std::vector<CopyPoint> measure_copies(const std::vector<int64_t>&, int) {
  no_cuda("GPU copy probe");
}
LaunchCost measure_launch(int) {
  no_cuda("GPU launch probe");
}
double measure_hbm_read_gbps(int64_t, int) {
  no_cuda("GPU bandwidth probe");
}
double measure_gemm_tflops(int64_t, int) {
  no_cuda("GPU GEMM probe");
}

}  // namespace moebench::gpu
