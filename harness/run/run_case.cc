// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "harness/run/run_case.h"

#include <cstdlib>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "core/scheduler/scheduler.h"
#include "core/trace/trace_workload.h"
#include "core/util/cancel.h"
#include "core/util/cpu_info.h"
#include "core/util/json_text.h"
#include "core/util/paths.h"
#include "core/util/sha256.h"
#include "harness/backend/real_cpu_executor.h"
#include "workloads/synthetic/generator.h"

namespace moebench {

namespace {

std::filesystem::path resolve(const std::filesystem::path& base, const std::string& p) {
  const std::filesystem::path x(p);
  return x.is_absolute() ? x : base / x;
}

std::unique_ptr<TraceSource> open_checked(const std::filesystem::path& path, const ModelSpec& m,
                                          const char* key) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Error(fmt::format(
        "workload.{}: expected an existing trace file (a regular file), found {} at '{}'", key,
        file_kind(path), path.string()));
  }
  auto src = open_trace_file(path);
  check_trace_model(src->info(), m, path.string(), /*warn_name=*/false);  // warned at load
  return src;
}

// A trace the case read must be the file the suite loaded (the cases of one
// run read one version) and stay as it was while the case read it.
void check_unchanged(const Case& c, const TraceSource* s, const std::string& rel, const char* key) {
  if (!s || rel.empty()) return;
  if (const std::string why = s->changed_since_open(); !why.empty())
    throw Error(fmt::format("workload.{}: {}", key, why));
  const std::string path = resolve(c.base_dir, rel).string();
  const auto it = c.file_stamps.find(path);
  if (it != c.file_stamps.end() && !it->second.empty() && it->second != s->file_stamp()) {
    throw Error(fmt::format(
        "workload.{}: {}: expected the trace file the suite loaded, found that it changed since "
        "(written to, truncated or replaced); the case's result would not be the run's (run the "
        "suite again once the file is stable)",
        key, path));
  }
}

}  // namespace

std::unique_ptr<TraceSource> make_workload(const WorkloadSpec& w, const ModelSpec& m,
                                           const std::filesystem::path& base_dir,
                                           const ConfigPaths& paths,
                                           const std::vector<Request>* requests) {
  if (w.kind == "trace") {
    // The expanded workload holds the selection that applies (Experiment
    // expansion resolved sequences / prompt_len / decode_len on the trace).
    TraceSelection sel;
    sel.sequences = w.sequences;
    sel.prompt_cap = w.prompt_len;
    sel.decode_cap = w.decode_len;
    return select_trace(open_checked(resolve(base_dir, w.trace), m, "trace"), sel, w.trace);
  }
  const GeneratorParams p = load_generator(w.generator, m, paths);
  SyntheticLayout layout = layout_from_workload(w, false);
  // Requests of their own lengths (workload.lengths "uniform" or "file").
  if (w.lengths != "fixed") {
    if (!requests || requests->size() != layout.sequences.size()) {
      throw InternalError(fmt::format("make_workload: {} requests for {} sequences of lengths '{}'",
                                      requests ? requests->size() : 0, layout.sequences.size(),
                                      w.lengths));
    }
    for (size_t i = 0; i < layout.sequences.size(); ++i)
      layout.sequences[i] = {(*requests)[i].prompt_len, (*requests)[i].decode_len};
  }
  return std::make_unique<SyntheticSource>(m, p, std::move(layout));
}

WorkloadCalibration::WorkloadCalibration(const WorkloadSpec& w, const ModelSpec& m,
                                         const std::filesystem::path& base_dir,
                                         const ConfigPaths& paths)
    : w_(w), m_(m), base_(base_dir), paths_(paths) {}

void WorkloadCalibration::load() const {
  if (src_) return;
  if (w_.kind == "trace") {
    if (w_.calibration_trace.empty()) {
      throw Error(
          "workload.calibration_trace: expected a calibration trace (a component of the strategy "
          "calibrates on one, and the evaluation trace must not be reused), found none");
    }
    src_ = open_checked(resolve(base_, w_.calibration_trace), m_, "calibration_trace");
    return;
  }
  if (w_.calibration_sequences <= 0) {
    throw Error(
        "workload.calibration_sequences: expected at least 1 (a component of the strategy "
        "calibrates), found 0");
  }
  const GeneratorParams p = load_generator(w_.generator, m_, paths_);
  src_ = std::make_unique<SyntheticSource>(m_, p, layout_from_workload(w_, true));
}

