// Expert FFN time by tokens per expert, for each kernel this CPU can run
// and each weight dtype it supports, on a DeepSeek-V3 expert shape (hidden
// 7168, inter 2048: 88.1 MB of weights in bf16, 46.8 MB in int8 and
// 24.8 MB in int4 with their group scales). Eight distinct experts are
// cycled so the weights come from memory, not the caches. Counters:
// weight_GBps (weight bytes, codes and scales, read per second) and TFLOPs
// (2 x 3 x hidden x inter x tokens per second). Single-threaded kernels for
// now.
//
//     build/bin/bench_expert --benchmark_format=json
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "kernels/cpu/expert_ffn.h"

namespace moebench {
namespace {

const std::vector<ExpertWeights>& experts(WeightDtype dt) {
  static std::map<WeightDtype, std::vector<ExpertWeights>> cache;
  auto& v = cache[dt];
  if (v.empty()) {
    for (uint64_t i = 0; i < 8; ++i) v.push_back(ExpertWeights::random({7168, 2048}, dt, i + 1));
  }
  return v;
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
    k->run(es[i++ % es.size()], x.data(), T, w.data(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
  const double bytes = double(es[0].weight_bytes());
  const double flops = 2.0 * 3.0 * double(s.hidden) * double(s.inter) * double(T);
  state.counters["weight_GBps"] =
      benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["TFLOPs"] =
      benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
}

int register_all() {
  for (const auto& name : expert_kernels_available()) {
    if (name == "reference") continue;  // fp64 loops: far too slow at this shape
    const auto k = make_expert_kernel(name);
    for (WeightDtype dt : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
      if (!k->supports(dt)) continue;
      benchmark::RegisterBenchmark(("BM_ExpertFfn/" + name + "/" + dtype_name(dt)).c_str(),
                                   BM_ExpertFfn, name, dt)
          ->Arg(1)
          ->Arg(2)
          ->Arg(4)
          ->Arg(16)
          ->Arg(64)
          ->Arg(256)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace
}  // namespace moebench

BENCHMARK_MAIN();
