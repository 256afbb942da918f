// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The rest of a layer on the GPU: norms, projections, attention over a KV
// cache in device memory, router, shared experts, dense FFN, lm head
// (kernels/cuda/gpu_layer.h).

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/gpu_experts.h"
#include "kernels/cuda/gpu_layer.h"

namespace moebench::gpu {

namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 128;          // attention block
constexpr int kTile = 1024;            // cached entries per tile of scores
constexpr int kMaxScoreDim = 1024;     // q in shared memory
constexpr int kMaxValuePerThread = 8;  // value_dim <= kThreads x this

// Uniform in [-a, a) from a hash of the index: the same values every run.
__global__ void fill_kernel(bf16* p, int64_t n, uint32_t seed, float a) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed * 2246822519u ^ uint32_t(i >> 32);
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = __float2bfloat16_rn((float(h & 0xffffff) / float(1 << 24) * 2.0f - 1.0f) * a);
  }
}
__global__ void fill_f32_kernel(float* p, int64_t n, float v) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    p[i] = v * float(int(i % 7) - 3);
}

// out[t] = bf16(x[t] / rms(x[t]) * w): one block per token.
__global__ void rmsnorm_kernel(const float* x, const bf16* w, int64_t H, bf16* out) {
  __shared__ float red[32];
  const float* xt = x + blockIdx.x * H;
  float ss = 0;
  for (int64_t i = threadIdx.x; i < H; i += blockDim.x) ss += xt[i] * xt[i];
  const float r = rsqrtf(block_sum(ss, red) / float(H) + 1e-6f);
  for (int64_t i = threadIdx.x; i < H; i += blockDim.x)
    out[blockIdx.x * H + i] = __float2bfloat16_rn(xt[i] * r * __bfloat162float(w[i]));
}

// The sequence of token t of T spread evenly over S sequences, and its place among that sequence's
// tokens.
__device__ __forceinline__ void token_place(int64_t t, int64_t T, int64_t S, int64_t* s, int64_t* i,
                                            int64_t* n) {
  *s = t * S / T;
  const int64_t first = (*s * T + S - 1) / S, next = ((*s + 1) * T + S - 1) / S;
  *i = t - first;
  *n = next - first;
}

// The new tokens' entries into their sequences' last places of `context`
// (wrapping where a sequence has more new tokens than context), from the
// projection's columns after the queries.
__global__ void kv_append_kernel(const bf16* qkv, int64_t in_proj, int64_t q_cols, int64_t T,
                                 int64_t S, int64_t context, int64_t max_context, int64_t E,
                                 bf16* kv) {
  const int64_t t = blockIdx.x;
  int64_t s, i, n;
  token_place(t, T, S, &s, &i, &n);
  const int64_t pos = (((context - n + i) % context) + context) % context;
  bf16* dst = kv + (s * max_context + pos) * E;
  for (int64_t j = threadIdx.x; j < E; j += blockDim.x)
    dst[j] = qkv[t * in_proj + (q_cols + j) % in_proj];
}