const TraceSource& WorkloadCalibration::trace() const {
  load();
  return *src_;
}

const CalibrationProfile& WorkloadCalibration::profile() const {
  if (profile_) return *profile_;
  load();
  auto p = std::make_unique<CalibrationProfile>();
  const TraceInfo& in = src_->info();
  p->layers = in.moe_layers;
  p->experts = in.experts();
  p->counts.assign(p->layers * p->experts, 0);
  TokenRecord rec;
  for (int64_t s = 0; s < int64_t(in.sequences.size()); ++s) {
    auto r = src_->open(s, kIdsWeights);
    while (r->next(rec)) {
      if ((p->tokens & 63) == 0) throw_if_cancelled();
      ++p->tokens;
      for (int64_t l = 0; l < p->layers; ++l) {
        if (rec.ids[l * in.top_k()] == kHoleId) continue;  // a hole: nothing to count
        for (int64_t j = 0; j < in.top_k(); ++j)
          ++p->counts[l * p->experts + rec.ids[l * in.top_k() + j]];
      }
    }
  }
  profile_ = std::move(p);
  return *profile_;
}

HardwareProfile test_slowdown(const HardwareProfile& hw, const std::string& strategy) {
  const char* env = std::getenv("MOEBENCH_TEST_SLOWDOWN");
  if (!env || !*env) return hw;
  const std::string v(env);
  const auto colon = v.rfind(':');
  double factor = 0;
  try {
    factor = colon == std::string::npos ? 0.0 : std::stod(v.substr(colon + 1));
  } catch (const std::exception&) {
    factor = 0;
  }
  if (colon == std::string::npos || !(factor > 0)) {
    throw Error(fmt::format(
        "MOEBENCH_TEST_SLOWDOWN: expected STRATEGY:FACTOR (e.g. ktransformers:1.5), found '{}'",
        v));
  }
  if (v.substr(0, colon) != strategy) return hw;
  HardwareProfile slow = hw;
  slow.cpu.mem_bw_gbps /= factor;
  slow.cpu.peak_gflops_fp32 /= factor;
  slow.cpu.peak_gflops_bf16 /= factor;
  slow.cpu.peak_gflops_int8 /= factor;
  if (slow.cpu.expert_gflops > 0) slow.cpu.expert_gflops /= factor;  // a [[cpu_kernel]] rate
  slow.cpu.task_overhead_us *= factor;
  slow.cpu.first_task_warmup_us *= factor;
  for (auto& t : slow.tables) {
    if (t.lane == "cpu-expert" || t.lane == "cpu-shared") {
      for (double& x : t.time_us) x *= factor;
    }
  }
  return slow;
}

