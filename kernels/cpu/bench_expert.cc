// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Expert FFN time by tokens per expert (1 to 1024), for each kernel this
// CPU can run and each weight dtype it supports (the context names the one
// the real backend's "auto" picks), on a DeepSeek-V3 expert shape (hidden 7168,
// inter 2048: 88.1 MB of weights in bf16, 46.8 MB in int8 and 24.8 MB in
// int4 with their group scales), all threads of this process (the own
// kernels on a ThreadPool, oneDNN on its OpenMP threads). Eight distinct
// experts are cycled so the weights come from memory, not the caches.
//
// Before the kernels, the same run measures this machine's ceilings with
// `moebench probe`'s code (kernels/cpu/probe.h): sustained read bandwidth
// and the bf16 and int8 dot-product peaks, all threads; they are in the
// JSON context (probe_*). Counters per case: weight_GBps (weight bytes,
// codes and scales, per second), TFLOPs (2 x 3 x hidden x inter x tokens per
// second), bw_frac (weight_GBps / measured bandwidth) and peak_frac
// (TFLOPs / the measured peak of the dtype's dot product: AVX-512 BF16 for
// bf16, VNNI for int8 and int4; for avx2-gemm, fp32 FMA and vpmaddubsw)
// and, where the CPU has AMX, amx_frac (TFLOPs / the measured AMX bf16 tile
// peak, probe_amx_bf16_gflops, for every dtype: the tile kernels compute on
// bf16 tiles, amx-quant after dequantising int8 and int4, and the prefill
// target is a share of it).
//
//     build/bin/bench_expert --benchmark_format=json   (make bench-kernels)
//     MOEBENCH_BENCH_THREADS=1 build/bin/bench_expert   one thread
//     MOEBENCH_BENCH_EXPERTS=1 build/bin/bench_expert   one expert, reused:
//         where its weights fit in the last-level cache (int4: 24.8 MB),
//         the kernels' compute with most of the DRAM traffic taken away
//     build/bin/bench_expert --benchmark_filter=Quantise   the VNNI kernels'
//         activation quantisation alone, scalar and AVX-512
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/util/cpu_info.h"
#include "kernels/cpu/expert_ffn.h"
#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/kernel_registry.h"
#include "kernels/cpu/probe.h"
#include "kernels/cpu/thread_pool.h"

