// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/probe.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/util/cpu_info.h"
#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/thread_pool.h"

namespace moebench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Runs f(thread_index) on n threads started together; returns the wall time
// of the slowest.
template <class F>
double run_parallel(int n, F&& f) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) {
    ts.emplace_back([&, i] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      f(i);
    });
  }
  while (ready.load() < n) {
  }
  const auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& t : ts) t.join();
  return seconds_since(t0);
}

// ---- memory bandwidth: sum of a large array, vectorised by the compiler.
__attribute__((noinline)) double sum_floats(const float* p, size_t n) {
  float acc[16] = {0};
  for (size_t i = 0; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; ++j) acc[j] += p[i + j];
  }
  double s = 0;
  for (float a : acc) s += a;
  return s;
}

// ---- STREAM-like ceilings. The single-stream sum above reads
// 21.6-23.5 GB/s on a Xeon VM where STREAM's triad reads 30.0-30.5: one
// stream per thread does not keep enough misses in flight. A triad a = b +
// s c (STREAM's counting: two reads and one write of 8 bytes per element,
// the write-allocate read not counted) and a read of four streams per
// thread (eight independent accumulators, vector loads), each compiled for
// the widest ISA the kernels use and run where the CPU has it.
__attribute__((target("avx512f"), noinline)) void triad_avx512(double* a, const double* b,
                                                               const double* c, size_t n,
                                                               double s) {
  const __m512d sv = _mm512_set1_pd(s);
  for (size_t i = 0; i + 8 <= n; i += 8) {
    _mm512_storeu_pd(a + i, _mm512_fmadd_pd(sv, _mm512_loadu_pd(c + i), _mm512_loadu_pd(b + i)));
  }
}
__attribute__((target("avx2,fma"), noinline)) void triad_avx2(double* a, const double* b,
                                                              const double* c, size_t n, double s) {
  const __m256d sv = _mm256_set1_pd(s);
  for (size_t i = 0; i + 4 <= n; i += 4) {
    _mm256_storeu_pd(a + i, _mm256_fmadd_pd(sv, _mm256_loadu_pd(c + i), _mm256_loadu_pd(b + i)));
  }
}
__attribute__((noinline)) void triad_scalar(double* a, const double* b, const double* c, size_t n,
                                            double s) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

// The four quarters of p[0, n) read at once (n a multiple of 128).
__attribute__((target("avx512f"), noinline)) double read4_avx512(const float* p, size_t n) {
  const size_t q = n / 4;
  __m512 acc[8];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (size_t i = 0; i + 32 <= q; i += 32) {
    for (int s = 0; s < 4; ++s) {
      acc[2 * s] = _mm512_add_ps(acc[2 * s], _mm512_loadu_ps(p + s * q + i));
      acc[2 * s + 1] = _mm512_add_ps(acc[2 * s + 1], _mm512_loadu_ps(p + s * q + i + 16));
    }
  }
  for (int k = 1; k < 8; ++k) acc[0] = _mm512_add_ps(acc[0], acc[k]);
  float out[16];
  _mm512_storeu_ps(out, acc[0]);
  double r = 0;
  for (float v : out) r += v;
  return r;
}
__attribute__((target("avx2"), noinline)) double read4_avx2(const float* p, size_t n) {
  const size_t q = n / 4;
  __m256 acc[8];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (size_t i = 0; i + 16 <= q; i += 16) {
    for (int s = 0; s < 4; ++s) {
      acc[2 * s] = _mm256_add_ps(acc[2 * s], _mm256_loadu_ps(p + s * q + i));
      acc[2 * s + 1] = _mm256_add_ps(acc[2 * s + 1], _mm256_loadu_ps(p + s * q + i + 8));
    }
  }
  for (int k = 1; k < 8; ++k) acc[0] = _mm256_add_ps(acc[0], acc[k]);
  float out[8];
  _mm256_storeu_ps(out, acc[0]);
  double r = 0;
  for (float v : out) r += v;
  return r;
}

// ---- FMA peaks. Ten independent accumulators hide the FMA latency.
__attribute__((target("avx512f"))) double fma_avx512(int64_t iters) {
  __m512 a[10];
  const __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
  for (int i = 0; i < 10; ++i) a[i] = _mm512_set1_ps(float(i));
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 10; ++i) a[i] = _mm512_fmadd_ps(a[i], x, y);
  }
  __m512 s = a[0];
  for (int i = 1; i < 10; ++i) s = _mm512_add_ps(s, a[i]);
  float out[16];
  _mm512_storeu_ps(out, s);
  double r = 0;
  for (float v : out) r += v;
  return r;
}
constexpr double kFlopsPerIterAvx512 = 10 * 16 * 2;

__attribute__((target("avx2,fma"))) double fma_avx2(int64_t iters) {
  __m256 a[10];
  const __m256 x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(0.9999999f);
  for (int i = 0; i < 10; ++i) a[i] = _mm256_set1_ps(float(i));
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 10; ++i) a[i] = _mm256_fmadd_ps(a[i], x, y);
  }
  float out[8];
  __m256 s = a[0];
  for (int i = 1; i < 10; ++i) s = _mm256_add_ps(s, a[i]);
  _mm256_storeu_ps(out, s);
  double r = 0;
  for (float v : out) r += v;
  return r;
}
constexpr double kFlopsPerIterAvx2 = 10 * 8 * 2;

