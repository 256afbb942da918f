// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Routed experts on the GPU: slot pool, loads, cuBLAS GEMMs and our own
// small kernels (kernels/cuda/gpu_experts.h).

#include "kernels/cuda/gpu_experts.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/gpu_query.h"

namespace moebench::gpu {

[[noreturn]] void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so the next call can report its own
  throw Error(fmt::format("CUDA call {} failed ({}:{}): {} [{}]", call, file, line,
                          cudaGetErrorString(e), cudaGetErrorName(e)));
}

[[noreturn]] void throw_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  throw Error(fmt::format("cuBLAS call {} failed ({}:{}): {} [{}]", call, file, line,
                          cublasGetStatusString(s), cublasGetStatusName(s)));
}

bool available() {
  return !query_gpus().gpus.empty();
}

std::string describe_device() {
  const GpuQuery q = query_gpus();
  if (q.gpus.empty()) return "no GPU: " + q.note;
  const GpuDesc& d = q.gpus.front();
  return fmt::format("{} (sm_{}{}, {} SMs, {:.1f} GiB), driver {}, runtime {}", d.name, d.sm_major,
                     d.sm_minor, d.sm_count, double(d.mem_bytes) / double(1LL << 30),
                     q.cuda_driver_version, q.cuda_runtime_version);
}

namespace {

// ---- kernels of our own ----

__global__ void to_bf16_kernel(const float* x, __nv_bfloat16* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16_rn(x[i]);
}

// codes [rows x row_bytes] (offset binary), scale [rows x groups] ->
// bf16 [rows x cols]. int4: a group's 64 nibbles in 32 bytes, byte j
// holding weight j (low nibble) and weight j + 32 (high nibble).
__global__ void dequant_kernel(const uint8_t* codes, const float* scale, int64_t rows, int64_t cols,
                               int64_t row_bytes, int64_t groups, bool int4, __nv_bfloat16* out) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i % cols, g = c / kQuantGroup, j = c % kQuantGroup;
    int v;
    if (!int4) {
      v = int(codes[r * row_bytes + c]) - 128;
    } else {
      const uint8_t b = codes[r * row_bytes + g * (kQuantGroup / 2) + j % 32];
      v = int(j < 32 ? (b & 0x0f) : (b >> 4)) - 8;
    }
    out[i] = __float2bfloat16_rn(float(v) * scale[r * groups + g]);
  }
}

// out[t, i] += w[t] * y[t, i]
__global__ void combine_kernel(const float* y, const float* w, int64_t tokens, int64_t hidden,
                               float* out) {
  const int64_t n = tokens * hidden;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] += w[i / hidden] * y[i];
}

// ---- decode path: few tokens, fused matrix-vector kernels ----
//
// With few tokens an expert is bounded by reading its weights once, but
// the GEMM path takes 5-7 launches and on the lent H100 host each costs
// about 4 us of host time (calibrate's kernel_launch_us): launches, not the
// HBM, set its time (bench_gpu, section 3). Two kernels of our own instead,
// one warp per output row, 16-byte weight loads, weights dequantised in
// registers:
//   gate_up_silu  h[t, k] = bf16(silu(gate_k . bf16(x_t)) * (up_k . bf16(x_t)))
//   down_combine  out[t, i] += w[t] * (down_i . h_t)
// Activations rounded to bf16 and fp32 sums as on the GEMM path; the sums'
// order differs from cuBLAS's, so the paths agree within rounding, not bit
// for bit (each is deterministic). Shapes with hidden or inter not a
// multiple of 64 take the GEMM path.

constexpr int kDecodeWarps = 8;  // per block

// Eight activations from a 16-byte aligned address, as bf16 values in
// fp32: x (fp32) rounded to bf16, h (bf16) widened.
__device__ __forceinline__ void load8(const float* p, float (&o)[8]) {
  const float4 a = __ldg(reinterpret_cast<const float4*>(p));
  const float4 b = __ldg(reinterpret_cast<const float4*>(p) + 1);
  const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
  for (int j = 0; j < 8; ++j) o[j] = __bfloat162float(__float2bfloat16_rn(v[j]));
}
__device__ __forceinline__ void load8(const __nv_bfloat16* p, float (&o)[8]) {
  const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
  const uint16_t* h = reinterpret_cast<const uint16_t*>(&raw);
#pragma unroll
  for (int j = 0; j < 8; ++j) o[j] = __uint_as_float(uint32_t(h[j]) << 16);
}

