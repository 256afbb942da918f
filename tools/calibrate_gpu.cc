// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The GPU half of moebench calibrate (tools/calibrate_gpu.h).

#include "tools/calibrate_gpu.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include <fmt/format.h>

#include "core/engine/metrics.h"
#include "core/experiment/experiment.h"
#include "core/util/error.h"
#include "kernels/cuda/gpu_experts.h"
#include "kernels/cuda/gpu_layer.h"
#include "kernels/cuda/gpu_query.h"
#include "tools/calibrate_load.h"

namespace moebench::tools {

namespace {

// The other lanes' load for one table (nullptr unless --under-load).
std::unique_ptr<LaneLoad> load_for(const GpuCalibrateOptions& opt, const ModelSpec& m, bool cpu,
                                   bool link, bool gpu) {
  if (!opt.under_load) return nullptr;
  LaneLoad::Options o;
  o.model = m;
  o.cpu = cpu;
  o.link = link;
  o.gpu = gpu;
  o.threads = opt.cpu_threads;
  o.weights_gib = opt.weights_gib;
  return std::make_unique<LaneLoad>(o);
}

// Stops a load and says what it did.
void report(std::unique_ptr<LaneLoad>& load, const char* table) {
  if (!load) return;
  const std::string what = load->describe();
  const LaneLoad::Counts c = load->stop();
  fmt::print(stderr, "  {} under load ({}): {} CPU tasks, {} copies, {} GPU tasks beside it\n",
             table, what, c.cpu_tasks, c.copies, c.gpu_tasks);
  load.reset();
}

// gpu-expert and h2d-expert tables of one model and dtype.
void expert_tables(HardwareProfile& h, const ModelSpec& m, WeightDtype d,
                   const GpuCalibrateOptions& opt) {
  const ExpertShape s{m.hidden_size, m.expert_intermediate};
  const int slots = 64, blobs = 8;
  const int64_t T0 = opt.tokens.back();
  gpu::GpuExperts g({s, d, slots, T0});
  std::vector<std::shared_ptr<uint8_t>> host;
  for (int i = 0; i < blobs; ++i) {
    host.push_back(gpu::pinned_bytes(g.blob().bytes));
    g.blob().write(ExpertWeights::random(s, d, uint64_t(i + 1)), host.back().get());
  }
  for (int i = 0; i < slots; ++i) g.load(i, host[size_t(i % blobs)].get());
  std::vector<float> x(size_t(T0 * s.hidden), 0.01f), w(size_t(T0), 1.0f), out(x.size(), 0.0f);
  g.put_activations(x.data(), w.data(), out.data(), T0);
  g.synchronize();
  using Lane = gpu::GpuExperts::Lane;
  std::vector<double> us;
  auto load = load_for(opt, m, true, true, false);
  for (int64_t T : opt.tokens) {
    for (int i = 0; i < slots; ++i) g.compute(i, T);  // untimed pass
    std::vector<double> rounds;
    for (int r = 0; r < opt.repeats; ++r) {
      const int a = g.record(Lane::kCompute);
      for (int i = 0; i < slots; ++i) g.compute(i, T);
      const int b = g.record(Lane::kCompute);
      rounds.push_back(g.elapsed_ms(a, b) * 1e3 / slots);
    }
    g.clear_events();
    us.push_back(mean(rounds));
  }
  report(load, "gpu-expert");
  load = load_for(opt, m, true, false, true);
  std::vector<double> copy;
  for (int r = 0; r < opt.repeats + 1; ++r) {
    const int a = g.record(Lane::kH2D);
    for (int i = 0; i < 32; ++i) g.load(i % slots, host[size_t(i % blobs)].get());
    const int b = g.record(Lane::kH2D);
    if (r > 0) copy.push_back(g.elapsed_ms(a, b) * 1e3 / 32);
  }
  g.clear_events();
  report(load, "h2d-expert");
  const std::string dn = to_string(d);
  replace_table(h, CostTable{"gpu-expert", m.name, dn,
                             std::vector<double>(opt.tokens.begin(), opt.tokens.end()), us});
  replace_table(h, CostTable{"h2d-expert", m.name, dn, {1.0}, {mean(copy)}});
  fmt::print(stderr, "  gpu-expert {} {} us: {}\n  h2d-expert {:.1f} us ({} bytes)\n", m.name, dn,
             fmt::join(us, " "), mean(copy), g.blob().bytes);
}

// Mean host time of one call of `run(layer)` over back-to-back calls on
// rotating layers (a warm pass first), us.
double host_timed_us(gpu::GpuLayer& g, int repeats, const std::function<void(int)>& run) {
  const int calls = 4;
  for (int i = 0; i < calls; ++i) run(i);
  g.synchronize();
  std::vector<double> rounds;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) run(i);
    g.synchronize();
    rounds.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        calls);
  }
  return mean(rounds);
}

