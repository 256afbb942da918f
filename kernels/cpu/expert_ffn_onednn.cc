// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// expert kernel "onednn": the expert FFN as oneDNN matmuls. Gate and up
// are two matmuls of the same primitive ([tokens x hidden] bf16 times the
// weights read in place as [hidden x inter], fp32 out), then
// silu(gate) * up rounded to bf16, then the down matmul; the weights are
// never copied (their row-major [out x in] layout is oneDNN's "ba" format of
// the [in x out] operand). Primitives are created once per (shape, tokens)
// (the oneDNN 2.x API of Debian's libdnnl-dev: matmul::desc, then the
// primitive descriptor).
//
// Threads: Debian's oneDNN is built for OpenMP, so its primitives run on
// OpenMP threads, not on the pool's. The pool's thread count (1 without a
// pool: the caller only, as for every kernel) is applied to them through
// the calling thread's OpenMP setting, restored afterwards, so a task's
// `threads` means the same for oneDNN as for the own kernels (before, oneDNN
// took every OpenMP thread whatever the pool). Primitives are created per
// thread count too: oneDNN partitions the work when it creates one.
#include <omp.h>

#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/thread_pool.h"

namespace moebench {
namespace {

using dnnl::memory;
using Dims = memory::dims;

class OneDnnKernel final : public ExpertKernel {
 public:
  std::string name() const override { return "onednn"; }
  bool supports(WeightDtype d) const override { return d == WeightDtype::kBf16; }

  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool* pool) override {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    const OmpThreads threads(pool ? pool->threads() : 1);
    Prims& p = prims(H, I, tokens, threads.count);
    xb_.resize(size_t(tokens * H));
    for (int64_t i = 0; i < tokens * H; ++i) xb_[size_t(i)] = to_bf16(x[i]);
    g_.resize(size_t(tokens * I));
    u_.resize(size_t(tokens * I));
    hb_.resize(size_t(tokens * I));
    y_.resize(size_t(tokens * H));
    auto mem = [&](const memory::desc& d, const void* ptr) {
      return memory(d, eng_, const_cast<void*>(ptr));
    };
    const memory xm = mem(p.x, xb_.data());
    p.gate_up.execute(strm_, {{DNNL_ARG_SRC, xm},
                              {DNNL_ARG_WEIGHTS, mem(p.w_gu, e.gate.data())},
                              {DNNL_ARG_DST, mem(p.h, g_.data())}});
    p.gate_up.execute(strm_, {{DNNL_ARG_SRC, xm},
                              {DNNL_ARG_WEIGHTS, mem(p.w_gu, e.up.data())},
                              {DNNL_ARG_DST, mem(p.h, u_.data())}});
    strm_.wait();
    for (size_t i = 0; i < g_.size(); ++i)
      hb_[i] = to_bf16(g_[i] / (1.0f + std::exp(-g_[i])) * u_[i]);
    p.down.execute(strm_, {{DNNL_ARG_SRC, mem(p.hb, hb_.data())},
                           {DNNL_ARG_WEIGHTS, mem(p.w_d, e.down.data())},
                           {DNNL_ARG_DST, mem(p.y, y_.data())}});
    strm_.wait();
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t c = 0; c < H; ++c) out[t * H + c] += w[t] * y_[size_t(t * H + c)];
    }
  }

 private:
  struct Prims {
    memory::desc x, w_gu, h, hb, w_d, y;
    dnnl::matmul gate_up, down;
  };

  // The calling thread's OpenMP thread count for the scope of a task.
  struct OmpThreads {
    int count, saved;
    explicit OmpThreads(int n) : count(n), saved(omp_get_max_threads()) { omp_set_num_threads(n); }
    ~OmpThreads() { omp_set_num_threads(saved); }
    OmpThreads(const OmpThreads&) = delete;
    OmpThreads& operator=(const OmpThreads&) = delete;
  };

  Prims& prims(int64_t H, int64_t I, int64_t T, int threads) {
    auto key = std::make_tuple(H, I, T, threads);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    using dt = memory::data_type;
    using tag = memory::format_tag;
    Prims p;
    p.x = memory::desc(Dims{T, H}, dt::bf16, tag::ab);
    p.w_gu = memory::desc(Dims{H, I}, dt::bf16, tag::ba);
    p.h = memory::desc(Dims{T, I}, dt::f32, tag::ab);
    p.hb = memory::desc(Dims{T, I}, dt::bf16, tag::ab);
    p.w_d = memory::desc(Dims{I, H}, dt::bf16, tag::ba);
    p.y = memory::desc(Dims{T, H}, dt::f32, tag::ab);
    p.gate_up =
        dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(p.x, p.w_gu, p.h), eng_));
    p.down = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(p.hb, p.w_d, p.y), eng_));
    return cache_.emplace(key, std::move(p)).first->second;
  }

  dnnl::engine eng_{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm_{eng_};
  std::map<std::tuple<int64_t, int64_t, int64_t, int>, Prims> cache_;
  std::vector<uint16_t> xb_, hb_;
  std::vector<float> g_, u_, y_;
};

}  // namespace

std::unique_ptr<ExpertKernel> make_onednn_kernel() {
  return std::make_unique<OneDnnKernel>();
}

bool onednn_bf16_available() {
  // The kernel's own primitive, on a small shape: oneDNN 2.6 implements bf16
  // matmul only with AVX-512 (a CPU with AVX2 alone gets "could not create a
  // primitive descriptor iterator").
  static const bool ok = [] {
    try {
      using dt = memory::data_type;
      using tag = memory::format_tag;
      const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
      const memory::desc x(Dims{1, 32}, dt::bf16, tag::ab), w(Dims{32, 16}, dt::bf16, tag::ba),
          y(Dims{1, 16}, dt::f32, tag::ab);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(x, w, y), eng);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return ok;
}

}  // namespace moebench