// Chunks (16 bytes of weights) per row of `cols` columns.
template <int kDtype>  // 0 bf16, 1 int8, 2 int4
__host__ __device__ constexpr int64_t chunks_per_row(int64_t cols) {
  return kDtype == 0 ? cols / 8 : kDtype == 1 ? cols / 16 : cols / 32;
}
template <int kDtype>
__host__ __device__ constexpr int64_t bytes_per_row(int64_t cols) {
  return kDtype == 0 ? cols * 2 : kDtype == 1 ? cols : cols / 2;
}

// acc[t] += (chunk c of the row) . x_t for t < T; x_t at x + t * ldx
// (ldx a multiple of 64, so every load8 is aligned).
template <int kDtype, class A>
__device__ __forceinline__ void dot_chunk(const uint8_t* row, const float* row_scale, int64_t c,
                                          const A* x, int64_t ldx, int T,
                                          float (&acc)[kDecodeMaxTokens]) {
  const uint4 raw = __ldg(reinterpret_cast<const uint4*>(row) + c);
  const uint8_t* b = reinterpret_cast<const uint8_t*>(&raw);
  float v[kDtype == 0 ? 8 : kDtype == 1 ? 16 : 32];
  int64_t col = 0;
  float sc = 1.0f;
  if (kDtype == 0) {
    const uint16_t* hw = reinterpret_cast<const uint16_t*>(&raw);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = __uint_as_float(uint32_t(hw[j]) << 16);
    col = c * 8;
  } else if (kDtype == 1) {
#pragma unroll
    for (int j = 0; j < 16; ++j) v[j] = float(int(b[j]) - 128);
    col = c * 16;
    sc = row_scale[col / kQuantGroup];
  } else {
    // Group g = c / 2 keeps 64 weights in 32 bytes; this chunk is its bytes
    // 16 (c % 2) .. + 15: byte j holds column 64 g + j (low nibble) and
    // 64 g + j + 32 (high nibble). v[0..15] low, v[16..31] high.
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      v[j] = float(int(b[j] & 0x0f) - 8);
      v[16 + j] = float(int(b[j] >> 4) - 8);
    }
    col = (c / 2) * kQuantGroup + (c % 2) * 16;
    sc = row_scale[c / 2];
  }
#pragma unroll
  for (int t = 0; t < kDecodeMaxTokens; ++t) {
    if (t >= T) break;
    const A* xt = x + t * ldx + col;
    float xa[8], a = 0;
    if (kDtype == 0) {
      load8(xt, xa);
#pragma unroll
      for (int j = 0; j < 8; ++j) a += v[j] * xa[j];
    } else {
#pragma unroll
      for (int q = 0; q < (kDtype == 1 ? 2 : 4); ++q) {
        // int8: columns col + 8q; int4: low nibbles col + 8q (q < 2), high col + 32 + 8(q - 2)
        load8(xt + (kDtype == 1 || q < 2 ? 8 * q : 32 + 8 * (q - 2)), xa);
#pragma unroll
        for (int j = 0; j < 8; ++j) a += v[8 * q + j] * xa[j];
      }
    }
    acc[t] += a * sc;
  }
}

// Rows 0..I-1 of gu are gate, I..2I-1 up; scales [2I x H/64] (quantised).
template <int kDtype>
__global__ void gate_up_silu_kernel(const uint8_t* gu, const float* scale, const float* x,
                                    int64_t T, int64_t H, int64_t I, __nv_bfloat16* h) {
  const int64_t k = int64_t(blockIdx.x) * kDecodeWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (k >= I) return;
  const int64_t rb = bytes_per_row<kDtype>(H), nc = chunks_per_row<kDtype>(H),
                groups = H / kQuantGroup;
  const uint8_t* grow = gu + k * rb;
  const uint8_t* urow = gu + (I + k) * rb;
  const float* gs = kDtype == 0 ? nullptr : scale + k * groups;
  const float* us = kDtype == 0 ? nullptr : scale + (I + k) * groups;
  float ag[kDecodeMaxTokens] = {}, au[kDecodeMaxTokens] = {};
  for (int64_t c = lane; c < nc; c += 32) {
    dot_chunk<kDtype>(grow, gs, c, x, H, int(T), ag);
    dot_chunk<kDtype>(urow, us, c, x, H, int(T), au);
  }
#pragma unroll
  for (int t = 0; t < kDecodeMaxTokens; ++t) {
    if (t >= T) break;
    const float g = warp_sum(ag[t]), u = warp_sum(au[t]);
    if (lane == 0) h[t * I + k] = __float2bfloat16_rn(g / (1.0f + expf(-g)) * u);
  }
}