namespace {

// The real executor of the last real case, kept for its repetitions and for
// the next case of the same model and options (allocating gigabytes of
// weights takes seconds). One at a time: real cases run one after another.
std::mutex g_real_mu;
std::string g_real_key;
std::unique_ptr<RealCpuExecutor> g_real;

// The threads a real case runs each expert task on: suite.real_threads (or
// the profile's cpu.threads), at most this machine's CPUs. More threads
// than CPUs only time their own contention (1,024 threads once took 23 s for
// a 0.1 s case); the cap is said in the case's warnings.
int real_thread_count(const Case& c, const HardwareProfile& hw, std::string* warning) {
  const int64_t asked = c.real_threads > 0 ? c.real_threads : hw.cpu.threads;
  const int cpus = std::max(1, cpu_info().logical_cpus);
  if (asked <= cpus) return int(std::max<int64_t>(1, asked));
  *warning = fmt::format(
      "{} = {} is more than the {} CPUs this process may run on: capped at {} (the real "
      "backend's times are this machine's)",
      c.real_threads > 0 ? "suite.real_threads" : "the hardware profile's cpu.threads", asked, cpus,
      cpus);
  return cpus;
}

RealCpuExecutor& real_executor(const Case& c, const HardwareProfile& hw,
                               std::string* thread_warning) {
  if (hw.has_gpu()) {
    throw Error(
        fmt::format("suite.backend = \"real\": expected a CPU-only hardware profile (the real "
                    "backend's GPU lane is not built yet; run GPU profiles on the simulated "
                    "backend), found '{}' with {} GPU(s)",
                    hw.name, hw.gpu.count));
  }
  RealCpuOptions o;
  o.kernel = c.real_kernel;
  o.weights_gib = c.real_weights_gib;
  o.threads = real_thread_count(c, hw, thread_warning);
  // The run's largest step as the engine will ask for it (Engine::run: a
  // batch's sequences, their positions, a prefill of the whole batch).
  const WorkloadSpec& w = c.workload;
  o.plan_sequences = std::max<int64_t>(1, std::min(w.batch_size, w.sequences));
  o.plan_positions = std::max<int64_t>(1, w.prompt_len + w.decode_len);
  o.plan_step_tokens = o.plan_sequences * std::max<int64_t>(1, w.prompt_len);
  std::string timings_key;
  if (o.kernel == "auto") {
    for (const KernelTime* t :
         kernel_times_for(hw, c.model.name, to_string(c.model.expert_dtype))) {
      o.auto_timings.push_back(KernelTiming{t->kernel, t->tokens, t->time_us});
      timings_key += fmt::format("{}:{};", t->kernel, fmt::join(t->time_us, ","));
    }
  }
  // Everything the executor's buffers depend on: the experts' shapes and the
  // rest of the step's (attention, dense FFN, lm head: harness/backend/real_cpu_blocks.h).
  const ModelSpec& m = c.model;
  const std::string key =
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|attn {} {} {} {} {} {} {} {} {}|{} {} {} {} {}|{}",
                  m.hidden_size, m.expert_intermediate, m.shared_intermediate * m.shared_experts,
                  m.moe_layers() * m.routed_experts, to_string(m.expert_dtype), o.kernel,
                  o.weights_gib, o.threads, int(m.attention), m.num_heads, m.num_kv_heads,
                  m.head_dim, m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim,
                  m.v_head_dim, m.num_layers, m.first_dense_layers, m.dense_intermediate,
                  m.vocab_size, to_string(m.dense_dtype), timings_key);
  if (!g_real || g_real_key != key) {
    g_real.reset();  // free the old buffers first
    g_real = std::make_unique<RealCpuExecutor>(c.model, o);
    g_real_key = key;
  }
  return *g_real;
}

}  // namespace

namespace {

// The workload's shape from its spec (a trace's selection was resolved into
// sequences / prompt_len / decode_len at load: the largest kept, so totals
// are upper bounds).
RunShape shape_of(const WorkloadSpec& w) {
  RunShape s;
  s.sequences = w.sequences;
  s.batch_size = w.batch_size;
  // Served requests of uniform lengths reach the longest of both ranges.
  s.max_tokens =
      (w.lengths == "uniform" && w.prompt_len_max >= 0 ? w.prompt_len_max : w.prompt_len) +
      (w.lengths == "uniform" && w.decode_len_max >= 0 ? w.decode_len_max : w.decode_len);
  s.total_tokens = w.sequences * s.max_tokens;
  s.synthetic = w.kind != "trace";
  s.h_trace = w.h_trace;
  return s;
}

// Checks the case and applies a component's residency choice (MoE-Lightning's
// policy search) to `st` first, so that the footprint checked is the chosen
// settings'.
void check_case(const Case& c, const HardwareProfile& hw, StrategyInstance& st) {
  if (c.backend != "sim" && c.backend != "real") {
    throw Error(
        fmt::format("suite.backend: expected \"sim\" or \"real\", found \"{}\"", c.backend));
  }
  check_needs(c, st);
  apply_residency_choice(c.model, hw, st, shape_of(c.workload), c.workload.prompt_len,
                         c.workload.decode_len);
  apply_cache_fill(c.model, hw, st, shape_of(c.workload));
  check_footprint(case_footprint(c.model, hw, st, shape_of(c.workload)), c.model, hw, st);
}

}  // namespace

