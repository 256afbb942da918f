// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Every registered component, driven through the same scenarios: it must
// run without invalid decisions, account for every activation exactly once,
// and give the same result twice. A new component is covered as soon as it
// is registered; if it needs a particular base strategy, add it to base_for().

#include <optional>
#include <random>

#include <gtest/gtest.h>

#include "baselines/testing.h"

namespace moebench {
namespace {

using Ids = std::vector<std::vector<std::vector<int32_t>>>;

// A calibration workload held in memory.
class MemoryCalibration : public CalibrationData {
 public:
  explicit MemoryCalibration(std::unique_ptr<MemoryTraceSource> src) : src_(std::move(src)) {
    const TraceInfo& in = src_->info();
    p_.layers = in.moe_layers;
    p_.experts = in.experts();
    p_.counts.assign(p_.layers * p_.experts, 0);
    TokenRecord r;
    for (int64_t s = 0; s < int64_t(in.sequences.size()); ++s) {
      auto rd = src_->open(s, kIdsWeights);
      while (rd->next(r)) {
        ++p_.tokens;
        for (int64_t l = 0; l < p_.layers; ++l) {
          for (int64_t j = 0; j < in.top_k(); ++j)
            ++p_.counts[l * p_.experts + r.ids[l * in.top_k() + j]];
        }
      }
    }
  }
  const CalibrationProfile& profile() const override { return p_; }
  const TraceSource& trace() const override { return *src_; }