// vdpbf16ps: 32 bf16 products summed into 16 fp32 lanes = 64 FLOP per instruction.
// Independent accumulator chains of the dot-product loops: enough to hide
// the instruction's latency. With 10 the probe read 891 GFLOP/s of bf16
// while avx512-bf16-gemm reached 925 (2026-11-23); a standalone loop on
// this machine (-O3, 2 threads) gave 850-880 with 10 chains, about 970 with
// 12, 1030-1050 with 16 and about 800 with 24 (too many live registers).
constexpr int kDotChains = 16;

__attribute__((target("avx512f,avx512bf16"))) double dot_bf16(int64_t iters) {
  __m512 a[kDotChains];
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3f80);
  for (int i = 0; i < kDotChains; ++i) a[i] = _mm512_setzero_ps();
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kDotChains; ++i) a[i] = _mm512_dpbf16_ps(a[i], x, y);
  }
  __m512 s = a[0];
  for (int i = 1; i < kDotChains; ++i) s = _mm512_add_ps(s, a[i]);
  float out[16];
  _mm512_storeu_ps(out, s);
  double r = 0;
  for (float v : out) r += v;
  return r;
}
constexpr double kFlopsPerIterBf16 = kDotChains * 64;

// vpdpbusd: 64 u8 x s8 products summed into 16 int32 lanes = 128 ops per instruction.
__attribute__((target("avx512f,avx512vnni"))) double dot_int8(int64_t iters) {
  __m512i a[kDotChains];
  const __m512i x = _mm512_set1_epi8(1), y = _mm512_set1_epi8(1);
  for (int i = 0; i < kDotChains; ++i) a[i] = _mm512_setzero_si512();
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kDotChains; ++i) a[i] = _mm512_dpbusd_epi32(a[i], x, y);
  }
  __m512i s = a[0];
  for (int i = 1; i < kDotChains; ++i) s = _mm512_add_epi32(s, a[i]);
  int32_t out[16];
  _mm512_storeu_si512(out, s);
  double r = 0;
  for (int32_t v : out) r += v;
  return r;
}
constexpr double kOpsPerIterInt8 = kDotChains * 128;

// vpmaddubsw (AVX2): 32 u8 x s8 products summed in pairs into 16 int16
// lanes = 64 ops per instruction, each into its own 16-bit accumulator
// (vpaddw): the int8 product rate of a CPU without VNNI, the ceiling of
// avx2-gemm's int8 and int4 loops (which also widen the sums to 32 bits).
constexpr int kAvx2DotChains = 12;  // latency about 3-4 cycles, two per cycle

__attribute__((target("avx2"))) double dot_int8_avx2(int64_t iters) {
  __m256i a[kAvx2DotChains];
  const __m256i x = _mm256_set1_epi8(1), y = _mm256_set1_epi8(1);
  for (int i = 0; i < kAvx2DotChains; ++i) a[i] = _mm256_setzero_si256();
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kAvx2DotChains; ++i)
      a[i] = _mm256_add_epi16(a[i], _mm256_maddubs_epi16(x, y));
  }
  __m256i s = a[0];
  for (int i = 1; i < kAvx2DotChains; ++i) s = _mm256_add_epi16(s, a[i]);
  int16_t out[16];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), s);
  double r = 0;
  for (int16_t v : out) r += v;
  return r;
}
constexpr double kOpsPerIterInt8Avx2 = kAvx2DotChains * 64;

// TDPBF16PS on four C tiles from two A and two B tiles (all 16 x 64 bytes,
// zero: the rate does not depend on the values): 16 x 16 x 32 products =
// 16384 FLOP each, four independent chains.
// The four C tiles chained on two A and two B tiles: TDPBF16PS multiplies
// 16 x 16 x 32 bf16 (16384 FLOP), TDPBSSD 16 x 16 x 64 int8 (32768 ops).
template <bool kInt8>
__attribute__((target("amx-tile,amx-bf16,amx-int8"))) double dot_amx(int64_t iters) {
  amx::TileScope tiles;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
  for (int64_t it = 0; it < iters; ++it) {
    if constexpr (kInt8) {
      _tile_dpbssd(0, 4, 6);
      _tile_dpbssd(1, 4, 7);
      _tile_dpbssd(2, 5, 6);
      _tile_dpbssd(3, 5, 7);
    } else {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  alignas(64) int32_t c[256];
  _tile_stored(0, c, 64);
  return double(c[0]);
}
constexpr double kFlopsPerIterAmxBf16 = 4 * 16384;
constexpr double kOpsPerIterAmxInt8 = 4 * 32768;

template <class K>
double peak(int threads, int repeats, K kernel, double per_iter, int64_t iters = 20'000'000) {
  std::atomic<double> sink{0};
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const double t = run_parallel(threads, [&](int) { sink.store(kernel(iters)); });
    best = std::max(best, per_iter * double(iters) * threads / t / 1e9);
  }
  return best;
}

}  // namespace