void check_needs(const Case& c, const StrategyInstance& st) {
  std::vector<std::string> gates, calibration, probs;
  for (const auto& [family, comp] : st.components()) {
    if (!comp) continue;
    const Needs n = comp->needs(c.model);
    const std::string who = fmt::format("strategy.{} = \"{}\"", family, comp->name());
    if (n.gate_inputs) gates.push_back(who);
    if (n.top_p > 0) probs.push_back(who);
    if (n.calibration) calibration.push_back(who);
  }
  const WorkloadSpec& w = c.workload;
  const std::string where = fmt::format("strategy '{}'", st.name);
  // The trace's header, read once when a component needs something of it.
  std::optional<TraceInfo> trace;
  if (w.kind == "trace" && (!probs.empty() || !gates.empty()))
    trace = open_checked(resolve(c.base_dir, w.trace), c.model, "trace")->info();
  if (!probs.empty() && trace) {
    const TraceInfo& info = *trace;
    if (info.probs == ProbsStorage::kNone) {
      throw Error(
          fmt::format("{}: {} reads router probabilities; expected a trace with them, found "
                      "workload.trace '{}' without "
                      "(a log of combine weights only: choose components that need none)",
                      where, fmt::join(probs, " and "), w.trace));
    }
  }
  if (!gates.empty()) {
    if (trace) {
      const TraceInfo& info = *trace;
      if (info.h_trace <= 0 || !info.has_gate_weights) {
        throw Error(
            fmt::format("{}: {} needs gate inputs and gate weights in the workload; expected a "
                        "trace with them, found "
                        "workload.trace '{}' with {} (record a trace with gate inputs, e.g. "
                        "`moebench trace record` or "
                        "workloads/record_hf.py, or choose components that need none)",
                        where, fmt::join(gates, " and "), w.trace,
                        info.h_trace <= 0 ? std::string("no gate inputs (h_trace 0)")
                                          : std::string("no gate weights")));
      }
    } else if (w.h_trace <= 0) {
      throw Error(fmt::format("{}: {} needs gate inputs; expected workload.h_trace >= 1, found {}",
                              where, fmt::join(gates, " and "), w.h_trace));
    }
  }
  if (!calibration.empty()) {
    if (w.kind == "trace" && w.calibration_trace.empty()) {
      throw Error(
          fmt::format("{}: {} calibrates on a workload; expected workload.calibration_trace (a "
                      "trace other than the "
                      "evaluation one), found none",
                      where, fmt::join(calibration, " and ")));
    }
    if (w.kind != "trace" && w.calibration_sequences <= 0) {
      throw Error(fmt::format(
          "{}: {} calibrates on a workload; expected workload.calibration_sequences >= 1, "
          "found {}",
          where, fmt::join(calibration, " and "), w.calibration_sequences));
    }
    if (w.kind == "trace") {
      // The calibration trace must open and fit the model (at load, not when the case runs).
      open_checked(resolve(c.base_dir, w.calibration_trace), c.model, "calibration_trace");
    }
  }
}

void preflight_case(const Case& c, const Registry& registry) {
  StrategyInstance st = StrategyInstance::create(c.strategy, registry);
  check_case(c, implementation_hardware(c.hardware, c.strategy, c.model, c.comparison), st);
}

std::string simulation_key(const Case& c) {
  nlohmann::ordered_json k = c.config;
  if (k.contains("run")) k["run"].erase("comparison");
  k.erase(
      "implementation");  // the names of the entries applied; their numbers are in "hardware" below
  if (k.contains("strategy")) k["strategy"].erase("source");
  k["hardware"] =
      test_slowdown(implementation_hardware(c.hardware, c.strategy, c.model, c.comparison),
                    c.strategy.name)
          .to_json();
  k["base_dir"] = c.base_dir.string();
  return sha256_hex(json_text(k));
}

namespace {

// A served run of a strategy that reads the future (an oracle: Belady, the
// perfect predictor). Under arrivals the future depends on the strategy's
// own speed, so the oracle reads the schedule its previous run produced
// (the first run an empty one) until the schedule it runs is the one it read:
// then it saw its own future and bounds as under the static scheduler
// (docs/SERVING.md, "Oracles"). At most kPasses runs; a warning says how
// many it took, or up to which step the future it read was its own.
SimulationResult serve_with_oracle(const Case& c, const Registry& registry,
                                   const HardwareProfile& hw, const TraceSource& source,
                                   const CalibrationData& calib, EngineOptions opt) {
  constexpr int kPasses = 8;
  std::vector<StepPlan> future;
  opt.return_steps = true;
  for (int pass = 1;; ++pass) {
    // Each run a fresh instance, its residency settings applied as the first's were.
    StrategyInstance st = StrategyInstance::create(c.strategy, registry);
    check_case(c, hw, st);
    opt.served_future = &future;
    SimulationResult r = simulate(c.model, hw, c.workload, st, source, &calib, opt);
    size_t same = 0;
    while (same < r.steps.size() && same < future.size() && r.steps[same] == future[same]) ++same;
    const bool fixed = same == r.steps.size() && same == future.size();
    if (fixed || pass == kPasses) {
      if (fixed) {
        r.warnings.push_back(fmt::format(
            "serving: the oracle's future is its own schedule ({} runs of the case until the "
            "schedule repeated)",
            pass));
      } else {
        r.warnings.push_back(fmt::format(
            "serving: the oracle's future is the schedule of its previous run; after {} runs the "
            "schedule still changed at step {} of {}: the future it read was its own up to that "
            "step only, so this case is not a bound",
            pass, same, r.steps.size()));
      }
      r.steps.clear();
      return r;
    }
    future = std::move(r.steps);
  }
}

}  // namespace

