// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The GPU half of moebench calibrate (tools/calibrate_gpu.h).

#include "tools/calibrate_gpu.h"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "core/engine/metrics.h"
#include "core/experiment/experiment.h"
#include "core/util/error.h"
#include "kernels/cuda/gpu_experts.h"
#include "kernels/cuda/gpu_query.h"

namespace moebench::tools {

namespace {

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
  std::vector<double> copy;
  for (int r = 0; r < opt.repeats + 1; ++r) {
    const int a = g.record(Lane::kH2D);
    for (int i = 0; i < 32; ++i) g.load(i % slots, host[size_t(i % blobs)].get());
    const int b = g.record(Lane::kH2D);
    if (r > 0) copy.push_back(g.elapsed_ms(a, b) * 1e3 / 32);
  }
  g.clear_events();
  const std::string dn = to_string(d);
  replace_table(h, CostTable{"gpu-expert", m.name, dn,
                             std::vector<double>(opt.tokens.begin(), opt.tokens.end()), us});
  replace_table(h, CostTable{"h2d-expert", m.name, dn, {1.0}, {mean(copy)}});
  fmt::print(stderr, "  gpu-expert {} {} us: {}\n  h2d-expert {:.1f} us ({} bytes)\n", m.name, dn,
             fmt::join(us, " "), mean(copy), g.blob().bytes);
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
  const auto paths = ConfigPaths::defaults();
  const std::string device = gpu::describe_device();
  fmt::print(stderr, "GPU: {}\n", device);
  for (const std::string& mname : opt.models) {
    const ModelSpec m = load_model(mname, paths);
    for (const std::string& dname : opt.dtypes) expert_tables(h, m, parse_weight_dtype(dname), opt);
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
             "peak_tflops_bf16 stay the datasheet's.\n# Not measured yet: attention and the "
             "rest of a layer (gpu-layer); the roofline stays for them.\n",
             hbm, tflops);
}

}  // namespace moebench::tools