ProbeResult run_probe(const ProbeOptions& opt) {
  const CpuInfo& cpu = cpu_info();
  ProbeResult r;
  r.threads = opt.threads > 0 ? opt.threads : std::max(1, cpu.logical_cpus);

  // Bandwidth: each thread sums its own slice (first touched by itself).
  const size_t total = static_cast<size_t>(opt.bandwidth_gib * 1024 * 1024 * 1024) / sizeof(float);
  const size_t per = total / size_t(r.threads) / 16 * 16;
  std::vector<float*> bufs(r.threads);
  run_parallel(r.threads, [&](int i) {
    bufs[i] = static_cast<float*>(std::aligned_alloc(64, per * sizeof(float)));
    for (size_t k = 0; k < per; ++k) bufs[i][k] = 1.0f;
  });
  std::atomic<double> sink{0};
  for (int rep = 0; rep < opt.repeats; ++rep) {
    const double t = run_parallel(r.threads, [&](int i) { sink.store(sum_floats(bufs[i], per)); });
    r.read_bw_gbps = std::max(r.read_bw_gbps, double(per * sizeof(float)) * r.threads / t / 1e9);
  }
  // Four streams per thread over the same slices (per is a multiple of 16;
  // the read takes whole blocks of 128 floats).
  const size_t per4 = per / 128 * 128;
  if (cpu.avx512f || cpu.avx2) {
    for (int rep = 0; rep < opt.repeats; ++rep) {
      const double t = run_parallel(r.threads, [&](int i) {
        sink.store(cpu.avx512f ? read4_avx512(bufs[i], per4) : read4_avx2(bufs[i], per4));
      });
      r.read4_bw_gbps =
          std::max(r.read4_bw_gbps, double(per4 * sizeof(float)) * r.threads / t / 1e9);
    }
  }
  for (float* b : bufs) std::free(b);
  // STREAM's triad over three arrays per thread of a third of the buffer each.
  {
    const size_t n = total * sizeof(float) / sizeof(double) / 3 / size_t(r.threads) / 8 * 8;
    std::vector<double*> abc(size_t(3 * r.threads));
    run_parallel(r.threads, [&](int i) {
      for (int k = 0; k < 3; ++k) {
        double* d = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
        for (size_t j = 0; j < n; ++j) d[j] = 1.0 + double(k);
        abc[size_t(3 * i + k)] = d;
      }
    });
    for (int rep = 0; rep < opt.repeats; ++rep) {
      const double t = run_parallel(r.threads, [&](int i) {
        double* a = abc[size_t(3 * i)];
        const double* b = abc[size_t(3 * i + 1)];
        const double* c = abc[size_t(3 * i + 2)];
        if (cpu.avx512f) {
          triad_avx512(a, b, c, n, 3.0);
        } else if (cpu.avx2 && cpu.fma) {
          triad_avx2(a, b, c, n, 3.0);
        } else {
          triad_scalar(a, b, c, n, 3.0);
        }
      });
      r.triad_bw_gbps =
          std::max(r.triad_bw_gbps, 3.0 * double(n * sizeof(double)) * r.threads / t / 1e9);
    }
    for (double* d : abc) std::free(d);
  }
  r.ceiling_bw_gbps = std::max({r.read_bw_gbps, r.read4_bw_gbps, r.triad_bw_gbps});

  if (cpu.avx512f) {
    r.fp32_isa = "avx512f";
    r.fp32_gflops = peak(r.threads, opt.repeats, fma_avx512, kFlopsPerIterAvx512);
  } else if (cpu.avx2 && cpu.fma) {
    r.fp32_isa = "avx2+fma";
    r.fp32_gflops = peak(r.threads, opt.repeats, fma_avx2, kFlopsPerIterAvx2);
  } else {
    r.fp32_isa = "scalar";
  }
  if (cpu.avx512_bf16) r.bf16_gflops = peak(r.threads, opt.repeats, dot_bf16, kFlopsPerIterBf16);
  if (cpu.avx512_vnni) r.int8_gops = peak(r.threads, opt.repeats, dot_int8, kOpsPerIterInt8);
  if (cpu.avx2 && !cpu.avx512_vnni) {
    r.int8_avx2_gops = peak(r.threads, opt.repeats, dot_int8_avx2, kOpsPerIterInt8Avx2);
  }
  if (cpu.amx_tile && cpu.amx_bf16) {
    r.amx_bf16_gflops = peak(r.threads, opt.repeats, dot_amx<false>, kFlopsPerIterAmxBf16, 500'000);
  }
  if (cpu.amx_tile && cpu.amx_int8) {
    r.amx_int8_gops = peak(r.threads, opt.repeats, dot_amx<true>, kOpsPerIterAmxInt8, 500'000);
  }
  r.dispatch_us = pool_dispatch_us(r.threads, 201 * std::max(1, opt.repeats));
  return r;
}

}  // namespace moebench