namespace {

// A workload's requests (docs/SERVING.md): arrival times and, where set,
// lengths; none for the papers' fixed batches. The requests file is read
// again and must be the one the suite loaded; what the case's warnings
// should say of it goes to `warnings`.
std::vector<Request> case_requests(const Case& c, std::vector<std::string>* warnings) {
  if (!c.workload.per_request()) return {};
  std::optional<RequestsFile> file;
  if (!c.workload.arrivals.empty()) {
    file = reread_requests_file(c.workload, c.base_dir, c.model.context_length);
    if (file->first_arrival_s > kEpochMillisecondsLike) {
      warnings->push_back(
          fmt::format("serving: the requests file's first arrival_time is {:g}, which looks like "
                      "milliseconds since the Unix epoch; it is read as seconds (times are taken "
                      "relative to the first request)",
                      file->first_arrival_s));
    }
  }
  return make_requests(c.workload, file ? &*file : nullptr);
}

}  // namespace

CaseRun run_case(const Case& c, const Registry& registry, const ConfigPaths& paths,
                 const EngineOptions& opt) {
  StrategyInstance st = StrategyInstance::create(c.strategy, registry);
  const HardwareProfile hw = test_slowdown(
      implementation_hardware(c.hardware, c.strategy, c.model, c.comparison), c.strategy.name);
  // Before the workload is built: a case that cannot fit fails in
  // milliseconds, not after minutes of generation.
  check_case(c, hw, st);
  std::vector<std::string> request_warnings;
  const std::vector<Request> requests = case_requests(c, &request_warnings);
  auto source = make_workload(c.workload, c.model, c.base_dir, paths, &requests);
  check_unchanged(c, source.get(), c.workload.trace, "trace");
  WorkloadCalibration calib(c.workload, c.model, c.base_dir, paths);
  CaseRun r;
  r.backend = c.backend;
  EngineOptions served = opt;
  for (const Request& q : requests) served.arrival_ns.push_back(q.arrival_s * 1e9);
  if (!requests.empty() && requests.size() != source->info().sequences.size()) {
    throw Error(fmt::format("workload: {} requests for {} sequences of the workload",
                            requests.size(), source->info().sequences.size()));
  }
  if (c.backend == "real") {
    std::lock_guard<std::mutex> lock(g_real_mu);
    EngineOptions eo = served;
    std::string thread_warning;
    eo.executor = &real_executor(c, hw, &thread_warning);
    r.result = simulate(c.model, hw, c.workload, st, *source, &calib, eo);
    if (!thread_warning.empty()) r.result.warnings.push_back(thread_warning);
  } else if (!make_scheduler(c.workload.scheduler)->plans_ahead() && st.needs(c.model).future) {
    // Steps that follow the clock: an oracle reads a schedule planned by an earlier run.
    r.result = serve_with_oracle(c, registry, hw, *source, calib, served);
  } else {
    r.result = simulate(c.model, hw, c.workload, st, *source, &calib, served);
  }
  // A trace changed while the case read it (written in place, truncated,
  // replaced) gives a result of neither version: the case fails by name.
  check_unchanged(c, source.get(), c.workload.trace, "trace");
  check_unchanged(c, calib.opened(), c.workload.calibration_trace, "calibration_trace");
  for (std::string& w : request_warnings) r.result.warnings.push_back(std::move(w));
  return r;
}

}  // namespace moebench
