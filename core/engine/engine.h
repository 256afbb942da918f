// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The execution core: runs one strategy over one workload on the simulated
// clock (docs/COST_MODEL.md).
//
// Steps: per batch of sequences, one prefill step (all prompt tokens of the
// batch) then one decode step per generated token. Per step and MoE layer:
//   1. attention, norms and router on the GPU; the layer's gate ends at t_gate
//   2. transfers that finished by t_gate complete (event order), routing is
//      revealed, hits are counted
//   3. hooks: CachePolicy::on_gate, Prefetcher::after_gate, Deferral::choose,
//      Assigner::plan (validated)
//   4. on-demand loads (victims from the CachePolicy), shared experts and GPU
//      experts on the GPU (each waiting for its weights); the prefetches of
//      the gate and of Prefetcher::after_gpu_experts; CPU experts after the
//      hidden states reach the CPU (beside those copies), their outputs sent back
//   5. deferred CPU experts (decode) finish during the next layer and are
//      combined there; CachePolicy::after_layer
// then the lm head; after each step Prefetcher/CachePolicy::after_step.
// Everything is deterministic: the same inputs give the same metrics on any
// machine (except the measured decision times).

#include <array>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/executor.h"
#include "core/engine/lanes.h"
#include "core/engine/metrics.h"
#include "core/engine/policy.h"
#include "core/scheduler/scheduler.h"

namespace moebench {

// A strategy's components, created from its spec through the registry.
struct StrategyInstance {
  std::string name;
  ResidencySpec residency;
  std::unique_ptr<Placement> placement;
  std::unique_ptr<Assigner> assigner;
  std::unique_ptr<CachePolicy> cache;
  std::unique_ptr<Prefetcher> prefetcher;
  std::unique_ptr<Predictor> predictor;
  std::unique_ptr<Deferral> deferral;

  // A component's residency choice (choose_residency, applied): who chose,
  // its estimate of a decode step (ns) and why; empty / NaN when none did.
  std::string residency_chosen_by;
  double residency_estimate_ns = std::numeric_limits<double>::quiet_NaN();
  std::string residency_why;

