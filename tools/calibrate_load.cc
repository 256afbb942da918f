// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The other lanes' load while a table is measured (tools/calibrate_load.h).

#include "tools/calibrate_load.h"

#include <mutex>

#include <fmt/format.h>

#include "core/config/hardware_profile.h"
#include "core/engine/cost_model.h"
#include "core/util/error.h"
#include "harness/backend/real_cpu_executor.h"
#include "kernels/cuda/gpu_experts.h"

namespace moebench::tools {

struct LaneLoad::State {
  Options o;
  HardwareProfile hw;  // the CPU lane's cost model reads it (the real executor times for real)
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<RealCpuExecutor> cpu;
  std::unique_ptr<gpu::GpuExperts> dev;
  std::vector<std::shared_ptr<uint8_t>> blobs;
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> cpu_tasks{0}, copies{0}, gpu_tasks{0};
  std::vector<std::thread> threads;
  std::mutex error_mu;
  std::string error;
  bool stopped = false;

  void guarded(void (State::*lane)()) {
    try {
      (this->*lane)();
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> l(error_mu);
      if (error.empty()) error = e.what();
    }
  }
  void cpu_lane() {
    const int64_t E = o.model.routed_experts;
    const int64_t buffers = cpu->routed_buffers();
    for (int64_t i = 0; !stopping.load(std::memory_order_relaxed); ++i) {
      const int64_t b = i % buffers;
      cpu->cpu_expert_ns(*cost, int32_t(b / E), int32_t(b % E), 1, false);
      cpu_tasks.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // A copy into the next slot of the ring, a host wait every 8.
  void link_lane() {
    using L = gpu::GpuExperts::Lane;
    const int slots = dev->slots();
    for (int64_t i = 0; !stopping.load(std::memory_order_relaxed); ++i) {
      dev->load(int(i % slots), blobs[size_t(i) % blobs.size()].get());
      copies.fetch_add(1, std::memory_order_relaxed);
      if (i % 8 == 7) dev->host_wait(dev->record(L::kH2D));
    }
  }
  void gpu_lane() {
    using L = gpu::GpuExperts::Lane;
    const int slots = dev->slots();
    for (int64_t i = 0; !stopping.load(std::memory_order_relaxed); ++i) {
      // Not waiting for the slot's load: the copies run on their own, as
      // another expert's copy does beside a computing one.
      dev->compute(int(i % slots), 1, false);
      gpu_tasks.fetch_add(1, std::memory_order_relaxed);
      if (i % 8 == 7) dev->host_wait(dev->record(L::kCompute));
    }
  }
};

LaneLoad::LaneLoad(const Options& o) : st_(std::make_unique<State>()) {
  State& s = *st_;
  s.o = o;
  if ((o.link || o.gpu) && !gpu::available()) {
    throw Error(fmt::format("calibrate --under-load: the {} lane expected a CUDA device, found {}",
                            o.link ? "link" : "gpu", gpu::describe_device()));
  }
  if (o.cpu) {
    RealCpuOptions ro;
    ro.threads = o.threads;
    ro.weights_gib = o.weights_gib;
    s.cpu = std::make_unique<RealCpuExecutor>(o.model, ro);
    s.cost = std::make_unique<CostModel>(s.o.model, s.hw);
  }
  if (o.link || o.gpu) {
    const ExpertShape shape{o.model.hidden_size, o.model.expert_intermediate};
    s.dev = std::make_unique<gpu::GpuExperts>(
        gpu::GpuExperts::Options{shape, o.model.expert_dtype, 16, 1});
    for (int b = 0; b < 4; ++b) {
      s.blobs.push_back(gpu::pinned_bytes(s.dev->blob().bytes));
      s.dev->blob().write(ExpertWeights::random(shape, o.model.expert_dtype, uint64_t(b + 1)),
                          s.blobs.back().get());
    }
    for (int i = 0; i < s.dev->slots(); ++i) s.dev->load(i, s.blobs[size_t(i) % 4].get());
    std::vector<float> x(size_t(shape.hidden), 0.01f), w(1, 1.0f), out(x.size(), 0.0f);
    s.dev->put_activations(x.data(), w.data(), out.data(), 1);
    s.dev->synchronize();
  }
  if (o.cpu) s.threads.emplace_back([&s] { s.guarded(&State::cpu_lane); });
  if (o.link) s.threads.emplace_back([&s] { s.guarded(&State::link_lane); });
  if (o.gpu) s.threads.emplace_back([&s] { s.guarded(&State::gpu_lane); });
}

LaneLoad::~LaneLoad() {
  try {
    stop();
  } catch (...) {  // a destructor does not throw; stop() called first reports errors
  }
}

LaneLoad::Counts LaneLoad::stop() {
  State& s = *st_;
  if (!s.stopped) {
    s.stopping.store(true);
    for (auto& t : s.threads) t.join();
    if (s.dev) s.dev->synchronize();
    s.stopped = true;
  }
  if (!s.error.empty()) throw Error("calibrate --under-load: a lane failed: " + s.error);
  return {s.cpu_tasks.load(), s.copies.load(), s.gpu_tasks.load()};
}

std::string LaneLoad::describe() const {
  const Options& o = st_->o;
  std::vector<std::string> v;
  if (o.cpu) v.push_back(fmt::format("cpu ({} threads)", o.threads));
  if (o.link) v.push_back("link");
  if (o.gpu) v.push_back("gpu");
  return v.empty() ? "none" : fmt::format("{}", fmt::join(v, ", "));
}

}  // namespace moebench::tools