// One block per (token, query head): softmax(q . K / sqrt(Dk)) . V over the
// sequence's `context` entries, in tiles of kTile scores with a running
// maximum and sum (the output rescaled as the maximum grows).
__global__ void attention_kernel(const bf16* qkv, int64_t in_proj, int64_t T, int64_t S,
                                 int64_t context, int64_t max_context, const bf16* kv, int64_t E,
                                 int64_t Hq, int64_t G, int64_t Dk, int64_t Dv, int64_t v_offset,
                                 bf16* out) {
  __shared__ float q[kMaxScoreDim];
  __shared__ float sc[kTile];
  __shared__ float red[32];
  const int64_t t = blockIdx.x, h = blockIdx.y;
  int64_t s, i, n;
  token_place(t, T, S, &s, &i, &n);
  const int64_t g = h / (Hq / G);
  for (int64_t d = threadIdx.x; d < Dk; d += blockDim.x)
    q[d] = __bfloat162float(qkv[t * in_proj + (h * Dk + d) % in_proj]);
  __syncthreads();
  const float scale = rsqrtf(float(Dk));
  const bf16* base = kv + s * max_context * E;
  const bf16* k0 = base + g * Dk;
  const bf16* v0 = base + v_offset + g * Dv;
  float acc[kMaxValuePerThread];
#pragma unroll
  for (int k = 0; k < kMaxValuePerThread; ++k) acc[k] = 0;
  float m = -INFINITY, l = 0;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int64_t j0 = 0; j0 < context; j0 += kTile) {
    const int64_t nt = min(int64_t(kTile), context - j0);
    for (int64_t j = warp; j < nt; j += warps) {
      const bf16* kj = k0 + (j0 + j) * E;
      float a = 0;
      for (int64_t d = lane; d < Dk; d += 32) a += q[d] * __bfloat162float(kj[d]);
      a = warp_sum(a);
      if (lane == 0) sc[j] = a * scale;
    }
    __syncthreads();
    float mt = -INFINITY;
    for (int64_t j = threadIdx.x; j < nt; j += blockDim.x) mt = fmaxf(mt, sc[j]);
    const float mn = fmaxf(m, block_max(mt, red));
    float lt = 0;
    for (int64_t j = threadIdx.x; j < nt; j += blockDim.x) lt += (sc[j] = __expf(sc[j] - mn));
    lt = block_sum(lt, red);  // its barriers also publish sc[]
    const float f = __expf(m - mn);
    l = l * f + lt;
    m = mn;
#pragma unroll
    for (int k = 0; k < kMaxValuePerThread; ++k) {
      const int64_t d = threadIdx.x + int64_t(k) * blockDim.x;
      if (d >= Dv) break;
      float a = acc[k] * f;
      for (int64_t j = 0; j < nt; ++j) a += sc[j] * __bfloat162float(v0[(j0 + j) * E + d]);
      acc[k] = a;
    }
    __syncthreads();  // sc[] is rewritten by the next tile
  }
#pragma unroll
  for (int k = 0; k < kMaxValuePerThread; ++k) {
    const int64_t d = threadIdx.x + int64_t(k) * blockDim.x;
    if (d >= Dv) break;
    out[(t * Hq + h) * Dv + d] = __float2bfloat16_rn(acc[k] / l);
  }
}

// Softmax scores' top k per token (one thread per token; the router's
// experts are a few hundred at most).
__global__ void topk_kernel(const float* scores, int64_t T, int64_t E, int64_t K, int32_t* ids) {
  const int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (t >= T) return;
  const float* st = scores + t * E;
  for (int64_t k = 0; k < K; ++k) {
    int32_t best = -1;
    for (int64_t e = 0; e < E; ++e) {
      bool taken = false;
      for (int64_t q = 0; q < k; ++q) taken |= ids[t * K + q] == int32_t(e);
      if (!taken && (best < 0 || st[e] > st[best])) best = int32_t(e);
    }
    ids[t * K + k] = best;
  }
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] += y[i];
}

}  // namespace

struct GpuLayer::Impl {
  Options o;
  cudaStream_t stream = nullptr;
  bool own_stream = false;
  cublasHandle_t cublas = nullptr;
  int64_t bytes = 0;
  struct Ring {
    bf16 *norm1 = nullptr, *win = nullptr, *wo = nullptr, *norm2 = nullptr, *wr = nullptr;
    bf16 *sgu = nullptr, *sdown = nullptr;
    bf16* kv = nullptr;
  };
  std::vector<Ring> rings;
  bf16 *dgu = nullptr, *ddown = nullptr, *lm_norm = nullptr, *wlm = nullptr;
  float *x = nullptr, *y = nullptr, *scores = nullptr, *gu = nullptr, *logits = nullptr;
  bf16 *xb = nullptr, *qkv = nullptr, *att = nullptr, *h = nullptr;
  int32_t* ids = nullptr;
  // The last attention's counts (for the test accessors).
  int64_t last_tokens = 0, last_sequences = 0, last_context = 0;
  int last_layer = 0;
  std::vector<void*> owned;