// gpu-layer (one table per context), gpu-shared, gpu-dense-ffn and
// gpu-lm-head tables of one model (tools/calibrate_gpu.h).
void layer_tables(HardwareProfile& h, const ModelSpec& m, const GpuCalibrateOptions& opt) {
  gpu::GpuLayer::Options o;
  o.shape = gpu::layer_shape(m);
  o.max_tokens = opt.tokens.back();
  o.max_sequences = 64;
  o.max_context = *std::max_element(opt.contexts.begin(), opt.contexts.end());
  gpu::GpuLayer g(o, nullptr);
  auto load = load_for(opt, m, true, true, false);
  const std::vector<double> tokens(opt.tokens.begin(), opt.tokens.end());
  auto by_tokens = [&](const std::function<void(int, int64_t)>& run) {
    std::vector<double> us;
    for (int64_t T : opt.tokens)
      us.push_back(host_timed_us(g, opt.repeats, [&](int l) { run(l, T); }));
    return us;
  };
  for (int64_t C : opt.contexts) {
    const std::vector<double> us = by_tokens(
        [&](int l, int64_t T) { g.attention(l, T, std::min<int64_t>(T, o.max_sequences), C); });
    CostTable t{"gpu-layer", m.name, "*", tokens, us};
    t.context = C;
    replace_table(h, t);
    fmt::print(stderr, "  gpu-layer {} context {} us: {}\n", m.name, C, fmt::join(us, " "));
  }
  auto table = [&](const char* lane, const char* dtype,
                   const std::function<void(int, int64_t)>& run) {
    const std::vector<double> us = by_tokens(run);
    replace_table(h, CostTable{lane, m.name, dtype, tokens, us});
    fmt::print(stderr, "  {} {} us: {}\n", lane, m.name, fmt::join(us, " "));
  };
  if (o.shape.shared_inter > 0)
    table("gpu-shared", "bf16", [&](int l, int64_t T) { g.shared_experts(l, T); });
  if (o.shape.dense_inter > 0)
    table("gpu-dense-ffn", "*", [&](int l, int64_t T) { g.dense_ffn(l, T); });
  if (o.shape.vocab > 0) table("gpu-lm-head", "*", [&](int, int64_t T) { g.lm_head(T); });
  report(load, "gpu-layer, gpu-shared, gpu-dense-ffn, gpu-lm-head");
}

}  // namespace

