// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Simulator speed (>= 1,000,000 simulated layer-steps per
// second on one core for DeepSeek-V3 decode, 58 MoE layers x 256 experts,
// top-8, batch 1, gpu-ondemand + LRU) and the host decision time per layer
// of each registered assigner and cache policy.
//
// The routing is generated once and held in memory, so the numbers measure
// the engine (routing materialisation included), not the trace generator
// (bench_trace measures that). BM_ServingOneHourPoisson is a whole case as
// run_suite runs it (a one-hour Poisson trace at one request
// per second on DeepSeek-V2-Lite in under a minute on one core): it prints
// the simulated time over the wall time, the workload's generation included.

#include <chrono>

#include <benchmark/benchmark.h>

#include "baselines/register.h"
#include "core/engine/engine.h"
#include "core/trace/memory_source.h"
#include "harness/run/run_case.h"
#include "workloads/synthetic/generator.h"

namespace moebench {
namespace {

struct Fixture {
  ModelSpec model;
  HardwareProfile hw;
  std::unique_ptr<MemoryTraceSource> source;
  WorkloadSpec workload;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture f;
    const auto paths = ConfigPaths::defaults();
    f.model = load_model("deepseek-v3", paths);
    f.model.expert_dtype = WeightDtype::kInt4;
    f.model.dense_dtype = WeightDtype::kInt4;
    f.hw = load_hardware("smoe-rtx4090", paths);
    SyntheticLayout lay;
    lay.sequences = {{0, 4096}};
    lay.seed = 1;
    lay.h_trace = 256;
    SyntheticSource gen(f.model, load_generator("auto", f.model, paths), lay);
    f.source = std::make_unique<MemoryTraceSource>(gen.info());
    f.source->mutable_info().h_trace = 0;
    auto r = gen.open(0, kProbs);
    TokenRecord rec;
    while (r->next(rec)) f.source->add(0, rec);
    f.workload.sequences = 1;
    f.workload.batch_size = 1;
    return f;
  }();
  return f;
}

ComponentSpec comp(const std::string& kind) {
  ComponentSpec c;
  c.kind = kind;
  c.params = cfg::Value::table(Where{"<bench>"});
  return c;
}

StrategySpec spec(const std::string& assigner, const std::string& cache,
                  const std::string& placement) {
  StrategySpec s;
  s.name = assigner + "+" + cache;
  s.placement = comp(placement);
  s.assigner = comp(assigner);
  s.cache = comp(cache);
  s.prefetcher = comp("none");
  s.predictor = comp("none");
  s.deferral = comp("none");
  s.residency.slots_per_layer = 8;  // SMoE's decode cache: 8 of 256 experts per layer
  s.residency.pin_active_token = false;
  return s;
}

void run(benchmark::State& state, const StrategySpec& s, bool report_target) {
  const Fixture& f = fixture();
  int64_t layer_steps = 0;
  RunMetrics last;
  for (auto _ : state) {
    StrategyInstance st = StrategyInstance::create(s, builtin_registry());
    EngineOptions opt;
    auto r = simulate(f.model, f.hw, f.workload, st, *f.source, nullptr, opt);
    layer_steps += r.metrics.decode_tokens * f.model.moe_layers();
    last = r.metrics;
  }
  state.counters["layer_steps_per_s"] =
      benchmark::Counter(double(layer_steps), benchmark::Counter::kIsRate);
  if (report_target) {
    state.counters["target_ratio"] =
        benchmark::Counter(double(layer_steps) / 1e6, benchmark::Counter::kIsRate);
  }
  const double n = std::max<double>(1.0, double(last.decision_samples));
  state.counters["assigner_ns_per_layer"] = last.decision_ns[1] / n;
  state.counters["cache_ns_per_layer"] = last.decision_ns[2] / n;
  state.counters["decode_hit_rate"] =
      last.token_accesses[1] ? double(last.token_hits[1]) / double(last.token_accesses[1]) : 0;
}

void BM_DeepSeekV3Decode_GpuOnDemandLru(benchmark::State& s) {
  run(s, spec("gpu-ondemand", "lru", "uniform"), true);
}
BENCHMARK(BM_DeepSeekV3Decode_GpuOnDemandLru)->Unit(benchmark::kMillisecond);

// Decision time of each assigner and cache policy on the same workload.
void BM_Decisions(benchmark::State& s, std::string assigner, std::string cache,
                  std::string placement) {
  run(s, spec(assigner, cache, placement), false);
}
BENCHMARK_CAPTURE(BM_Decisions, all_cpu, "all-cpu", "none", "none")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decisions, resident, "resident", "none", "uniform")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decisions, fiddler, "fiddler", "lru", "uniform")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decisions, gpu_ondemand_lfu, "gpu-ondemand", "lfu", "uniform")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decisions, gpu_ondemand_belady, "gpu-ondemand", "belady", "uniform")
    ->Unit(benchmark::kMillisecond);

// One hour of requests arriving by a Poisson process at 1 request/s (3,600
// requests of a 128-token prompt and 32 generated tokens), DeepSeek-V2-Lite
// with int4 experts on DALI's RTX 3090 testbed, continuous batching of up to
// 16 requests; DALI's strategy (its predictor and prefetches are the costliest
// decisions per step) and llama.cpp's (a fixed placement).
void BM_ServingOneHourPoisson(benchmark::State& state, std::string strategy) {
  const std::string text =
      "strategies = [\"" + strategy +
      "\"]\n[suite]\nname = \"bench-serving\"\n[model]\npreset = "
      "\"deepseek-v2-lite\"\nexpert_dtype = \"int4\"\n[hardware]\npreset = \"dali-rtx3090\"\n"
      "[workload]\nsequences = 3600\nprompt_len = 128\ndecode_len = 32\nbatch_size = 16\n"
      "arrival = \"poisson\"\nrate = 1.0\nscheduler = \"continuous\"\n";
  const ConfigPaths paths = ConfigPaths::defaults();
  const Experiment ex = load_experiment_text(text, "bench.toml", ".", paths, nullptr);
  double simulated_s = 0, wall_s = 0, requests = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const CaseRun r = run_case(ex.cases[0], builtin_registry(), paths, EngineOptions{});
    wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    simulated_s += r.result.metrics.total_time_s;
    requests = double(r.result.metrics.requests.size());
  }
  state.counters["simulated_s"] = simulated_s / double(state.iterations());
  state.counters["wall_s"] = wall_s / double(state.iterations());
  state.counters["sim_to_wall"] = simulated_s / wall_s;
  state.counters["requests"] = requests;
  // The target: 3,600 simulated seconds in under 60 wall seconds (a ratio above 60).
  state.counters["target_ratio"] = (simulated_s / wall_s) / 60.0;
}
BENCHMARK_CAPTURE(BM_ServingOneHourPoisson, dali, "dali")->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_ServingOneHourPoisson, llamacpp, "llamacpp")
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace
}  // namespace moebench

BENCHMARK_MAIN();