template <int kDtype>
__global__ void down_combine_kernel(const uint8_t* down, const float* scale, const __nv_bfloat16* h,
                                    const float* w, int64_t T, int64_t H, int64_t I, float* out) {
  const int64_t i = int64_t(blockIdx.x) * kDecodeWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (i >= H) return;
  const int64_t rb = bytes_per_row<kDtype>(I), nc = chunks_per_row<kDtype>(I),
                groups = I / kQuantGroup;
  const uint8_t* row = down + i * rb;
  const float* rs = kDtype == 0 ? nullptr : scale + i * groups;
  float a[kDecodeMaxTokens] = {};
  for (int64_t c = lane; c < nc; c += 32) dot_chunk<kDtype>(row, rs, c, h, I, int(T), a);
#pragma unroll
  for (int t = 0; t < kDecodeMaxTokens; ++t) {
    if (t >= T) break;
    const float y = warp_sum(a[t]);
    if (lane == 0) out[t * H + i] += w[t] * y;
  }
}

template <int kDtype>
void launch_decode(const uint8_t* base, const ExpertBlob& b, const float* x, const float* w,
                   int64_t T, __nv_bfloat16* h, float* out, cudaStream_t s) {
  const int64_t H = b.shape.hidden, I = b.shape.inter;
  const float* gus = kDtype == 0 ? nullptr : reinterpret_cast<const float*>(base + b.gate_up_scale);
  const float* ds = kDtype == 0 ? nullptr : reinterpret_cast<const float*>(base + b.down_scale);
  gate_up_silu_kernel<kDtype>
      <<<unsigned((I + kDecodeWarps - 1) / kDecodeWarps), 32 * kDecodeWarps, 0, s>>>(
          base + b.gate_up, gus, x, T, H, I, h);
  MB_CUDA_LAUNCHED("gate_up_silu");
  down_combine_kernel<kDtype>
      <<<unsigned((H + kDecodeWarps - 1) / kDecodeWarps), 32 * kDecodeWarps, 0, s>>>(
          base + b.down, ds, h, w, T, H, I, out);
  MB_CUDA_LAUNCHED("down_combine");
}

__global__ void empty_kernel() {}

__global__ void spin_kernel(uint64_t ns) {
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

__global__ void read_kernel(const float4* p, int64_t n, float* sink) {
  float4 acc = make_float4(0, 0, 0, 0);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float4 v = p[i];
    acc.x += v.x;
    acc.y += v.y;
    acc.z += v.z;
    acc.w += v.w;
  }
  if (acc.x + acc.y + acc.z + acc.w == 1234.5f) *sink = acc.x;  // keeps the reads
}

}  // namespace

std::shared_ptr<uint8_t> pinned_bytes(int64_t bytes) {
  void* p = nullptr;
  MB_CUDA(cudaMallocHost(&p, size_t(std::max<int64_t>(bytes, 1))));
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { cudaFreeHost(q); });
}

struct GpuExperts::Impl {
  Options o;
  ExpertBlob blob;
  cudaStream_t compute = nullptr, h2d = nullptr, d2h = nullptr, act_h2d = nullptr;
  uint8_t* host_scratch = nullptr;  // copy(): pinned
  uint8_t* dev_scratch = nullptr;
  int64_t scratch_bytes = 0;
  cublasHandle_t cublas = nullptr;
  uint8_t* pool = nullptr;          // slots x blob.bytes
  std::vector<cudaEvent_t> loaded;  // per slot: its last load done
  std::vector<cudaEvent_t> used;    // per slot: its last compute done
  cudaEvent_t acts_in = nullptr;    // activations copied in
  cudaEvent_t computed = nullptr;   // the last compute done
  __nv_bfloat16* wq = nullptr;      // dequantised weights (int8 / int4)
  float *x = nullptr, *w = nullptr, *out = nullptr, *gu = nullptr, *y = nullptr;
  __nv_bfloat16 *xb = nullptr, *h = nullptr;
  size_t marks_used = 0;           // marks[0 .. marks_used) recorded since clear_events
  std::vector<cudaEvent_t> marks;  // record(); guarded by marks_mu (lanes may be fed
  std::mutex marks_mu;             // from one host thread each)
  int64_t device_bytes = 0;

