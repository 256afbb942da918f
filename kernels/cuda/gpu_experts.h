// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Routed experts on the GPU: a slot pool in device memory that
// expert weights are copied into from pinned host memory, and the expert
// feed-forward of kernels/cpu/expert_ffn.h computed there,
//
//     out[t] += w[t] * down( silu(gate x_t) * (up x_t) ),
//
// on four CUDA streams, the lanes of the real executor:
//   compute  a few tokens: two fused matrix-vector kernels of our own (the
//            decode path, below); more: activations to bf16, the gate|up GEMM (cuBLAS, bf16 in,
//            fp32 accumulate and out), SiLU-multiply rounded to bf16 (as the CPU kernels round
//            their activations), the down GEMM, the weighted combine into `out` (kernels of our
//            own, gpu_experts.cu); int8 / int4 weights are first dequantised to bf16 by a kernel of
//            our own (one scale per kQuantGroup weights, as on the CPU)
//   h2d      expert loads into slots, in the order they are asked for
//   d2h      activations to the host (the CPU experts' inputs)
//   act-h2d  activations back from the host (the CPU experts' outputs)
// Every dependency is a CUDA event: a slot's compute waits for its load,
// and a load into a slot waits for the last compute that read it (the
// slot's previous user). Each expert is one contiguous blob (ExpertBlob)
// so a load is one cudaMemcpyAsync.
//
// Builds without CUDA compile a stub whose constructor throws
// moebench::Error ("built without CUDA"); gpu::available() says whether a
// device can be used at all.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/expert_ffn.h"

namespace moebench::gpu {

// A CUDA device is visible and the build has CUDA.
bool available();
// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB), driver 13000, runtime 13000" or why none.
std::string describe_device();

// One expert's weights as one blob: bf16 [gate | up | down] (uint16), or
// int8/int4 [gate codes | up codes | down codes | gate scales | up scales |
// down scales] in kernels/cpu/expert_ffn.h's format; sections 256-byte aligned.
struct ExpertBlob {
  ExpertShape shape;
  WeightDtype dtype = WeightDtype::kBf16;
  int64_t gate_up = 0, down = 0;              // offsets of the weights (codes)
  int64_t gate_up_scale = 0, down_scale = 0;  // offsets of the scales (quantised only)
  int64_t bytes = 0;
  static ExpertBlob of(ExpertShape s, WeightDtype d);
  // Writes e (row-major arrays, not released) into dst[0 .. bytes).
  void write(const ExpertWeights& e, uint8_t* dst) const;
};

// Up to decode_max_tokens(dtype) tokens an expert runs as two fused
// matrix-vector kernels of our own (the decode path, gpu_experts.cu) where
// hidden and inter are multiples of kQuantGroup; above, or for other
// shapes, as cuBLAS GEMMs and small kernels (the GEMM path). The switch is
// where the decode path stopped being faster on the lent H100 (2026-11-25,
// docs/GPU.md): bf16 18-30 us at 1-4 tokens against the GEMM path's 33-37,
// 48 at 8; int8 15-30 us at 1-4 and 51 at 8, level with the GEMM path.
inline constexpr int64_t kDecodeMaxTokens = 8;  // what the kernels hold
inline int64_t decode_max_tokens(WeightDtype d) {
  return d == WeightDtype::kBf16 ? 4 : 8;
}
inline bool uses_decode_path(const ExpertBlob& b, int64_t tokens) {
  return tokens <= decode_max_tokens(b.dtype) && b.shape.hidden % kQuantGroup == 0 &&
         b.shape.inter % kQuantGroup == 0;
}

// Page-locked host memory (cudaMallocHost), freed by the deleter.
std::shared_ptr<uint8_t> pinned_bytes(int64_t bytes);

class GpuExperts {
 public:
  struct Options {
    ExpertShape shape;
    WeightDtype dtype = WeightDtype::kBf16;
    int slots = 1;            // expert slots in device memory
    int64_t max_tokens = 64;  // activations sized for this many tokens
  };
  explicit GpuExperts(const Options& o);
  ~GpuExperts();
  GpuExperts(const GpuExperts&) = delete;
  GpuExperts& operator=(const GpuExperts&) = delete;

  const ExpertBlob& blob() const;
  int slots() const;
  int64_t device_bytes() const;  // slot pool and scratch

  // Asynchronous, in stream order:
  void load(int slot, const uint8_t* host_blob);  // h2d; host_blob pinned, blob().bytes
  // Activations in (h2d lane, the compute waits for them): x [tokens x hidden],
  // w [tokens], out [tokens x hidden] (what the expert accumulates into).
  void put_activations(const float* x, const float* w, const float* out, int64_t tokens);
  // compute lane: out += w * FFN(x). It waits for the slot's latest load
  // unless told not to (a caller that orders its own dependencies, such as
  // moebench replay, whose copy lane may already have queued a later load
  // into the same slot).
  void compute(int slot, int64_t tokens, bool wait_for_load = true);
  void get_output(float* out, int64_t tokens);  // d2h lane, after the compute so far
  void synchronize();                           // waits for every lane

  // Timing and dependencies: an event recorded on a lane now (a "mark");
  // ms between two marks (waits for the later one). kActH2D is a fourth
  // stream for activations coming back from the CPU (the engine's
  // act-h2d lane), apart from the expert loads.
  enum class Lane { kCompute, kH2D, kD2H, kActH2D };
  int record(Lane lane);
  // The lane's cudaStream_t (as void*: this header does not include CUDA's),
  // for work of another module in the lane's order (gpu_layer.h).
  void* stream(Lane lane);
  double elapsed_ms(int from, int to);
  void clear_events();
  // The lane's later work waits for a mark (cudaStreamWaitEvent).
  void wait(Lane lane, int mark);
  // The host waits for a mark (cudaEventSynchronize).
  void host_wait(int mark);
  // Work that stands for a task not run for real yet: a kernel that keeps
  // one thread busy for `us` microseconds (the GPU's own clock).
  void spin(Lane lane, double us);
  // `bytes` copied on the lane between pinned host and device scratch
  // (host to device on kH2D and kActH2D, device to host on kD2H).
  void copy(Lane lane, int64_t bytes);

  struct Impl;  // gpu_experts.cu

 private:
  std::unique_ptr<Impl> impl_;
};

// Device-wide measurements for calibration and benchmarks (gpu_probe in
// gpu_experts.cu), each the median of `reps` event-timed runs.
struct CopyPoint {
  int64_t bytes = 0;
  double h2d_us = 0, d2h_us = 0;  // pinned host memory
};
std::vector<CopyPoint> measure_copies(const std::vector<int64_t>& sizes, int reps);
// Host time per kernel launch (enqueue of an empty kernel, back to back) and
// the time from launch to completion of one empty kernel, us.
struct LaunchCost {
  double enqueue_us = 0, round_trip_us = 0;
};
LaunchCost measure_launch(int reps);
// Device memory read bandwidth, GB/s (a kernel summing a buffer of `bytes`).
double measure_hbm_read_gbps(int64_t bytes, int reps);
// bf16 GEMM n x n x n through cuBLAS, TFLOP/s.
double measure_gemm_tflops(int64_t n, int reps);

}  // namespace moebench::gpu