void calibrate_gpu(HardwareProfile& h, const GpuCalibrateOptions& opt, std::ostringstream& notes) {
  if (!gpu::available()) {
    throw Error(fmt::format(
        "calibrate --hardware: '{}' has {} GPU(s); measuring its GPU tables expected a CUDA "
        "device, found {}",
        h.name, h.gpu.count, gpu::describe_device()));
  }
  if (opt.tokens.empty()) throw Error("calibrate --gpu-tokens: expected at least one count");
  if (opt.contexts.empty() || *std::min_element(opt.contexts.begin(), opt.contexts.end()) < 1)
    throw Error("calibrate --gpu-contexts: expected at least one context >= 1");
  const auto paths = ConfigPaths::defaults();
  const std::string device = gpu::describe_device();
  fmt::print(stderr, "GPU: {}\n", device);
  for (const std::string& mname : opt.models) {
    const ModelSpec m = load_model(mname, paths);
    for (const std::string& dname : opt.dtypes) expert_tables(h, m, parse_weight_dtype(dname), opt);
    layer_tables(h, m, opt);
  }
  std::vector<int64_t> sizes = {4096};
  for (int64_t b = 16LL << 20; b <= (256LL << 20); b *= 2) sizes.push_back(b);
  const auto copies = gpu::measure_copies(sizes, opt.repeats);
  double h2d = 0, d2h = 0;
  for (size_t i = 1; i < copies.size(); ++i) {
    h2d = std::max(h2d, double(copies[i].bytes) / (copies[i].h2d_us * 1e3));
    d2h = std::max(d2h, double(copies[i].bytes) / (copies[i].d2h_us * 1e3));
  }
  const gpu::LaunchCost launch = gpu::measure_launch(50);
  const double hbm = gpu::measure_hbm_read_gbps(1LL << 30, opt.repeats);
  const double tflops = gpu::measure_gemm_tflops(8192, 5);
  const GpuQuery q = query_gpus();
  h.gpu.model = q.gpus.front().name;
  h.gpu.mem_gib = double(q.gpus.front().mem_bytes) / double(1LL << 30);
  h.gpu.kernel_launch_us = launch.enqueue_us;
  h.link.h2d_gbps = h2d;
  h.link.d2h_gbps = d2h;
  h.link.latency_us = std::min(copies[0].h2d_us, copies[0].d2h_us);
  notes
      << fmt::format("# GPU: {}.\n", device)
      << fmt::format(
             "# [[table]] gpu-expert: mean of {} rounds of one routed expert on the GPU (cuBLAS "
             "bf16\n# GEMMs, int8/int4 dequantised to bf16 first; kernels/cuda/gpu_experts.h), "
             "weights in HBM;\n# h2d-expert: one expert's copy from pinned host memory into a "
             "device slot.\n",
             opt.repeats)
      << fmt::format(
             "# [link] h2d_gbps / d2h_gbps: best pinned copy of 16-256 MiB; latency_us: a 4 KiB "
             "pinned copy\n# (H2D {:.1f} us, D2H {:.1f} us). [gpu] kernel_launch_us: host "
             "enqueue cost of one launch\n# (launch to completion of an empty kernel: {:.1f} "
             "us).\n",
             copies[0].h2d_us, copies[0].d2h_us, launch.round_trip_us)
      << fmt::format(
             "# Measured, not used by the cost model: HBM read {:.0f} GB/s (a summing kernel over "
             "1 GiB),\n# bf16 GEMM 8192^3 {:.0f} TFLOP/s (cuBLAS). [gpu] hbm_gbps and "
             "peak_tflops_bf16 stay the datasheet's.\n",
             hbm, tflops)
      << fmt::format(
             "# [[table]] gpu-layer: a block's attention, norms and router (kernels/cuda/"
             "gpu_layer.h),\n# one table per context ({}), each new token its own sequence up "
             "to 64 (an upper\n# bound on a prefill's KV read); gpu-shared, gpu-dense-ffn, "
             "gpu-lm-head: bf16 weights. Mean host\n# time of {} rounds of back-to-back calls "
             "(launches included).\n",
             fmt::join(opt.contexts, ", "), opt.repeats);
  if (opt.under_load) {
    notes << fmt::format(
        "# Under load (--under-load, tools/calibrate_load.h): gpu-expert and the gpu-layer "
        "tables measured\n# while CPU experts ({} threads) and expert copies ran, h2d-expert "
        "while CPU and GPU experts ran.\n",
        opt.cpu_threads);
  }
}

}  // namespace moebench::tools
