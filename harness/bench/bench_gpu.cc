// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// bench_gpu: the GPU side's measured ratios ("Benchmarks"),
// printed, never asserted:
//   1. pinned host<->device copies by size (GB/s)
//   2. one expert's H2D copy against the best pinned bandwidth of (1)
//      (target: at least 0.90)
//   3. GPU expert time by tokens: decode against the measured HBM read
//      bandwidth, prefill against the measured cuBLAS bf16 GEMM peak
//   4. a CPU expert (the real backend's kernel and threads) alone and while
//      the GPU copies experts in: how much the DMA slows the CPU's
//      memory reads, which a cost model that adds lane times misses
//   5. one decode layer run for real on three lanes at once (GPU experts,
//      CPU experts, H2D prefetches) against each lane alone: the measured
//      wall time over the longest lane (1.00 = the perfect overlap a
//      timeline of independent lanes assumes) and over the sum
// Usage: bench_gpu [--threads N] [--quick]   (N: CPU threads, default all)

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/engine/cost_model.h"
#include "core/experiment/experiment.h"
#include "core/util/cpu_info.h"
#include "core/util/error.h"
#include "harness/backend/real_cpu_executor.h"
#include "kernels/cuda/gpu_experts.h"

namespace moebench {
namespace {

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Shape {
  std::string model;
  ExpertShape s;
};

// GPU experts of one shape and dtype: `slots` slots (more bytes than the
// L2 holds, so a compute reads its weights from HBM) and `blobs` distinct
// pinned host blobs.
struct GpuSide {
  gpu::GpuExperts g;
  std::vector<std::shared_ptr<uint8_t>> blobs;
  GpuSide(ExpertShape s, WeightDtype d, int slots, int blobs_n, int64_t max_tokens)
      : g({s, d, slots, max_tokens}) {
    for (int i = 0; i < blobs_n; ++i) {
      auto p = gpu::pinned_bytes(g.blob().bytes);
      g.blob().write(ExpertWeights::random(s, d, uint64_t(i + 1)), p.get());
      blobs.push_back(p);
    }
    for (int i = 0; i < slots; ++i) g.load(i, blobs[size_t(i) % blobs.size()].get());
    g.synchronize();
  }
};

void section_copies(double& best_h2d, double& best_d2h) {
  fmt::print("\n1. Pinned copies (median of 9, event-timed)\n");
  fmt::print("{:>10} {:>12} {:>12}\n", "bytes", "H2D GB/s", "D2H GB/s");
  std::vector<int64_t> sizes;
  for (int64_t b = 64 << 10; b <= (256LL << 20); b *= 4) sizes.push_back(b);
  for (const auto& c : gpu::measure_copies(sizes, 9)) {
    const double h = double(c.bytes) / (c.h2d_us * 1e3), d = double(c.bytes) / (c.d2h_us * 1e3);
    best_h2d = std::max(best_h2d, h);
    best_d2h = std::max(best_d2h, d);
    fmt::print("{:>10} {:>12.2f} {:>12.2f}\n", c.bytes, h, d);
  }
}

void section_expert_copy(const std::vector<Shape>& shapes, double best_h2d) {
  fmt::print("\n2. One expert's H2D copy, 32 back to back from distinct pinned blobs\n");
  fmt::print("{:<18} {:<5} {:>10} {:>10} {:>9} {:>10}\n", "model", "dtype", "bytes", "us/expert",
             "GB/s", "/ pinned");
  for (const auto& sh : shapes) {
    for (WeightDtype d : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
      GpuSide side(sh.s, d, 4, 8, 1);
      std::vector<double> per;
      for (int r = 0; r < 5; ++r) {
        const int a = side.g.record(gpu::GpuExperts::Lane::kH2D);
        for (int i = 0; i < 32; ++i) side.g.load(i % 4, side.blobs[size_t(i) % 8].get());
        const int b = side.g.record(gpu::GpuExperts::Lane::kH2D);
        per.push_back(side.g.elapsed_ms(a, b) * 1e3 / 32);
      }
      const double us = median(per), gbps = double(side.g.blob().bytes) / (us * 1e3);
      fmt::print("{:<18} {:<5} {:>10} {:>10.1f} {:>9.2f} {:>10.3f}\n", sh.model, to_string(d),
                 side.g.blob().bytes, us, gbps, gbps / best_h2d);
    }
  }
}

void section_gpu_experts(const std::vector<Shape>& shapes, bool quick) {
  const double hbm = gpu::measure_hbm_read_gbps(1LL << 30, 9);
  const double peak = gpu::measure_gemm_tflops(8192, 5);
  fmt::print(
      "\n3. GPU expert time (median of rounds over 64 slots, event-timed); HBM read {:.0f} GB/s "
      "and bf16 GEMM 8192^3 {:.0f} TFLOP/s measured here\n",
      hbm, peak);
  fmt::print("{:<18} {:<5} {:>6} {:>10} {:>12} {:>10}\n", "model", "dtype", "tokens", "us",
             "weights/HBM", "TFLOP/peak");
  const std::vector<int64_t> tokens = quick ? std::vector<int64_t>{1, 64, 1024}
                                            : std::vector<int64_t>{1, 4, 16, 64, 256, 1024, 4096};
  for (const auto& sh : shapes) {
    for (WeightDtype d : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
      GpuSide side(sh.s, d, 64, 4, tokens.back());
      const int64_t T0 = tokens.back();
      std::vector<float> x(size_t(T0 * sh.s.hidden), 0.01f), w(size_t(T0), 1.0f),
          out(size_t(T0 * sh.s.hidden), 0.0f);
      side.g.put_activations(x.data(), w.data(), out.data(), T0);
      const int64_t wbytes = side.g.blob().bytes;  // what one compute reads (and dequantises)
      for (int64_t T : tokens) {
        for (int i = 0; i < 64; ++i) side.g.compute(i, T);  // warm
        std::vector<double> per;
        for (int r = 0; r < 5; ++r) {
          const int a = side.g.record(gpu::GpuExperts::Lane::kCompute);
          for (int i = 0; i < 64; ++i) side.g.compute(i, T);
          const int b = side.g.record(gpu::GpuExperts::Lane::kCompute);
          per.push_back(side.g.elapsed_ms(a, b) * 1e3 / 64);
        }
        side.g.clear_events();
        const double us = median(per);
        const double flops = 2.0 * 3.0 * double(sh.s.hidden) * double(sh.s.inter) * double(T);
        fmt::print("{:<18} {:<5} {:>6} {:>10.1f} {:>12.3f} {:>10.3f}\n", sh.model, to_string(d), T,
                   us, double(wbytes) / (us * 1e3) / hbm, flops / (us * 1e6) / peak);
      }
    }
  }
}

// A CPU expert task through the real backend's executor (its kernel,
// threads and round-robin weight buffers).
struct CpuSide {
  ModelSpec m;
  RealCpuExecutor ex;
  HardwareProfile h;
  CostModel cost;
  int64_t next = 0;
  CpuSide(const ModelSpec& model, int threads)
      : m(model),
        ex(model, opts(threads)),
        h(load_hardware("local-cpu", ConfigPaths::defaults())),
        cost(model, h) {}
  static RealCpuOptions opts(int threads) {
    RealCpuOptions o;
    o.threads = threads;
    o.weights_gib = 2.0;
    return o;
  }
  double run_us(int64_t T) {
    const int64_t i = next++;
    return ex.cpu_expert_ns(cost, int32_t(i / m.routed_experts), int32_t(i % m.routed_experts), T,
                            false) /
           1e3;
  }
};

void section_contention(const ModelSpec& m, int threads) {
  fmt::print("\n4. CPU expert ({}, bf16, {} threads) alone and while the GPU copies\n", m.name,
             threads);
  const ExpertShape s{m.hidden_size, m.expert_intermediate};
  CpuSide cpu(m, threads);
  GpuSide side(s, WeightDtype::kBf16, 8, 8, 1);
  for (int i = 0; i < 200; ++i) cpu.run_us(1);  // settle
  fmt::print("{:>6} {:>10} {:>14} {:>8}   (medians of 12 interleaved rounds of 10 tasks each)\n",
             "tokens", "alone us", "during H2D us", "ratio");
  for (int64_t T : {1, 8, 64}) {
    std::vector<double> alone, during;
    for (int r = 0; r < 12; ++r) {
      for (int i = 0; i < 10; ++i) alone.push_back(cpu.run_us(T));
      // Keep the link busy for the whole series: 80 expert loads queued
      // (over 20 ms of copying at any PCIe 5 rate), then wait for them.
      for (int i = 0; i < 80; ++i) side.g.load(i % 8, side.blobs[size_t(i) % 8].get());
      for (int i = 0; i < 10; ++i) during.push_back(cpu.run_us(T));
      side.g.synchronize();
    }
    fmt::print("{:>6} {:>10.1f} {:>14.1f} {:>8.3f}\n", T, median(alone), median(during),
               median(during) / median(alone));
  }
}

void section_layer(const ModelSpec& m, int threads) {
  const ExpertShape s{m.hidden_size, m.expert_intermediate};
  const int k = int(m.top_k), k_gpu = k / 2, k_cpu = k - k_gpu, copies = k;
  fmt::print(
      "\n5. One decode layer of {} (batch 1, top-{}, bf16): {} experts on the GPU, {} on the CPU "
      "({} threads), {} prefetch copies, each lane alone and all at once (median of 30)\n",
      m.name, k, k_gpu, k_cpu, threads, copies);
  CpuSide cpu(m, threads);
  GpuSide side(s, WeightDtype::kBf16, 64, 16, 1);
  std::vector<float> x(size_t(s.hidden), 0.01f), w(1, 1.0f), out(size_t(s.hidden), 0.0f);
  side.g.put_activations(x.data(), w.data(), out.data(), 1);
  side.g.synchronize();
  int slot = 0;
  auto gpu_lane = [&] {
    for (int i = 0; i < k_gpu; ++i) side.g.compute(slot++ % 48, 1);
  };
  auto copy_lane = [&] {
    for (int i = 0; i < copies; ++i) side.g.load(48 + i % 16, side.blobs[size_t(i) % 16].get());
  };
  auto cpu_lane = [&] {
    for (int i = 0; i < k_cpu; ++i) cpu.run_us(1);
  };
  auto timed = [&](auto&& f) {
    side.g.synchronize();
    const auto t0 = Clock::now();
    f();
    side.g.synchronize();
    return us_since(t0);
  };
  for (int i = 0; i < 20; ++i)
    timed([&] {
      gpu_lane();
      copy_lane();
      cpu_lane();
    });
  // Each lane alone, then pairs and all three at once (the GPU work and the
  // copies are enqueued first and run while this thread runs the CPU
  // experts on the pool); rounds interleave the variants.
  std::vector<double> g, c, p, gc, gp, cp, all;
  for (int r = 0; r < 30; ++r) {
    g.push_back(timed(gpu_lane));
    c.push_back(timed(cpu_lane));
    p.push_back(timed(copy_lane));
    gc.push_back(timed([&] {
      gpu_lane();
      cpu_lane();
    }));
    gp.push_back(timed([&] {
      gpu_lane();
      copy_lane();
    }));
    cp.push_back(timed([&] {
      copy_lane();
      cpu_lane();
    }));
    all.push_back(timed([&] {
      gpu_lane();
      copy_lane();
      cpu_lane();
    }));
  }
  const double G = median(g), C = median(c), P = median(p);
  fmt::print("alone: GPU experts {:.1f} us, CPU experts {:.1f} us, copies {:.1f} us\n", G, C, P);
  auto line = [](const char* what, double at_once, double longest, double sum) {
    fmt::print("{:<24} {:>9.1f} us = {:.3f} x the longest lane, {:.3f} x the sum\n", what, at_once,
               at_once / longest, at_once / sum);
  };
  line("GPU + CPU at once", median(gc), std::max(G, C), G + C);
  line("GPU + copies at once", median(gp), std::max(G, P), G + P);
  line("copies + CPU at once", median(cp), std::max(P, C), P + C);
  line("all three at once", median(all), std::max({G, C, P}), G + C + P);
}

int run(int argc, char** argv) {
  int threads = int(std::thread::hardware_concurrency());
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--quick") {
      quick = true;
    } else {
      throw Error(fmt::format("bench_gpu: expected --threads N or --quick, found '{}'", a));
    }
  }
  if (threads < 1) throw Error("bench_gpu --threads: expected a count >= 1");
  fmt::print("bench_gpu on {}; CPU {} ({} logical CPUs, {} threads used)\n", gpu::describe_device(),
             cpu_info().model, std::thread::hardware_concurrency(), threads);
  if (!gpu::available()) {
    fmt::print("no GPU here: nothing to measure\n");
    return 0;
  }
  const auto paths = ConfigPaths::defaults();
  const ModelSpec dsv2 = load_model("deepseek-v2-lite", paths);
  const ModelSpec qwen = load_model("qwen3-30b-a3b", paths);
  const std::vector<Shape> shapes = {{dsv2.name, {dsv2.hidden_size, dsv2.expert_intermediate}},
                                     {qwen.name, {qwen.hidden_size, qwen.expert_intermediate}}};
  double best_h2d = 0, best_d2h = 0;
  section_copies(best_h2d, best_d2h);
  section_expert_copy(shapes, best_h2d);
  section_gpu_experts(shapes, quick);
  section_contention(dsv2, threads);
  section_layer(dsv2, threads);
  section_layer(qwen, threads);
  return 0;
}

}  // namespace
}  // namespace moebench

int main(int argc, char** argv) {
  try {
    return moebench::run(argc, argv);
  } catch (const moebench::Error& e) {
    fmt::print(stderr, "bench_gpu: {}\n", e.what());
    return 2;
  }
}