  // Frees what was made, also after a constructor that threw half way.
  // Errors are not thrown from here: the destructor may run while one unwinds.
  ~Impl() {
    Impl& m = *this;
    if (m.compute) cudaStreamSynchronize(m.compute);
    if (m.h2d) cudaStreamSynchronize(m.h2d);
    if (m.d2h) cudaStreamSynchronize(m.d2h);
    if (m.act_h2d) cudaStreamSynchronize(m.act_h2d);
    if (m.host_scratch) cudaFreeHost(m.host_scratch);
    if (m.dev_scratch) cudaFree(m.dev_scratch);
    for (void* p : {(void*)m.pool, (void*)m.wq, (void*)m.x, (void*)m.out, (void*)m.y, (void*)m.w,
                    (void*)m.gu, (void*)m.xb, (void*)m.h})
      if (p) cudaFree(p);
    for (auto* v : {&m.loaded, &m.used, &m.marks})
      for (cudaEvent_t e : *v) cudaEventDestroy(e);
    if (m.acts_in) cudaEventDestroy(m.acts_in);
    if (m.computed) cudaEventDestroy(m.computed);
    if (m.cublas) cublasDestroy(m.cublas);
    for (cudaStream_t s : {m.compute, m.h2d, m.d2h, m.act_h2d})
      if (s) cudaStreamDestroy(s);
  }

  cudaStream_t lane(Lane l) const {
    return l == Lane::kCompute ? compute : l == Lane::kH2D ? h2d : l == Lane::kD2H ? d2h : act_h2d;
  }
  void check_tokens(int64_t tokens, const char* what) const {
    if (tokens < 1 || tokens > o.max_tokens) {
      throw Error(fmt::format("GPU experts {}: expected 1 to {} tokens (max_tokens), found {}",
                              what, o.max_tokens, tokens));
    }
  }
  void check_slot(int slot, const char* what) const {
    if (slot < 0 || slot >= o.slots) {
      throw Error(fmt::format("GPU experts {}: expected a slot 0 to {}, found {}", what,
                              o.slots - 1, slot));
    }
  }
};

GpuExperts::GpuExperts(const Options& o) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.o = o;
  m.blob = ExpertBlob::of(o.shape, o.dtype);
  if (o.slots < 1 || o.max_tokens < 1) {
    throw Error(fmt::format("GPU experts: expected slots >= 1 and max_tokens >= 1, found {} and {}",
                            o.slots, o.max_tokens));
  }
  if (!available()) throw Error("GPU experts: expected a CUDA device, found " + describe_device());
  const int64_t H = o.shape.hidden, I = o.shape.inter, T = o.max_tokens;
  MB_CUDA(cudaStreamCreateWithFlags(&m.compute, cudaStreamNonBlocking));
  MB_CUDA(cudaStreamCreateWithFlags(&m.h2d, cudaStreamNonBlocking));
  MB_CUDA(cudaStreamCreateWithFlags(&m.d2h, cudaStreamNonBlocking));
  MB_CUDA(cudaStreamCreateWithFlags(&m.act_h2d, cudaStreamNonBlocking));
  MB_CUBLAS(cublasCreate(&m.cublas));
  MB_CUBLAS(cublasSetStream(m.cublas, m.compute));
  m.pool = device_alloc<uint8_t>(m.blob.bytes * o.slots);
  m.device_bytes = m.blob.bytes * o.slots;
  for (int s = 0; s < o.slots; ++s) {
    cudaEvent_t a, b;
    MB_CUDA(cudaEventCreateWithFlags(&a, cudaEventDisableTiming));
    MB_CUDA(cudaEventCreateWithFlags(&b, cudaEventDisableTiming));
    m.loaded.push_back(a);
    m.used.push_back(b);
  }
  MB_CUDA(cudaEventCreateWithFlags(&m.acts_in, cudaEventDisableTiming));
  MB_CUDA(cudaEventCreateWithFlags(&m.computed, cudaEventDisableTiming));
  if (o.dtype != WeightDtype::kBf16) {
    m.wq = device_alloc<__nv_bfloat16>(3 * H * I);
    m.device_bytes += 3 * H * I * 2;
  }
  m.x = device_alloc<float>(T * H);
  m.out = device_alloc<float>(T * H);
  m.y = device_alloc<float>(T * H);
  m.w = device_alloc<float>(T);
  m.gu = device_alloc<float>(T * 2 * I);
  m.xb = device_alloc<__nv_bfloat16>(T * H);
  m.h = device_alloc<__nv_bfloat16>(T * I);
  m.device_bytes += T * H * 4 * 3 + T * 4 + T * 2 * I * 4 + T * H * 2 + T * I * 2;
}