  static StrategyInstance create(const StrategySpec& spec, const Registry& registry);
  Needs needs(const ModelSpec& m) const;
  // The components with their family names, in the order the engine consults them.
  std::array<std::pair<const char*, const PolicyComponent*>, 6> components() const {
    return {{{"placement", placement.get()},
             {"assigner", assigner.get()},
             {"cache", cache.get()},
             {"prefetcher", prefetcher.get()},
             {"predictor", predictor.get()},
             {"deferral", deferral.get()}}};
  }
};

// The shape of a run's workload, known before any of it is generated or read.
struct RunShape {
  int64_t sequences = 0;
  int64_t batch_size = 1;
  int64_t max_tokens = 0;    // the longest sequence, prompt and generation
  int64_t total_tokens = 0;  // every sequence's tokens
  bool synthetic = false;    // generated here (the generator's structure is held too)
  int64_t h_trace = 0;       // gate-input width
};

// What a case needs, from shapes alone: GPU memory (non-expert weights,
// expert cache, KV cache, runtime) and the host memory the simulation itself
// holds (every token's routing, per-expert state, the generator's
// structure). Checked before a case builds its workload, so a case that
// cannot fit fails at once, with the breakdown, instead of after minutes.
struct CaseFootprint {
  int64_t slots_per_layer = 0;  // the cache share plus the prefetch buffer
  int64_t gpu_cache_slots = 0;
  double gpu_weights_gib = 0, gpu_cache_gib = 0, gpu_kv_gib = 0, gpu_runtime_gib = 0,
         gpu_total_gib = 0;
  double host_gib = 0;  // an estimate from the sizes of the largest arrays
  std::string host_breakdown;
};
CaseFootprint case_footprint(const ModelSpec& model, const HardwareProfile& hw,
                             const StrategyInstance& strategy, const RunShape& shape);
// Slots per layer of the prefetch buffer (residency.prefetch_buffer): the
// prefetcher's requests per layer, 0 without a buffer.
int64_t prefetch_buffer_slots(const StrategyInstance& strategy);
// Throws moebench::Error when the footprint exceeds the GPU's memory or,
// with `host`, the host memory available now (core/util/memory.h), naming
// every part. The host check belongs before the workload is built: once
// its arrays are allocated, the memory available no longer counts them.
void check_footprint(const CaseFootprint& f, const ModelSpec& model, const HardwareProfile& hw,
                     const StrategyInstance& strategy, bool host = true);

// residency.cache_fill: sets st.residency.slots_per_layer to the expert
// slots per MoE layer that fit in the GPU memory the non-expert weights, the
// KV cache of the run's shape (batch_size sequences of its longest length)
// and the runtime reserve leave, less the prefetch buffer; 0 when nothing is
// left (check_footprint then says the case does not fit). Nothing happens
// without cache_fill or without a GPU.
void apply_cache_fill(const ModelSpec& model, const HardwareProfile& hw, StrategyInstance& st,
                      const RunShape& shape);

// Asks the strategy's components for the run's residency settings
// (PolicyComponent::choose_residency: MoE-Lightning's policy search) for a
// run of `shape` whose prompts have prompt_len tokens and which generates
// decode_len tokens per sequence, checks the answer and applies it to
// st.residency (recording who chose, the estimate and why in st). Before
// check_footprint: the footprint is then the chosen settings'. Throws
// moebench::Error naming the component for an answer the core refuses: two
// components answering, a setting other than attention, micro_batches and
// cache_ratio changed, micro_batches below 1 or above the batch, cache_ratio
// outside [0, 1], attention not "gpu" or "cpu", or more GPU memory than the
// GPU has. Nothing happens when no component answers.
void apply_residency_choice(const ModelSpec& model, const HardwareProfile& hw, StrategyInstance& st,
                            const RunShape& shape, int64_t prompt_len, int64_t decode_len);

struct EngineOptions {
  bool timeline = false;           // record every task (Chrome trace)
  int decision_sample_every = 32;  // time component calls on every n-th layer (0 = never)
  // Runs the tasks it can run and times them (core/engine/executor.h);
  // null: the simulated executor (every duration from the cost model).
  Executor* executor = nullptr;
  // Records every lane task with the tasks and copies it waits for (the
  // layer's task graph) and checks, at the end of the run, that the graph
  // explains every start: start = max(the lane's previous task's end, the
  // ends of the tasks and copies it waits for). InternalError otherwise.
  // Tests turn it on; it changes no result.
  bool check_graph = false;
  // Serving (workload.scheduler = "continuous"): each sequence's arrival,
  // simulated ns from the run's start, non-decreasing; empty: all at 0.
  std::vector<double> arrival_ns;
  // A served run's oracles read this schedule as the future (the steps an
  // earlier run of the same case produced: serve_with_oracle, run_case.cc);
  // null: a strategy that reads the future is refused under arrivals.
  const std::vector<StepPlan>* served_future = nullptr;
  // Return the steps the run ran (SimulationResult::steps).
  bool return_steps = false;
};

struct SimulationResult {
  RunMetrics metrics;
  std::vector<TaskRecord> timeline;  // when requested, in event order
  // With a timeline on the real backend: every task the executor ran, with
  // its measured start and end on the host clock (ns since the run began).
  std::vector<TaskRecord> measured;
  // Conditions the run went on under that the user should know of (e.g. a
  // trace holding fewer router probabilities than a component asked for).
  std::vector<std::string> warnings;
  // With EngineOptions::return_steps: every step the run ran, in order, and
  // its start and end (ns from the run's start; the real backend's wall
  // clock).
  std::vector<StepPlan> steps;
  std::vector<std::pair<double, double>> step_spans_ns;
};

// Runs the case. `source` is the evaluation workload; `calibration` builds
// the calibration workload (disjoint) when a component needs it. Throws
// moebench::Error for problems the user can fix (a GPU strategy on a
// machine without one, a configuration that does not fit in GPU memory)
// and InternalError (naming the component) for invalid decisions.
SimulationResult simulate(const ModelSpec& model, const HardwareProfile& hw,
                          const WorkloadSpec& workload, StrategyInstance& strategy,
                          const TraceSource& source, const CalibrationData* calibration,
                          const EngineOptions& opt);

// Chrome trace (Perfetto-compatible) JSON of a timeline: one thread per lane
// (process 0); a real run's `measured` tasks as a second process, "measured
// (host clock)", whose tracks are the same lanes, so one viewer shows the
// composed and the measured step side by side.
std::string chrome_trace_json(const std::vector<TaskRecord>& timeline, const std::string& title,
                              const std::vector<TaskRecord>& measured = {});

}  // namespace moebench