namespace moebench {
namespace {

// How many distinct experts each case cycles through: 8, or
// MOEBENCH_BENCH_EXPERTS (1-64).
int experts_cycled() {
  static const int n = [] {
    const char* env = std::getenv("MOEBENCH_BENCH_EXPERTS");
    if (!env) return 8;
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || v < 1 || v > 64) {
      std::fprintf(stderr,
                   "bench_expert: MOEBENCH_BENCH_EXPERTS: expected an integer from 1 to 64, "
                   "found '%s'\n",
                   env);
      std::exit(2);
    }
    return int(v);
  }();
  return n;
}

const std::vector<ExpertWeights>& experts(WeightDtype dt) {
  static std::map<WeightDtype, std::vector<ExpertWeights>> cache;
  auto& v = cache[dt];
  if (v.empty()) {
    for (uint64_t i = 0; i < uint64_t(experts_cycled()); ++i) {
      v.push_back(ExpertWeights::random({7168, 2048}, dt, i + 1));
      v.back().pack();  // for the packed kernels (avx512-bf16-gemm, avx512-vnni-gemm)
    }
  }
  return v;
}

int threads() {
  const char* env = std::getenv("MOEBENCH_BENCH_THREADS");
  const int n = env ? std::atoi(env) : 0;
  return n > 0 ? n : int(std::max(1u, std::thread::hardware_concurrency()));
}

ThreadPool& pool() {
  static ThreadPool p(threads());
  return p;
}

// The ceilings measured in this run (probe at registration time, before any kernel).
ProbeResult& ceilings() {
  static ProbeResult r;
  return r;
}

void BM_ExpertFfn(benchmark::State& state, const std::string& kernel, WeightDtype dt) {
  const int64_t T = state.range(0);
  const auto& es = experts(dt);
  const ExpertShape s = es[0].shape;
  auto k = make_expert_kernel(kernel);
  std::vector<float> x(size_t(T * s.hidden), 0.01f), w(size_t(T), 1.0f),
      out(size_t(T * s.hidden), 0.0f);
  size_t i = 0;
  for (auto _ : state) {
    k->run(es[i++ % es.size()], x.data(), T, w.data(), out.data(), &pool());
    benchmark::DoNotOptimize(out.data());
  }
  const double bytes = double(es[0].weight_bytes());
  const double flops = 2.0 * 3.0 * double(s.hidden) * double(s.inter) * double(T);
  using C = benchmark::Counter;
  state.counters["weight_GBps"] = C(bytes / 1e9, C::kIsIterationInvariantRate);
  state.counters["TFLOPs"] = C(flops / 1e12, C::kIsIterationInvariantRate);
  const ProbeResult& p = ceilings();
  // avx2-gemm's ceilings: fp32 FMA (its bf16 weights are widened to fp32)
  // and vpmaddubsw.
  const bool avx2 = kernel == "avx2-gemm";
  const double peak_gflops = dt == WeightDtype::kBf16 ? (avx2 ? p.fp32_gflops : p.bf16_gflops)
                                                      : (avx2 ? p.int8_avx2_gops : p.int8_gops);
  // The weight bandwidth as a fraction of the STREAM-like ceiling,
  // and of the one-stream probe the fractions were stated against before.
  if (p.ceiling_bw_gbps > 0)
    state.counters["bw_frac"] = C(bytes / 1e9 / p.ceiling_bw_gbps, C::kIsIterationInvariantRate);
  if (p.read_bw_gbps > 0)
    state.counters["bw_frac_probe"] = C(bytes / 1e9 / p.read_bw_gbps, C::kIsIterationInvariantRate);
  if (peak_gflops > 0)
    state.counters["peak_frac"] = C(flops / 1e9 / peak_gflops, C::kIsIterationInvariantRate);
  if (p.amx_bf16_gflops > 0)
    state.counters["amx_frac"] = C(flops / 1e9 / p.amx_bf16_gflops, C::kIsIterationInvariantRate);
}

// The integer kernels' first step, alone: one expert's input activations
// (tokens x hidden 7168) quantised to int8, by the scalar loop the kernels
// used until 2026-11-23 and by the vector ones they use now
// (quantise_activations_avx512 in avx512-vnni-gemm,
// quantise_activations_avx2 in avx2-gemm; the same values). It runs on the
// calling thread before the dot products start, so its time adds to every
// call.
using QuantiseFn = float (*)(const float*, int64_t, int8_t*);
void BM_QuantiseActivations(benchmark::State& state, QuantiseFn quantise) {
  const int64_t T = state.range(0), n = 7168;
  std::vector<float> x(size_t(T * n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int64_t(i % 251) - 125) * 0.01f;
  std::vector<int8_t> q(x.size());
  for (auto _ : state) {
    for (int64_t t = 0; t < T; ++t) {
      const float s = quantise(x.data() + t * n, n, q.data() + t * n);
      benchmark::DoNotOptimize(s);
    }
    benchmark::DoNotOptimize(q.data());
  }
  state.counters["ns_per_value"] = benchmark::Counter(
      double(T * n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

int register_all() {
  ProbeOptions po;
  po.threads = threads();
  po.bandwidth_gib = 1.0;
  po.repeats = 5;
  ceilings() = run_probe(po);
  const ProbeResult& p = ceilings();
  benchmark::AddCustomContext("threads", std::to_string(threads()));
  benchmark::AddCustomContext("experts_cycled", std::to_string(experts_cycled()));
  benchmark::AddCustomContext("probe_read_bw_gbps", fmt::format("{:.2f}", p.read_bw_gbps));
  benchmark::AddCustomContext("probe_read4_bw_gbps", fmt::format("{:.2f}", p.read4_bw_gbps));
  benchmark::AddCustomContext("probe_triad_bw_gbps", fmt::format("{:.2f}", p.triad_bw_gbps));
  benchmark::AddCustomContext("probe_ceiling_bw_gbps", fmt::format("{:.2f}", p.ceiling_bw_gbps));
  benchmark::AddCustomContext("probe_bf16_gflops", fmt::format("{:.1f}", p.bf16_gflops));
  benchmark::AddCustomContext("probe_int8_gops", fmt::format("{:.1f}", p.int8_gops));
  benchmark::AddCustomContext("probe_fp32_gflops", fmt::format("{:.1f}", p.fp32_gflops));
  benchmark::AddCustomContext("probe_int8_avx2_gops", fmt::format("{:.1f}", p.int8_avx2_gops));
  benchmark::AddCustomContext("probe_amx_bf16_gflops", fmt::format("{:.1f}", p.amx_bf16_gflops));
  benchmark::AddCustomContext("probe_amx_int8_gops", fmt::format("{:.1f}", p.amx_int8_gops));
  benchmark::AddCustomContext("amx",
                              p.amx_bf16_gflops > 0 ? "yes" : "no (no usable AMX on this CPU)");
  auto add = [](const std::string& label, const std::string& name, WeightDtype dt) {
    benchmark::RegisterBenchmark(("BM_ExpertFfn/" + label + "/" + dtype_name(dt)).c_str(),
                                 BM_ExpertFfn, name, dt)
        ->RangeMultiplier(2)
        ->Range(1, 1024)
        ->Arg(3)  // between the AVX-512 and AMX kernels' crossover points seen so far
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  };
  for (const auto& info : expert_kernel_registry()) {
    // Not the reference (fp64 loops: far too slow at this shape) nor the
    // switching kernels (one kernel below its switch, another above: both
    // timed already).
    if (!info.benchmarked || info.composite || !info.supported(cpu_info())) continue;
    const std::string& name = info.name;
    const auto k = make_expert_kernel(name);
    for (WeightDtype dt : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
      if (k->supports(dt)) add(name, name, dt);
    }
  }
  auto add_quantise = [](const char* name, QuantiseFn fn) {
    benchmark::RegisterBenchmark(name, BM_QuantiseActivations, fn)
        ->Arg(1)
        ->Arg(4)
        ->Unit(benchmark::kMicrosecond);
  };
  add_quantise("BM_QuantiseActivations/scalar", &quantise_activations);
  const CpuInfo& c = cpu_info();
  if (c.avx512f && c.avx512bw)
    add_quantise("BM_QuantiseActivations/avx512", &quantise_activations_avx512);
  if (c.avx2 && c.fma) add_quantise("BM_QuantiseActivations/avx2", &quantise_activations_avx2);
  // "auto" (the real backend's choice) is one of the kernels above: named
  // in the context rather than timed twice.
  for (WeightDtype dt : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
    std::string pick;
    try {
      pick = auto_expert_kernel(dt);
    } catch (const std::exception&) {
      pick = "none (no own kernel for it on this CPU)";
    }
    benchmark::AddCustomContext(std::string("auto_") + dtype_name(dt), pick);
  }
  // The kernel table itself (candidates, switching rows and their switch
  // points: what "auto" runs without a calibrated profile), which
  // analysis/kernels.py reads to set the fixed rule's pick against the
  // fastest candidate.
  benchmark::AddCustomContext("kernel_table", expert_kernel_table_json());
  return 0;
}

const int registered = register_all();

}  // namespace
}  // namespace moebench

BENCHMARK_MAIN();