GpuExperts::~GpuExperts() = default;

const ExpertBlob& GpuExperts::blob() const {
  return impl_->blob;
}
int GpuExperts::slots() const {
  return impl_->o.slots;
}
int64_t GpuExperts::device_bytes() const {
  return impl_->device_bytes;
}

void GpuExperts::load(int slot, const uint8_t* host_blob) {
  Impl& m = *impl_;
  m.check_slot(slot, "load");
  MB_CUDA(cudaStreamWaitEvent(m.h2d, m.used[size_t(slot)], 0));  // the slot's previous user
  MB_CUDA(cudaMemcpyAsync(m.pool + int64_t(slot) * m.blob.bytes, host_blob, size_t(m.blob.bytes),
                          cudaMemcpyHostToDevice, m.h2d));
  MB_CUDA(cudaEventRecord(m.loaded[size_t(slot)], m.h2d));
}

void GpuExperts::put_activations(const float* x, const float* w, const float* out, int64_t tokens) {
  Impl& m = *impl_;
  m.check_tokens(tokens, "put_activations");
  const int64_t H = m.o.shape.hidden;
  MB_CUDA(cudaStreamWaitEvent(m.h2d, m.computed, 0));  // the buffers' last reader
  MB_CUDA(cudaMemcpyAsync(m.x, x, size_t(tokens * H) * 4, cudaMemcpyHostToDevice, m.h2d));
  MB_CUDA(cudaMemcpyAsync(m.w, w, size_t(tokens) * 4, cudaMemcpyHostToDevice, m.h2d));
  MB_CUDA(cudaMemcpyAsync(m.out, out, size_t(tokens * H) * 4, cudaMemcpyHostToDevice, m.h2d));
  MB_CUDA(cudaEventRecord(m.acts_in, m.h2d));
}

