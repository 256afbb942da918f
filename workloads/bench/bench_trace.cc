// Trace generation and reading speed (issue 3 performance targets):
//   generation at DeepSeek-V3 shape (58 layers, 256 experts, top-8,
//   H_trace = 256): target >= 20,000 tokens/s on one core;
//   reading a trace file: at least the disk's sequential speed (the ratio
//   against a plain read() of the same file is reported).

#include <fcntl.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include "core/trace/trace.h"
#include "workloads/synthetic/generator.h"

namespace moebench {
namespace {

std::unique_ptr<SyntheticSource> make_source(const std::string& model, int64_t tokens, int64_t h) {
  const auto paths = ConfigPaths::defaults();
  const ModelSpec m = load_model(model, paths);
  SyntheticLayout lay;
  lay.sequences.assign(1, SequenceInfo{0, tokens});
  lay.seed = 1;
  lay.h_trace = h;
  return std::make_unique<SyntheticSource>(m, load_generator("auto", m, paths), lay);
}

void generate(benchmark::State& state, const std::string& model, unsigned fields) {
  const int64_t tokens = 2048;
  auto src = make_source(model, tokens, 256);
  TokenRecord rec;
  int64_t n = 0;
  for (auto _ : state) {
    auto r = src->open(0, fields);
    while (r->next(rec)) ++n;
    benchmark::DoNotOptimize(rec.ids.data());
  }
  state.counters["tokens_per_s"] = benchmark::Counter(double(n), benchmark::Counter::kIsRate);
  state.counters["target_ratio"] = benchmark::Counter(double(n) / 20000.0, benchmark::Counter::kIsRate);
}

void BM_GenerateDeepSeekV3_IdsOnly(benchmark::State& s) { generate(s, "deepseek-v3", kIdsWeights); }
void BM_GenerateDeepSeekV3_WithProbs(benchmark::State& s) { generate(s, "deepseek-v3", kProbs); }
void BM_GenerateDeepSeekV3_All(benchmark::State& s) { generate(s, "deepseek-v3", kAllFields); }
void BM_GenerateMixtral_All(benchmark::State& s) { generate(s, "mixtral-8x7b", kAllFields); }
BENCHMARK(BM_GenerateDeepSeekV3_IdsOnly)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GenerateDeepSeekV3_WithProbs)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GenerateDeepSeekV3_All)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GenerateMixtral_All)->Unit(benchmark::kMillisecond);

// Reads every token (ids, weights, probabilities, gate inputs) of a
// DeepSeek-V3 trace file, and compares with read() of the same file.
void BM_ReadTraceFile(benchmark::State& state) {
  const std::string path = "/tmp/moebench_bench_v3.safetensors";
  {
    auto src = make_source("deepseek-v3", 1024, 256);
    write_trace(*src, path, {});
  }
  auto file = open_trace_file(path);
  const double bytes = double(std::filesystem::file_size(path));
  // Raw sequential read speed of the same (page-cached) file.
  std::vector<char> buf(1 << 20);
  const auto t0 = std::chrono::steady_clock::now();
  int rounds = 0;
  for (; rounds < 5; ++rounds) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    while (::read(fd, buf.data(), buf.size()) > 0) {
    }
    ::close(fd);
  }
  const double raw_gbps = bytes * rounds / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e9;
  TokenRecord rec;
  double read_bytes = 0;
  for (auto _ : state) {
    auto r = file->open(0, kAllFields);
    while (r->next(rec)) benchmark::DoNotOptimize(rec.gate_input.data());
    read_bytes += bytes;
  }
  state.counters["trace_read_GBps"] = benchmark::Counter(read_bytes / 1e9, benchmark::Counter::kIsRate);
  state.counters["raw_read_GBps"] = raw_gbps;
  std::filesystem::remove(path);
}
BENCHMARK(BM_ReadTraceFile)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace moebench

BENCHMARK_MAIN();
