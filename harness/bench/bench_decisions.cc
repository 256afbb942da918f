// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Decision time per MoE layer of every paper strategy's components at
// DeepSeek-V3 shape (58 MoE layers x 256 experts, top-8), in decode (batch 1)
// and in a 1024-token prefill, on one core. Target: the
// components of every paper strategy decide in under 5 us per layer in
// decode. Predictions are listed apart: in the simulated systems they are
// GPU work (router or predictor matmuls), charged in simulated time.
//
//   build/bin/bench_decisions [--strategies a,b,...] [--decode-tokens N]

#include <cstdio>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "baselines/register.h"
#include "core/experiment/experiment.h"
#include "core/util/error.h"
#include "harness/run/run_case.h"

namespace moebench {
namespace {

std::string suite_text(const std::vector<std::string>& strategies, int64_t prompt, int64_t decode) {
  std::string list;
  for (const auto& s : strategies) list += (list.empty() ? "\"" : ", \"") + s + "\"";
  return fmt::format(R"(strategies = [{}]
[suite]
name = "bench-decisions"
backend = "sim"
seed = 1
[model]
preset = "deepseek-v3"
expert_dtype = "int4"
dense_dtype = "int4"
[hardware]
preset = "smoe-rtx4090"
[strategy_defaults]
residency.slots_per_layer = 8
[workload]
sequences = 1
prompt_len = {}
decode_len = {}
batch_size = 1
)",
                     list, prompt, decode);
}

struct Row {
  std::string strategy;
  double fam[6] = {0, 0, 0, 0, 0, 0};
};

std::vector<Row> measure(const std::vector<std::string>& strategies, int64_t prompt,
                         int64_t decode) {
  const auto paths = ConfigPaths::defaults();
  const Registry& reg = builtin_registry();
  const Experiment ex =
      load_experiment_text(suite_text(strategies, prompt, decode), "bench-decisions",
                           std::filesystem::current_path(), paths, &reg);
  std::vector<Row> rows;
  for (const Case& c : ex.cases) {
    EngineOptions opt;
    opt.decision_sample_every = 1;
    const CaseRun r = run_case(c, reg, paths, opt);
    const RunMetrics& m = r.result.metrics;
    Row row;
    row.strategy = c.strategy.name;
    const double n = std::max<double>(1.0, double(m.decision_samples));
    for (int f = 1; f < 6; ++f) row.fam[f] = m.decision_ns[f] / n;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace
}  // namespace moebench

int main(int argc, char** argv) {
  using namespace moebench;
  std::vector<std::string> strategies = {"ktransformers-deferral",
                                         "ktransformers-gpuexperts",
                                         "hybrimoe",
                                         "hybrimoe-code",
                                         "smoe",
                                         "smoe-flex",
                                         "dali",
                                         "dali-opt",
                                         "oracle",
                                         "gpu-ondemand",
                                         "fiddler"};
  int64_t decode_tokens = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--strategies" && i + 1 < argc) {
      strategies.clear();
      std::stringstream ss(argv[++i]);
      for (std::string s; std::getline(ss, s, ',');) strategies.push_back(s);
    } else if (a == "--decode-tokens" && i + 1 < argc) {
      decode_tokens = std::stoll(argv[++i]);
    } else {
      fmt::print(stderr, "usage: bench_decisions [--strategies a,b,...] [--decode-tokens N]\n");
      return 2;
    }
  }
  try {
    const auto dec = measure(strategies, 1, decode_tokens);
    const auto pre = measure(strategies, 1024, 1);
    fmt::print(
        "Decision time per MoE layer (ns, host, one core), DeepSeek-V3 int4 on smoe-rtx4090, 8 "
        "cache slots "
        "per layer.\n");
    fmt::print(
        "decode: 1 sequence, {} tokens after a 1-token prompt (its prefill step is in the mean)\n",
        decode_tokens);
    fmt::print(
        "prefill: one 1024-token prompt. Target: components < 5000 ns per layer in decode.\n\n");
    fmt::print("{:<26} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8} | {:>10} {:>10} {:>10}\n", "strategy",
               "assigner", "cache", "prefetch", "deferral", "decode sum", "ratio", "prefill",
               "predictor", "predictor");
    fmt::print("{:<26} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8} | {:>10} {:>10} {:>10}\n", "", "ns",
               "ns", "ns", "ns", "ns", "/5us", "sum ns", "dec. ns", "pre. ns");
    bool all_met = true;
    for (size_t i = 0; i < dec.size(); ++i) {
      const auto& d = dec[i];
      const auto& p = pre[i];
      const double sum = d.fam[1] + d.fam[2] + d.fam[3] + d.fam[5];
      const double psum = p.fam[1] + p.fam[2] + p.fam[3] + p.fam[5];
      all_met = all_met && sum < 5000.0;
      fmt::print(
          "{:<26} {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f} {:>10.0f} {:>8.3f} | {:>10.0f} {:>10.0f} "
          "{:>10.0f}\n",
          d.strategy, d.fam[1], d.fam[2], d.fam[3], d.fam[5], sum, sum / 5000.0, psum, d.fam[4],
          p.fam[4]);
    }
    fmt::print("\n{}\n",
               all_met ? "every strategy meets the 5 us decode target"
                       : "NOT MET: a strategy's decode decisions take 5 us or more per layer");
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_decisions: error: {}\n", e.what());
    return 2;
  }
}