void GpuExperts::compute(int slot, int64_t tokens, bool wait_for_load) {
  Impl& m = *impl_;
  m.check_slot(slot, "compute");
  m.check_tokens(tokens, "compute");
  const int64_t H = m.o.shape.hidden, I = m.o.shape.inter, T = tokens;
  if (wait_for_load) MB_CUDA(cudaStreamWaitEvent(m.compute, m.loaded[size_t(slot)], 0));
  MB_CUDA(cudaStreamWaitEvent(m.compute, m.acts_in, 0));
  const uint8_t* base = m.pool + int64_t(slot) * m.blob.bytes;
  if (uses_decode_path(m.blob, T)) {
    if (m.o.dtype == WeightDtype::kBf16)
      launch_decode<0>(base, m.blob, m.x, m.w, T, m.h, m.out, m.compute);
    else if (m.o.dtype == WeightDtype::kInt8)
      launch_decode<1>(base, m.blob, m.x, m.w, T, m.h, m.out, m.compute);
    else
      launch_decode<2>(base, m.blob, m.x, m.w, T, m.h, m.out, m.compute);
    MB_CUDA(cudaEventRecord(m.used[size_t(slot)], m.compute));
    MB_CUDA(cudaEventRecord(m.computed, m.compute));
    return;
  }
  const __nv_bfloat16* wgu;
  const __nv_bfloat16* wdown;
  if (m.o.dtype == WeightDtype::kBf16) {
    wgu = reinterpret_cast<const __nv_bfloat16*>(base + m.blob.gate_up);
    wdown = reinterpret_cast<const __nv_bfloat16*>(base + m.blob.down);
  } else {
    const bool int4 = m.o.dtype == WeightDtype::kInt4;
    const int64_t per_group = int4 ? kQuantGroup / 2 : kQuantGroup;
    const int64_t gh = (H + kQuantGroup - 1) / kQuantGroup,
                  gi = (I + kQuantGroup - 1) / kQuantGroup;
    dequant_kernel<<<grid_for(2 * I * H), 256, 0, m.compute>>>(
        base + m.blob.gate_up, reinterpret_cast<const float*>(base + m.blob.gate_up_scale), 2 * I,
        H, gh * per_group, gh, int4, m.wq);
    MB_CUDA_LAUNCHED("dequant gate|up");
    dequant_kernel<<<grid_for(H * I), 256, 0, m.compute>>>(
        base + m.blob.down, reinterpret_cast<const float*>(base + m.blob.down_scale), H, I,
        gi * per_group, gi, int4, m.wq + 2 * I * H);
    MB_CUDA_LAUNCHED("dequant down");
    wgu = m.wq;
    wdown = m.wq + 2 * I * H;
  }
  to_bf16_kernel<<<grid_for(T * H), 256, 0, m.compute>>>(m.x, m.xb, T * H);
  MB_CUDA_LAUNCHED("to_bf16");
  const float one = 1.0f, zero = 0.0f;
  // gu (column-major [2I x T]) = Wgu (row-major [2I x H], i.e. column-major
  // [H x 2I] transposed) x xb (column-major [H x T]).
  MB_CUBLAS(cublasGemmEx(m.cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(2 * I), int(T), int(H), &one, wgu,
                         CUDA_R_16BF, int(H), m.xb, CUDA_R_16BF, int(H), &zero, m.gu, CUDA_R_32F,
                         int(2 * I), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  silu_mul_kernel<<<grid_for(T * I), 256, 0, m.compute>>>(m.gu, T, I, m.h);
  MB_CUDA_LAUNCHED("silu_mul");
  MB_CUBLAS(cublasGemmEx(m.cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(H), int(T), int(I), &one, wdown,
                         CUDA_R_16BF, int(I), m.h, CUDA_R_16BF, int(I), &zero, m.y, CUDA_R_32F,
                         int(H), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  combine_kernel<<<grid_for(T * H), 256, 0, m.compute>>>(m.y, m.w, T, H, m.out);
  MB_CUDA_LAUNCHED("combine");
  MB_CUDA(cudaEventRecord(m.used[size_t(slot)], m.compute));
  MB_CUDA(cudaEventRecord(m.computed, m.compute));
}

void GpuExperts::get_output(float* out, int64_t tokens) {
  Impl& m = *impl_;
  m.check_tokens(tokens, "get_output");
  MB_CUDA(cudaStreamWaitEvent(m.d2h, m.computed, 0));
  MB_CUDA(cudaMemcpyAsync(out, m.out, size_t(tokens * m.o.shape.hidden) * 4, cudaMemcpyDeviceToHost,
                          m.d2h));
  MB_CUDA(cudaStreamSynchronize(m.d2h));
}

void GpuExperts::synchronize() {
  Impl& m = *impl_;
  MB_CUDA(cudaStreamSynchronize(m.compute));
  MB_CUDA(cudaStreamSynchronize(m.h2d));
  MB_CUDA(cudaStreamSynchronize(m.d2h));
  MB_CUDA(cudaStreamSynchronize(m.act_h2d));
}

void* GpuExperts::stream(Lane lane) {
  return impl_->lane(lane);
}

int GpuExperts::record(Lane lane) {
  Impl& m = *impl_;
  cudaEvent_t e;
  int id;
  {
    // Events are made once and reused after clear_events (creating one
    // costs host time a replay would count against the task).
    std::lock_guard<std::mutex> l(m.marks_mu);
    if (m.marks_used == m.marks.size()) {
      MB_CUDA(cudaEventCreate(&e));
      m.marks.push_back(e);
    }
    id = int(m.marks_used++);
    e = m.marks[size_t(id)];
  }
  MB_CUDA(cudaEventRecord(e, m.lane(lane)));
  return id;
}

namespace {
cudaEvent_t mark_event(GpuExperts::Impl& m, int mark, const char* what);
}

double GpuExperts::elapsed_ms(int from, int to) {
  Impl& m = *impl_;
  const cudaEvent_t a = mark_event(m, from, "elapsed_ms"), b = mark_event(m, to, "elapsed_ms");
  MB_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  MB_CUDA(cudaEventElapsedTime(&ms, a, b));
  return double(ms);
}

void GpuExperts::clear_events() {
  Impl& m = *impl_;
  synchronize();
  std::lock_guard<std::mutex> l(m.marks_mu);
  m.marks_used = 0;
}

namespace {
cudaEvent_t mark_event(GpuExperts::Impl& m, int mark, const char* what) {
  std::lock_guard<std::mutex> l(m.marks_mu);
  if (mark < 0 || size_t(mark) >= m.marks_used)
    throw InternalError(std::string("GpuExperts::") + what + ": no such mark");
  return m.marks[size_t(mark)];
}
}  // namespace

void GpuExperts::wait(Lane lane, int mark) {
  Impl& m = *impl_;
  MB_CUDA(cudaStreamWaitEvent(m.lane(lane), mark_event(m, mark, "wait"), 0));
}

void GpuExperts::host_wait(int mark) {
  MB_CUDA(cudaEventSynchronize(mark_event(*impl_, mark, "host_wait")));
}

void GpuExperts::spin(Lane lane, double us) {
  Impl& m = *impl_;
  spin_kernel<<<1, 1, 0, m.lane(lane)>>>(uint64_t(std::max(0.0, us) * 1e3));
  MB_CUDA_LAUNCHED("spin");
}

void GpuExperts::copy(Lane lane, int64_t bytes) {
  Impl& m = *impl_;
  if (bytes <= 0) return;
  if (bytes > m.scratch_bytes) {
    // Grows outside any lane's work: wait for what may still read the old buffers.
    synchronize();
    if (m.host_scratch) cudaFreeHost(m.host_scratch);
    if (m.dev_scratch) cudaFree(m.dev_scratch);
    m.host_scratch = nullptr;
    m.dev_scratch = nullptr;
    m.scratch_bytes = 0;
    MB_CUDA(cudaMallocHost(&m.host_scratch, size_t(bytes)));
    MB_CUDA(cudaMalloc(&m.dev_scratch, size_t(bytes)));
    m.scratch_bytes = bytes;
  }
  if (lane == Lane::kD2H) {
    MB_CUDA(cudaMemcpyAsync(m.host_scratch, m.dev_scratch, size_t(bytes), cudaMemcpyDeviceToHost,
                            m.lane(lane)));
  } else {
    MB_CUDA(cudaMemcpyAsync(m.dev_scratch, m.host_scratch, size_t(bytes), cudaMemcpyHostToDevice,
                            m.lane(lane)));
  }
}

// ---- device-wide probes ----

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Events {
  cudaEvent_t a = nullptr, b = nullptr;
  Events() {
    MB_CUDA(cudaEventCreate(&a));
    MB_CUDA(cudaEventCreate(&b));
  }
  ~Events() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  double ms() const {
    MB_CUDA(cudaEventSynchronize(b));
    float t = 0;
    MB_CUDA(cudaEventElapsedTime(&t, a, b));
    return double(t);
  }
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { MB_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s); }
};

template <class T>
struct DeviceBuf {
  T* p = nullptr;
  explicit DeviceBuf(int64_t n) { p = device_alloc<T>(n); }
  ~DeviceBuf() { cudaFree(p); }
};

}  // namespace

std::vector<CopyPoint> measure_copies(const std::vector<int64_t>& sizes, int reps) {
  if (!available())
    throw Error("GPU copy probe: expected a CUDA device, found " + describe_device());
  const int64_t most = sizes.empty() ? 1 : *std::max_element(sizes.begin(), sizes.end());
  auto host = pinned_bytes(most);
  std::memset(host.get(), 1, size_t(most));
  DeviceBuf<uint8_t> dev(most);
  Stream s;
  Events ev;
  std::vector<CopyPoint> out;
  for (int64_t n : sizes) {
    CopyPoint c;
    c.bytes = n;
    for (int dir = 0; dir < 2; ++dir) {
      std::vector<double> us;
      for (int r = 0; r < reps + 2; ++r) {
        MB_CUDA(cudaEventRecord(ev.a, s.s));
        if (dir == 0)
          MB_CUDA(cudaMemcpyAsync(dev.p, host.get(), size_t(n), cudaMemcpyHostToDevice, s.s));
        else
          MB_CUDA(cudaMemcpyAsync(host.get(), dev.p, size_t(n), cudaMemcpyDeviceToHost, s.s));
        MB_CUDA(cudaEventRecord(ev.b, s.s));
        const double ms = ev.ms();
        if (r >= 2) us.push_back(ms * 1e3);  // two untimed
      }
      (dir == 0 ? c.h2d_us : c.d2h_us) = median(us);
    }
    out.push_back(c);
  }
  return out;
}

LaunchCost measure_launch(int reps) {
  if (!available())
    throw Error("GPU launch probe: expected a CUDA device, found " + describe_device());
  Stream s;
  Events ev;
  LaunchCost c;
  std::vector<double> enq, rt;
  for (int r = 0; r < reps + 2; ++r) {
    MB_CUDA(cudaStreamSynchronize(s.s));
    const int n = 100;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) empty_kernel<<<1, 32, 0, s.s>>>();
    const auto t1 = std::chrono::steady_clock::now();
    MB_CUDA_LAUNCHED("empty");
    MB_CUDA(cudaStreamSynchronize(s.s));
    const auto t2 = std::chrono::steady_clock::now();
    empty_kernel<<<1, 32, 0, s.s>>>();
    MB_CUDA(cudaStreamSynchronize(s.s));
    const auto t3 = std::chrono::steady_clock::now();
    if (r < 2) continue;
    enq.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
    rt.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count());
  }
  c.enqueue_us = median(enq);
  c.round_trip_us = median(rt);
  return c;
}