 private:
  std::unique_ptr<MemoryTraceSource> src_;
  CalibrationProfile p_;
};

struct Scenario {
  std::string name;
  ModelSpec model;
  std::unique_ptr<MemoryTraceSource> source;
  int64_t batch;
};

// Random routing with some temporal locality, with gate inputs and gate
// weights so predictors have something to work on.
std::unique_ptr<MemoryTraceSource> make_source(int layers, int experts, int k, int sequences,
                                               int prompt, int decode, uint64_t seed) {
  TraceInfo info;
  info.model_name = "tiny";
  info.moe_layers = layers;
  info.routing.experts = experts;
  info.routing.top_k = k;
  info.probs = ProbsStorage::kFull;
  info.h_trace = 16;
  info.sequences.assign(sequences, SequenceInfo{prompt, decode});
  auto src = std::make_unique<MemoryTraceSource>(info);
  std::mt19937_64 rng(seed);
  for (int s = 0; s < sequences; ++s) {
    std::vector<std::vector<int32_t>> prev(layers);
    for (int t = 0; t < prompt + decode; ++t) {
      TokenRecord r;
      for (int l = 0; l < layers; ++l) {
        std::vector<int32_t> ch;
        while (int(ch.size()) < k) {
          const int32_t e = (!prev[l].empty() && rng() % 2) ? prev[l][rng() % prev[l].size()]
                                                            : int32_t(rng() % experts);
          if (std::find(ch.begin(), ch.end(), e) == ch.end()) ch.push_back(e);
        }
        prev[l] = ch;
        for (int j = 0; j < k; ++j) {
          r.ids.push_back(ch[j]);
          r.weights.push_back(1.0f / float(k));
        }
        for (int e = 0; e < experts; ++e) {
          float p = 0.01f;
          for (int j = 0; j < k; ++j) p = ch[j] == e ? 0.5f / float(j + 1) : p;
          r.probs.push_back(p);
        }
        for (int i = 0; i < 16; ++i)
          r.gate_input.push_back(std::uniform_real_distribution<float>(-1, 1)(rng));
      }
      src->add(s, r);
    }
  }
  GateWeights g;
  g.layers = layers;
  g.experts = experts;
  g.h = 16;
  for (int i = 0; i < layers * experts * 16; ++i)
    g.weight.push_back(std::uniform_real_distribution<float>(-1, 1)(rng));
  g.bias.assign(layers * experts, 0.0f);
  g.selection_bias.assign(layers * experts, 0.0f);
  src->set_gate_weights(g);
  return src;
}

std::vector<Scenario> scenarios() {
  std::vector<Scenario> v;
  v.push_back({"decode-b1", testing::tiny_model(3, 8, 2), make_source(3, 8, 2, 2, 4, 12, 1), 1});
  v.push_back({"batched", testing::tiny_model(3, 8, 2), make_source(3, 8, 2, 4, 6, 8, 2), 3});
  v.push_back(
      {"shared-experts", testing::tiny_model(4, 16, 4, 1), make_source(4, 16, 4, 2, 3, 10, 3), 2});
  return v;
}

StrategySpec base_for(const std::string& family, const std::string& kind) {
  // A strategy around the component under test that exercises it.
  StrategySpec s = testing::strategy("gpu-ondemand", "lru", "uniform", 3);
  if (family == "placement") s = testing::strategy("resident", "lru", kind, 3);
  if (family == "assigner") s = testing::strategy(kind, "lru", "uniform", 3);
  if (family == "cache")
    s = testing::strategy(kind == "none" ? "resident" : "gpu-ondemand", kind, "uniform", 3);
  if (family == "prefetcher") {
    s = testing::strategy("resident", "lru", "uniform", 3);
    s.prefetcher = testing::component(kind);
    // A predictor of the kind the prefetcher asks for.
    s.predictor = testing::component(kind == "token-wise" ? "last-iteration" : "gate-reuse");
  }
  if (family == "predictor") {
    // Next-token predictors drive SMoE's token-wise prefetch; cross-layer
    // ones a next-layer prefetch (frequency works with both).
    const bool next_token = kind == "linear" || kind == "last-iteration";
    s = testing::strategy(next_token ? "smoe" : "resident", next_token ? "smoe-lfu" : "lru",
                          "uniform", 3);
    s.prefetcher = testing::component(next_token ? "token-wise" : "next-layer");
    s.predictor = testing::component(kind);
    if (kind == "none") s.prefetcher = testing::component("none");
  }
  if (family == "deferral") {
    s = testing::strategy("all-cpu");
    s.deferral = testing::component(kind);
  }
  if (kind == "layerwise" || kind == "front-loading" || kind == "llamacpp") {
    s.residency.pool = "global";
    s.residency.slots_per_layer = 8;  // whole layers fit in the pool
    if (kind == "llamacpp") s.placement = testing::component("layerwise");
  }
  s.name = family + "/" + kind;
  return s;
}

nlohmann::ordered_json deterministic_part(const RunMetrics& m) {
  auto j = m.to_json();
  for (auto it = j.begin(); it != j.end();) {
    if (it.key().rfind("decision_", 0) == 0 || it.key() == "host_wall_s")
      it = j.erase(it);
    else
      ++it;
  }
  return j;
}

// Runs `spec` twice on the scenario (the graph checked: every task's start
// explained by its lane and what it waits for) and checks what every
// component must keep: activations computed exactly once, hits and useful
// prefetches within their totals, a decode time, the same metrics twice.
// Returns the first run's metrics, or nothing when a run failed (reported).
std::optional<RunMetrics> conforms(const StrategySpec& spec, const Scenario& sc,
                                   const std::string& label) {
  const Registry& reg = builtin_registry();
  auto calib_src = make_source(int(sc.model.moe_layers()), int(sc.model.routed_experts),
                               int(sc.model.top_k), 3, 4, 8, 99);
  MemoryCalibration calib(std::move(calib_src));
  WorkloadSpec w = testing::workload_of(*sc.source);
  w.batch_size = sc.batch;
  auto run_once = [&] {
    StrategyInstance st = StrategyInstance::create(spec, reg);
    EngineOptions opt;
    opt.check_graph = true;
    return simulate(sc.model, testing::round_hardware(), w, st, *sc.source, &calib, opt);
  };
  SimulationResult a, b;
  try {
    a = run_once();
    b = run_once();
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << ": " << e.what();
    return std::nullopt;
  }
  const RunMetrics& m = a.metrics;
  const int64_t activations = m.token_accesses[0] + m.token_accesses[1];
  EXPECT_GT(activations, 0) << label;
  // Every (token, layer, expert) activation is computed exactly once, somewhere.
  EXPECT_EQ(m.gpu_expert_tokens + m.cpu_expert_tokens, activations) << label;
  EXPECT_LE(m.token_hits[1], m.token_accesses[1]) << label;
  EXPECT_LE(m.prefetch_useful, m.prefetch_loads) << label;
  EXPECT_GT(m.decode_time_s, 0.0) << label;
  EXPECT_EQ(deterministic_part(a.metrics).dump(), deterministic_part(b.metrics).dump())
      << label << " is not deterministic";
  return a.metrics;
}

TEST(Conformance, EveryRegisteredComponentRunsEveryScenario) {
  const Registry& reg = builtin_registry();
  int checked = 0;
  for (const auto* entry : reg.entries()) {
    for (auto& sc : scenarios()) {
      const StrategySpec spec = base_for(entry->family, entry->kind);
      if (conforms(spec, sc, entry->family + "/" + entry->kind + " in " + sc.name)) ++checked;
    }
  }
  EXPECT_EQ(checked, int(reg.entries().size() * 3));
}

// The same, with decode steps pipelined (MoE-Lightning's mechanism:
// attention on the CPU, two micro-batches of the batched scenario's three
// sequences): every component's decisions run once per micro-batch and
// layer, and every activation is still computed exactly once.
TEST(Conformance, EveryRegisteredComponentRunsInMicroBatches) {
  const Registry& reg = builtin_registry();
  const auto all = scenarios();
  const Scenario& sc = all[1];  // "batched": 4 sequences in batches of 3
  int checked = 0;
  for (const auto* entry : reg.entries()) {
    StrategySpec spec = base_for(entry->family, entry->kind);
    spec.residency.attention = "cpu";
    spec.residency.micro_batches = 2;
    const auto m = conforms(spec, sc, entry->family + "/" + entry->kind + " in micro-batches");
    if (!m) continue;
    EXPECT_GT(m->decode_busy_ns[2], 0.0) << "the CPU's attention";
    ++checked;
  }
  EXPECT_EQ(checked, int(reg.entries().size()));
}

// Cache policies: the victim is always one of the candidates, and the same
// inputs give the same victim.
TEST(Conformance, CachePoliciesPickACandidateDeterministically) {
  const Registry& reg = builtin_registry();
  for (const auto& kind : reg.kinds("cache")) {
    if (kind == "none") continue;
    auto sc = scenarios();
    for (auto& s : sc) {
      for (int rep = 0; rep < 2; ++rep) {
        StrategySpec spec = testing::strategy("gpu-ondemand", kind, "uniform", 2);
        const auto r = testing::run(s.model, testing::round_hardware(), spec, *s.source, false);
        // The core rejects an out-of-range victim; reaching here with loads means every victim was
        // valid.
        EXPECT_GT(r.metrics.demand_loads, 0) << kind;
      }
    }
  }
}

}  // namespace
}  // namespace moebench