  ~Impl() {
    if (stream) cudaStreamSynchronize(stream);
    for (void* p : owned) cudaFree(p);
    if (cublas) cublasDestroy(cublas);
    if (own_stream && stream) cudaStreamDestroy(stream);
  }
  template <class T>
  T* make(int64_t count) {
    T* p = device_alloc<T>(count);
    bytes += std::max<int64_t>(count, 1) * int64_t(sizeof(T));
    owned.push_back(p);
    return p;
  }
  bf16* weights(int64_t rows, int64_t cols, uint32_t seed) {
    bf16* p = make<bf16>(rows * cols);
    fill_kernel<<<grid_for(rows * cols), 256, 0, stream>>>(p, rows * cols, seed,
                                                           1.0f / std::sqrt(float(cols)));
    MB_CUDA_LAUNCHED("fill");
    return p;
  }
  // Y (column-major [N x T], i.e. row-major [T x N]) = W (row-major [N x K]) x X
  // (column-major [K x T], leading dimension ldx).
  void gemm(const bf16* W, int64_t N, int64_t K, const bf16* X, int64_t ldx, int64_t T, void* Y,
            cudaDataType_t yt) {
    const float one = 1.0f, zero = 0.0f;
    MB_CUBLAS(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(T), int(K), &one, W,
                           CUDA_R_16BF, int(K), X, CUDA_R_16BF, int(ldx), &zero, Y, yt, int(N),
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  // out = down(silu(gate xb) * up xb), added to the residual.
  void ffn(const bf16* wgu, const bf16* wdown, int64_t I, int64_t T) {
    const int64_t H = o.shape.hidden;
    gemm(wgu, 2 * I, H, xb, H, T, gu, CUDA_R_32F);
    silu_mul_kernel<<<grid_for(T * I), 256, 0, stream>>>(gu, T, I, h);
    MB_CUDA_LAUNCHED("silu_mul");
    gemm(wdown, H, I, h, I, T, y, CUDA_R_32F);
    add_kernel<<<grid_for(T * H), 256, 0, stream>>>(x, y, T * H);
    MB_CUDA_LAUNCHED("residual");
  }
  void check(const char* what, int64_t tokens, int64_t sequences, int64_t context) const {
    if (tokens < 1 || tokens > o.max_tokens || sequences < 1 || sequences > tokens ||
        sequences > o.max_sequences || context < 1 || context > o.max_context) {
      throw Error(fmt::format(
          "GPU layer {}: expected 1 to {} tokens (max_tokens), 1 to min(tokens, {}) sequences "
          "and a context of 1 to {} entries (max_context), found {} tokens, {} sequences, "
          "context {}",
          what, o.max_tokens, o.max_sequences, o.max_context, tokens, sequences, context));
    }
  }
  const Ring& ring(int layer) const { return rings[size_t(std::max(0, layer) % o.rings)]; }
};

GpuLayer::GpuLayer(const Options& o, void* stream) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.o = o;
  const LayerShape& s = o.shape;
  if (o.max_tokens < 1 || o.max_sequences < 1 || o.max_context < 1 || o.rings < 1) {
    throw Error(fmt::format(
        "GPU layer: expected max_tokens, max_sequences, max_context and rings >= 1, found {}, {}, "
        "{}, {}",
        o.max_tokens, o.max_sequences, o.max_context, o.rings));
  }
  if (s.score_dim > kMaxScoreDim || s.value_dim > kThreads * kMaxValuePerThread) {
    throw Error(fmt::format(
        "GPU layer: expected a head's score width <= {} and value width <= {}, found {} and {}",
        kMaxScoreDim, kThreads * kMaxValuePerThread, s.score_dim, s.value_dim));
  }
  if (!available()) throw Error("GPU layer: expected a CUDA device, found " + describe_device());
  if (stream) {
    m.stream = static_cast<cudaStream_t>(stream);
  } else {
    MB_CUDA(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
    m.own_stream = true;
  }
  MB_CUBLAS(cublasCreate(&m.cublas));
  MB_CUBLAS(cublasSetStream(m.cublas, m.stream));
  const int64_t H = s.hidden, T = o.max_tokens;
  uint32_t seed = 1;
  for (int r = 0; r < o.rings; ++r) {
    Impl::Ring g;
    g.norm1 = m.weights(1, H, seed++);
    g.win = m.weights(s.in_proj, H, seed++);
    g.wo = m.weights(H, s.out_proj_in, seed++);
    g.norm2 = m.weights(1, H, seed++);
    if (s.experts > 0) g.wr = m.weights(s.experts, H, seed++);
    if (s.shared_inter > 0) {
      g.sgu = m.weights(2 * s.shared_inter, H, seed++);
      g.sdown = m.weights(H, s.shared_inter, seed++);
    }
    g.kv = m.weights(o.max_sequences * o.max_context, s.kv_entry_elems, seed++);
    m.rings.push_back(g);
  }
  if (s.dense_inter > 0) {
    m.dgu = m.weights(2 * s.dense_inter, H, seed++);
    m.ddown = m.weights(H, s.dense_inter, seed++);
  }
  if (o.lm_head && s.vocab > 0) {
    m.lm_norm = m.weights(1, H, seed++);
    m.wlm = m.weights(s.vocab, H, seed++);
    m.logits = m.make<float>(T * s.vocab);
  }
  const int64_t I = std::max(s.shared_inter, s.dense_inter);
  m.x = m.make<float>(T * H);
  fill_f32_kernel<<<grid_for(T * H), 256, 0, m.stream>>>(m.x, T * H, 0.01f);
  MB_CUDA_LAUNCHED("fill x");
  m.y = m.make<float>(T * std::max(H, s.in_proj));
  m.scores = m.make<float>(T * std::max<int64_t>(1, s.experts));
  m.ids = m.make<int32_t>(T * std::max<int64_t>(1, s.top_k));
  m.gu = m.make<float>(T * 2 * std::max<int64_t>(1, I));
  m.h = m.make<bf16>(T * std::max<int64_t>(1, I));
  m.xb = m.make<bf16>(T * H);
  m.qkv = m.make<bf16>(T * s.in_proj);
  m.att = m.make<bf16>(T * s.q_heads * s.value_dim);
  MB_CUDA(cudaStreamSynchronize(m.stream));
}

GpuLayer::~GpuLayer() = default;

const GpuLayer::Options& GpuLayer::options() const {
  return impl_->o;
}
int64_t GpuLayer::device_bytes() const {
  return impl_->bytes;
}

void GpuLayer::attention(int layer, int64_t T, int64_t S, int64_t C) {
  Impl& m = *impl_;
  m.check("attention", T, S, C);
  const LayerShape& s = m.o.shape;
  const Impl::Ring& r = m.ring(layer);
  const int64_t H = s.hidden;
  rmsnorm_kernel<<<unsigned(T), 256, 0, m.stream>>>(m.x, r.norm1, H, m.xb);
  MB_CUDA_LAUNCHED("rmsnorm");
  m.gemm(r.win, s.in_proj, H, m.xb, H, T, m.qkv, CUDA_R_16BF);
  kv_append_kernel<<<unsigned(T), 128, 0, m.stream>>>(
      m.qkv, s.in_proj, s.q_heads * s.score_dim, T, S, C, m.o.max_context, s.kv_entry_elems, r.kv);
  MB_CUDA_LAUNCHED("kv_append");
  attention_kernel<<<dim3(unsigned(T), unsigned(s.q_heads)), kThreads, 0, m.stream>>>(
      m.qkv, s.in_proj, T, S, C, m.o.max_context, r.kv, s.kv_entry_elems, s.q_heads, s.kv_heads,
      s.score_dim, s.value_dim, s.v_offset, m.att);
  MB_CUDA_LAUNCHED("attention");
  // The output projection reads each token's first out_proj_in values (MLA:
  // the latent's heads stand for the value up-projection's input).
  m.gemm(r.wo, H, s.out_proj_in, m.att, s.q_heads * s.value_dim, T, m.y, CUDA_R_32F);
  add_kernel<<<grid_for(T * H), 256, 0, m.stream>>>(m.x, m.y, T * H);
  MB_CUDA_LAUNCHED("residual");
  rmsnorm_kernel<<<unsigned(T), 256, 0, m.stream>>>(m.x, r.norm2, H, m.xb);
  MB_CUDA_LAUNCHED("rmsnorm");
  if (s.experts > 0) {
    m.gemm(r.wr, s.experts, H, m.xb, H, T, m.scores, CUDA_R_32F);
    topk_kernel<<<unsigned((T + 127) / 128), 128, 0, m.stream>>>(m.scores, T, s.experts, s.top_k,
                                                                 m.ids);
    MB_CUDA_LAUNCHED("topk");
  }
  m.last_tokens = T;
  m.last_sequences = S;
  m.last_context = C;
  m.last_layer = layer;
}

void GpuLayer::shared_experts(int layer, int64_t T) {
  Impl& m = *impl_;
  m.check("shared experts", T, 1, 1);
  if (m.o.shape.shared_inter <= 0)
    throw Error("GPU layer shared experts: expected a model with shared experts, found none");
  const Impl::Ring& r = m.ring(layer);
  m.ffn(r.sgu, r.sdown, m.o.shape.shared_inter, T);
}

void GpuLayer::dense_ffn(int, int64_t T) {
  Impl& m = *impl_;
  m.check("dense FFN", T, 1, 1);
  if (!m.dgu) throw Error("GPU layer dense FFN: expected a model with a dense layer, found none");
  m.ffn(m.dgu, m.ddown, m.o.shape.dense_inter, T);
}

void GpuLayer::lm_head(int64_t T) {
  Impl& m = *impl_;
  m.check("lm head", T, 1, 1);
  if (!m.wlm) throw Error("GPU layer lm head: expected a vocabulary matrix, found none");
  rmsnorm_kernel<<<unsigned(T), 256, 0, m.stream>>>(m.x, m.lm_norm, m.o.shape.hidden, m.xb);
  MB_CUDA_LAUNCHED("rmsnorm");
  m.gemm(m.wlm, m.o.shape.vocab, m.o.shape.hidden, m.xb, m.o.shape.hidden, T, m.logits, CUDA_R_32F);
}

void GpuLayer::synchronize() {
  MB_CUDA(cudaStreamSynchronize(impl_->stream));
}

namespace {
std::vector<float> to_floats(const bf16* dev, int64_t n, int64_t ld, int64_t rows,
                             cudaStream_t st) {
  std::vector<uint16_t> raw(size_t(ld * rows));
  MB_CUDA(cudaMemcpyAsync(raw.data(), dev, raw.size() * 2, cudaMemcpyDeviceToHost, st));
  MB_CUDA(cudaStreamSynchronize(st));
  std::vector<float> out;
  out.reserve(size_t(n * rows));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      const uint32_t b = uint32_t(raw[size_t(r * ld + j)]) << 16;
      float f;
      std::memcpy(&f, &b, 4);
      out.push_back(f);
    }
  return out;
}
}  // namespace

std::vector<int32_t> GpuLayer::last_routing() {
  Impl& m = *impl_;
  std::vector<int32_t> ids(size_t(m.last_tokens * m.o.shape.top_k));
  MB_CUDA(cudaMemcpyAsync(ids.data(), m.ids, ids.size() * 4, cudaMemcpyDeviceToHost, m.stream));
  MB_CUDA(cudaStreamSynchronize(m.stream));
  return ids;
}

std::vector<float> GpuLayer::last_attention_output() {
  Impl& m = *impl_;
  const int64_t w = m.o.shape.q_heads * m.o.shape.value_dim;
  return to_floats(m.att, w, w, m.last_tokens, m.stream);  // the kernel writes rows of w
}

std::vector<float> GpuLayer::last_queries() {
  Impl& m = *impl_;
  const LayerShape& s = m.o.shape;
  const std::vector<float> all = to_floats(m.qkv, s.in_proj, s.in_proj, m.last_tokens, m.stream);
  std::vector<float> q;
  for (int64_t t = 0; t < m.last_tokens; ++t)
    for (int64_t c = 0; c < s.q_heads * s.score_dim; ++c)
      q.push_back(all[size_t(t * s.in_proj + c % s.in_proj)]);
  return q;
}

std::vector<float> GpuLayer::cached_entries(int layer, int64_t sequence, int64_t context) {
  Impl& m = *impl_;
  const LayerShape& s = m.o.shape;
  const bf16* base = m.ring(layer).kv + sequence * m.o.max_context * s.kv_entry_elems;
  return to_floats(base, s.kv_entry_elems, s.kv_entry_elems, context, m.stream);
}

}  // namespace moebench::gpu