double measure_hbm_read_gbps(int64_t bytes, int reps) {
  if (!available())
    throw Error("GPU bandwidth probe: expected a CUDA device, found " + describe_device());
  const int64_t n4 = bytes / 16;
  DeviceBuf<float4> buf(n4);
  DeviceBuf<float> sink(1);
  MB_CUDA(cudaMemset(buf.p, 0, size_t(n4) * 16));
  Stream s;
  Events ev;
  int sms = 0;
  MB_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<double> gbps;
  for (int r = 0; r < reps + 2; ++r) {
    MB_CUDA(cudaEventRecord(ev.a, s.s));
    read_kernel<<<unsigned(sms * 8), 512, 0, s.s>>>(buf.p, n4, sink.p);
    MB_CUDA_LAUNCHED("read");
    MB_CUDA(cudaEventRecord(ev.b, s.s));
    const double ms = ev.ms();
    if (r >= 2) gbps.push_back(double(n4 * 16) / (ms * 1e6));
  }
  return median(gbps);
}

double measure_gemm_tflops(int64_t n, int reps) {
  if (!available())
    throw Error("GPU GEMM probe: expected a CUDA device, found " + describe_device());
  DeviceBuf<__nv_bfloat16> a(n * n), b(n * n), c(n * n);
  MB_CUDA(cudaMemset(a.p, 0x3c, size_t(n * n) * 2));  // small non-zero values
  MB_CUDA(cudaMemset(b.p, 0x3c, size_t(n * n) * 2));
  Stream s;
  Events ev;
  cublasHandle_t h = nullptr;
  MB_CUBLAS(cublasCreate(&h));
  std::vector<double> tf;
  try {
    MB_CUBLAS(cublasSetStream(h, s.s));
    const float one = 1.0f, zero = 0.0f;
    for (int r = 0; r < reps + 3; ++r) {
      MB_CUDA(cudaEventRecord(ev.a, s.s));
      MB_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(n), int(n), &one, a.p,
                             CUDA_R_16BF, int(n), b.p, CUDA_R_16BF, int(n), &zero, c.p, CUDA_R_16BF,
                             int(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      MB_CUDA(cudaEventRecord(ev.b, s.s));
      const double ms = ev.ms();
      if (r >= 3) tf.push_back(2.0 * double(n) * double(n) * double(n) / (ms * 1e9));
    }
  } catch (...) {
    cublasDestroy(h);
    throw;
  }
  cublasDestroy(h);
  return median(tf);
}

}  // namespace moebench::gpu
