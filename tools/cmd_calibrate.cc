// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// moebench calibrate: measures the CPU tables the cost model reads
// (docs/BACKENDS.md, "Calibration") with the real backend's own executor
// and writes a hardware profile carrying them; on a profile with a GPU also
// the GPU tables and link numbers (tools/calibrate_gpu.h).
//
// For each model shape and expert dtype it times one expert task for each
// token count (the same kernel, threads and round-robin weight buffers a
// real case uses, so a task reads weights that are not in the cache) and
// keeps the mean (--statistic) of --repeats rounds (after untimed passes
// over every buffer); shared experts get a "cpu-shared" table.
// The profile is the base profile with these tables appended (older
// tables of the same lane, model and dtype replaced) and its provenance
// (CPU, threads, commit, date, command) in the header and `source`.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "core/engine/metrics.h"
#include "core/experiment/experiment.h"
#include "core/results/provenance.h"
#include "core/util/atomic_file.h"
#include "core/util/cpu_info.h"
#include "core/util/error.h"
#include "core/util/memory.h"
#include "core/util/strings.h"
#include "harness/backend/real_cpu_executor.h"
#include "harness/run/platform_provenance.h"
#include "kernels/cuda/gpu_experts.h"
#include "tools/calibrate_gpu.h"
#include "tools/calibrate_load.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"

namespace moebench::tools {

namespace {

struct CalibrateOptions {
  std::string hardware;
  std::string out;
  std::string name;
  std::vector<std::string> models = {"deepseek-v2-lite", "qwen3-30b-a3b"};
  std::vector<std::string> dtypes = {"bf16", "int8"};
  // Every count to 32 (a kernel's token tiles make the time a staircase there:
  // avx512-bf16-gemm's 12-token tiles step at 13 and 25, where tasks ran
  // 1.14x-1.25x the time interpolated between 8, 16 and 32; docs/BACKENDS.md),
  // then coarser.
  std::vector<int64_t> tokens = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,  11,  12, 13, 14,
                                 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,  25,  26, 27, 28,
                                 29, 30, 31, 32, 40, 48, 56, 64, 96, 128, 192, 256};
  int threads = 0;
  double weights_gib = 2.0;
  int repeats = 101;
  // "mean": a layer's time is a sum of tasks, which follows the mean; on a
  // machine whose task times are skewed to the slow side the median is
  // below it (docs/BACKENDS.md, "Where the error comes from").
  std::string statistic = "mean";
  int burst = 1;  // tasks run back to back per token count and round (0: the model's top-k)
  std::string kernel = "auto";
  // GPU tables (profiles with a GPU; tools/calibrate_gpu.h).
  std::vector<int64_t> gpu_tokens = GpuCalibrateOptions().tokens;
  int gpu_repeats = GpuCalibrateOptions().repeats;
  std::vector<int64_t> gpu_contexts = GpuCalibrateOptions().contexts;
  // Every table measured while the other lanes run (tools/calibrate_load.h).
  bool under_load = false;
  // The CPU tables of the rest of the step (profiles without a GPU):
  // cpu-attention, cpu-dense-ffn, cpu-lm-head, by tokens in the step.
  std::vector<int64_t> layer_tokens = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};
  int layer_repeats = 11;
  // The candidates "auto" chooses from (kernels/cpu/kernel_choice.h), timed
  // against each other on the routed expert shape before the tables.
  std::vector<int64_t> choice_tokens = {1,  2,  3,  4,  6,   8,   12,  16,  24,
                                        32, 48, 64, 96, 128, 192, 256, 384, 512};
  int choice_repeats = 11;
  // Paired rounds of check_transition per model and dtype (0: none).
  int transition_rounds = 21;
  // Untimed warm-up before each series, milliseconds (warm_up).
  int warmup_ms = 1000;
};

// A TOML value from JSON (strings, numbers, booleans, arrays of scalars).
std::string toml_scalar(const nlohmann::ordered_json& v) {
  if (v.is_string())
    return nlohmann::ordered_json(v.get<std::string>()).dump();  // JSON escaping is valid TOML
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) {
    std::string s = fmt::format("{}", v.get<double>());
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  }
  if (v.is_array()) {
    std::vector<std::string> xs;
    for (const auto& x : v) xs.push_back(toml_scalar(x));
    return "[" + join(xs, ", ") + "]";
  }
  throw InternalError("calibrate: unexpected JSON value in a hardware profile: " + v.dump());
}

bool is_table_array(const nlohmann::ordered_json& v) {
  return v.is_array() && !v.empty() && v.front().is_object();
}

// A HardwareProfile's JSON as TOML: scalars first, then [sections], then
// [[arrays of tables]]; empty arrays of tables are left out (their default).
std::string profile_toml(const nlohmann::ordered_json& j) {
  std::ostringstream o;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it->is_object() || it->is_array()) continue;
    o << it.key() << " = " << toml_scalar(*it) << "\n";
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_object()) continue;
    o << "\n[" << it.key() << "]\n";
    for (auto f = it->begin(); f != it->end(); ++f)
      o << f.key() << " = " << toml_scalar(*f) << "\n";
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!is_table_array(*it)) continue;
    for (const auto& e : *it) {
      o << "\n[[" << it.key() << "]]\n";
      for (auto f = e.begin(); f != e.end(); ++f) {
        if (f->is_array() && f->empty()) continue;
        o << f.key() << " = " << toml_scalar(*f) << "\n";
      }
    }
  }
  return o.str();
}

// Throws moebench::Error unless `v` is ascending, distinct and >= 1.
void check_token_counts(const std::vector<int64_t>& v, const char* option) {
  if (v.empty() || !std::is_sorted(v.begin(), v.end()) || v.front() < 1 ||
      std::adjacent_find(v.begin(), v.end()) != v.end()) {
    throw Error(fmt::format("calibrate {}: expected ascending distinct counts >= 1, found {}",
                            option, fmt::join(v, ",")));
  }
}

// The untimed one-token tasks before any measurement (`run(i)` on buffer i),
// for at least `ms` milliseconds (--warmup-ms, default a second) and two
// passes over every buffer (pages, caches, thread pool and the machine
// settle after gigabytes were allocated: the first series of a fresh process
// measured up to 6x slower at one token); returns the next buffer index.
template <class Run>
int64_t warm_up(int64_t buffers, int ms, Run&& run) {
  int64_t next = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (next < 2 * buffers ||
         std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(ms)) {
    run(next);
    ++next;
  }
  return next;
}

// A table entry from a count's samples: their mean or median.
double entry(std::vector<double>& samples, bool mean) {
  return mean ? moebench::mean(samples) : percentile(samples, 50);
}

// Mean (or median) wall time per task for each token count, us; `run` runs one task
// on the given buffer index and returns its time in ns. After warm_up,
// `repeats` rounds each time every token count once, so
// a transient slows one sample of every count rather than every sample of
// one. Each count runs `burst` tasks back to back (different buffers), as
// a layer runs its experts, and every one is a sample; with burst 1 a task
// follows one of the next larger count (the counts run largest first; until
// 2026-11-26 smallest first, so a 1-token task followed a 256-token one).
template <class Run>
std::vector<double> measure(const std::vector<int64_t>& tokens, int repeats, int burst,
                            int64_t buffers, bool mean, int warmup_ms, Run&& run) {
  int64_t next = warm_up(buffers, warmup_ms, [&](int64_t i) { run(i, 1); });
  for (int64_t T : tokens) run(next++, T);  // first use of each activation size
  std::vector<std::vector<double>> xs(tokens.size());
  for (int r = 0; r < repeats; ++r) {
    // Largest count first: each count follows its neighbour, as a
    // decode step's one-token tasks follow one-token tasks, never a task of
    // hundreds of tokens (where the CPU lowers its clock for AVX-512 or AMX
    // and takes a while to raise it: check_transition below).
    for (size_t i = tokens.size(); i-- > 0;) {
      for (int b = 0; b < burst; ++b) xs[i].push_back(run(next++, tokens[i]) / 1e3);
    }
  }
  std::vector<double> us;
  for (auto& x : xs) us.push_back(entry(x, mean));
  return us;
}

// Whether a task's time depends on the task before it (one-token
// tasks ran at 0.90-0.93 of tables measured in ascending order, where a
// one-token task followed the largest count's task of the round before):
// `rounds` pairs, each a one-token task right after a task of `heavy` tokens
// and one right after a one-token task (the pairs' order alternated), every
// task on the next buffer. Returns the one-token time after the heavy task
// over the one after a one-token task: the median of the per-round ratios
// and its 95% interval from their order statistics (a mean of ratios went to
// 10 +- 18 on one stalled round of 21 on the development VM).
struct Transition {
  double median = 0, lo = 0, hi = 0;
};
Transition check_transition(RealCpuExecutor& ex, const CostModel& cost, int64_t heavy, int rounds) {
  const int64_t E = ex.routed_buffers();
  int64_t next = 0;
  auto task = [&](int64_t T) {
    const int64_t i = next++;
    return ex.cpu_expert_ns(cost, int32_t(i / E), int32_t(i % E), T, false);
  };
  std::vector<double> ratio;
  for (int r = 0; r < rounds; ++r) {
    double after_heavy = 0, after_light = 0;
    for (int half = 0; half < 2; ++half) {
      if ((half == 0) == (r % 2 == 0)) {
        task(heavy);
        after_heavy = task(1);
      } else {
        task(1);
        after_light = task(1);
      }
    }
    ratio.push_back(after_heavy / after_light);
  }
  std::sort(ratio.begin(), ratio.end());
  const double n = double(ratio.size());
  // The ranks whose interval holds the median with 95% (normal approximation
  // to the binomial; the whole range for very few rounds).
  const double half = 0.98 * std::sqrt(n);
  const size_t lo =
      size_t(std::clamp(std::floor(n / 2.0 - half) - 1.0, 0.0, n - 1));  // 1-based rank n/2 - half
  const size_t hi =
      size_t(std::clamp(std::ceil(n / 2.0 + half), 0.0, n - 1));  // 1-based rank 1 + n/2 + half
  return {percentile(ratio, 50), ratio[lo], ratio[hi]};
}

// "auto"'s candidates for the executor's model and dtype, each timed on
// the routed expert shape at every --choice-tokens count: after the same
// untimed warm-up as measure(), --choice-repeats rounds, each running every
// count once per candidate (the candidates' order rotated per round, each
// task on the next buffer), so the candidates see the same drift. Returns
// the mean (or median) per candidate and count, us; empty with fewer than
// two candidates (nothing to choose).
std::vector<KernelTiming> measure_candidates(RealCpuExecutor& ex, WeightDtype dt,
                                             const CalibrateOptions& opt, bool mean) {
  const auto names = auto_candidates(dt);
  if (names.size() < 2) return {};
  std::vector<std::unique_ptr<ExpertKernel>> ks;
  for (const auto& n : names) ks.push_back(make_expert_kernel(n));
  int64_t next = warm_up(ex.routed_buffers(), opt.warmup_ms, [&](int64_t i) {
    ex.time_routed_with(*ks[size_t(i % int64_t(ks.size()))], i, 1);
  });
  for (auto& k : ks)
    for (int64_t T : opt.choice_tokens) ex.time_routed_with(*k, next++, T);
  const size_t C = ks.size(), N = opt.choice_tokens.size();
  std::vector<std::vector<double>> xs(C * N);
  for (int r = 0; r < opt.choice_repeats; ++r) {
    for (size_t i = N; i-- > 0;) {  // largest count first, as measure()
      for (size_t j = 0; j < C; ++j) {
        const size_t c = (j + size_t(r)) % C;
        xs[c * N + i].push_back(ex.time_routed_with(*ks[c], next++, opt.choice_tokens[i]) / 1e3);
      }
    }
  }
  std::vector<KernelTiming> out;
  for (size_t c = 0; c < C; ++c) {
    KernelTiming t{
        names[c], std::vector<double>(opt.choice_tokens.begin(), opt.choice_tokens.end()), {}};
    for (size_t i = 0; i < N; ++i) t.time_us.push_back(entry(xs[c * N + i], mean));
    out.push_back(std::move(t));
  }
  return out;
}

// The rest of a CPU-only step, with the real executor's own kernels
// (harness/backend/real_cpu_blocks.h): a MoE block's attention, norms and
// router, the dense FFN (models with dense blocks) and the lm head, for
// each of --layer-tokens tokens in one sequence starting at position 0
// (a prefill of that many tokens; one token: a decode step at context 1),
// the blocks taken round-robin so that consecutive tasks read different
// weights, as a step does.
std::vector<CostTable> measure_step_tables(RealCpuExecutor& ex, const ModelSpec& m,
                                           const CalibrateOptions& opt, bool mean) {
  const int64_t max_t = opt.layer_tokens.back();
  ex.begin_run(1, max_t, max_t, false);
  std::vector<StepTokens> steps;
  for (int64_t T : opt.layer_tokens) {
    StepTokens st;
    for (int64_t p = 0; p < T; ++p) {
      st.slot.push_back(0);
      st.pos.push_back(p);
    }
    st.sequences = 1;
    steps.push_back(std::move(st));
  }
  auto step_of = [&](int64_t T) -> const StepTokens& {
    return steps[size_t(std::find(opt.layer_tokens.begin(), opt.layer_tokens.end(), T) -
                        opt.layer_tokens.begin())];
  };
  const int64_t moe = std::max<int64_t>(1, m.moe_layers());
  const std::vector<double> x(opt.layer_tokens.begin(), opt.layer_tokens.end());
  std::vector<CostTable> out;
  const auto att = measure(
      opt.layer_tokens, opt.layer_repeats, 1, moe, mean, opt.warmup_ms, [&](int64_t i, int64_t T) {
        return ex.attention_ns(int32_t(m.first_dense_layers + i % moe), step_of(T), 0.0);
      });
  out.push_back(CostTable{"cpu-attention", m.name, "", x, att});
  fmt::print(stderr, "  cpu-attention us: {}\n", fmt::join(att, " "));
  if (m.first_dense_layers > 0) {
    const auto ffn = measure(opt.layer_tokens, opt.layer_repeats, 1, 1, mean, opt.warmup_ms,
                             [&](int64_t, int64_t T) { return ex.dense_ffn_ns(0, T, 0.0); });
    out.push_back(CostTable{"cpu-dense-ffn", m.name, "", x, ffn});
  }
  const auto head = measure(opt.layer_tokens, opt.layer_repeats, 1, 1, mean, opt.warmup_ms,
                            [&](int64_t, int64_t T) { return ex.lm_head_ns(T, 0.0); });
  out.push_back(CostTable{"cpu-lm-head", m.name, "", x, head});
  fmt::print(stderr, "  cpu-lm-head us: {}\n", fmt::join(head, " "));
  return out;
}

// The largest task's activations of every model (inputs, gate and up
// projections, outputs in fp32, a few buffers of them) must fit in memory:
// a --tokens of 1e8 once ran 42 s of measurement before std::bad_alloc.
void check_activation_memory(const CalibrateOptions& opt) {
  const auto paths = ConfigPaths::defaults();
  int64_t most = 0;
  for (const auto* v : {&opt.tokens, &opt.choice_tokens, &opt.layer_tokens, &opt.gpu_tokens})
    most = std::max(most, v->back());
  for (const std::string& mname : opt.models) {
    const ModelSpec m = load_model(mname, paths);
    const int64_t width = std::max(m.expert_intermediate, m.shared_intermediate);
    const double per_token = 4.0 * 4.0 * double(2 * m.hidden_size + 2 * width);
    if (double(most) * per_token > double(uint64_t(1) << 62)) {
      throw Error(
          fmt::format("calibrate --tokens: expected counts whose activations fit in "
                      "memory, found {} tokens of model '{}'",
                      most, m.name));
    }
    check_allocation(uint64_t(double(most) * per_token),
                     fmt::format("calibrate: activations of a {}-token task of model '{}' "
                                 "(--tokens, --choice-tokens, --layer-tokens, --gpu-tokens)",
                                 most, m.name));
  }
}

// --out is checked before minutes of measurement: never a tracked preset
// folder (calibrate once replaced configs/hardware/local-cpu.toml, the
// profile it read), and writable. An untracked profile may be its own base:
// tools/validate_interleaved.py chains one calibration per model and dtype
// into one file.
void check_calibrate_out(const CalibrateOptions& opt) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(fs::absolute(opt.out, ec), ec);
  for (const fs::path& root : ConfigPaths::tracked_roots()) {
    const fs::path r = fs::weakly_canonical(fs::absolute(root, ec), ec);
    const auto rel = out.lexically_relative(r);
    if (!rel.empty() && *rel.begin() != "..") {
      throw Error(fmt::format(
          "calibrate --out: expected a path outside the tracked presets (a calibrated profile "
          "goes under results/, e.g. results/calibrated/configs/hardware/NAME.toml, and is found "
          "through MOEBENCH_CONFIG_PATH; docs/USAGE.md), found '{}' inside '{}'",
          opt.out, root.string()));
    }
  }
  check_writable(opt.out, "calibrate --out");
}

// What is refused before minutes of measurement, not after.
void check_calibrate_options(const CalibrateOptions& opt, const HardwareProfile& h) {
  if (h.has_gpu() && !gpu::available()) {
    throw Error(fmt::format(
        "calibrate --hardware: '{}' has {} GPU(s); measuring its GPU tables expected a CUDA "
        "device, found {}",
        h.name, h.gpu.count, gpu::describe_device()));
  }
  if (opt.under_load && !h.has_gpu()) {
    throw Error(fmt::format(
        "calibrate --under-load: expected a profile with a GPU (the other lanes are its copies "
        "and its experts beside the CPU's), found '{}' with {} GPUs",
        h.name, h.gpu.count));
  }
  if (opt.statistic != "mean" && opt.statistic != "median") {
    throw Error(
        fmt::format("calibrate --statistic: expected mean or median, found '{}'", opt.statistic));
  }
  check_token_counts(opt.tokens, "--tokens");
  check_token_counts(opt.gpu_tokens, "--gpu-tokens");
  check_token_counts(opt.gpu_contexts, "--gpu-contexts");
  check_token_counts(opt.layer_tokens, "--layer-tokens");
  check_token_counts(opt.choice_tokens, "--choice-tokens");
  check_activation_memory(opt);
  check_calibrate_out(opt);
}

// What the CPU half measured: the (model, dtype) pairs and each pair's
// transition check ("model dtype median (lo-hi)").
struct CpuMeasured {
  std::set<std::pair<std::string, std::string>> sets;
  std::vector<std::string> transitions;
};

// "auto"'s candidates timed against each other on this model and dtype
// (entries of the base for them replaced, not mixed); the executor runs the
// fastest per count from then on.
void time_auto_candidates(HardwareProfile& h, RealCpuExecutor& ex, const ModelSpec& m,
                          const std::string& dname, const CalibrateOptions& opt, bool mean) {
  auto& kt = h.kernel_times;
  kt.erase(
      std::remove_if(kt.begin(), kt.end(),
                     [&](const KernelTime& t) { return t.model == m.name && t.dtype == dname; }),
      kt.end());
  const auto timings = measure_candidates(ex, m.expert_dtype, opt, mean);
  for (const auto& t : timings) {
    fmt::print(stderr, "  {} {} {} us: {}\n", m.name, dname, t.kernel, fmt::join(t.time_us, " "));
    replace_kernel_time(h, KernelTime{m.name, dname, t.kernel, t.tokens, t.time_us});
  }
  if (!timings.empty()) ex.use_auto_timings(timings);
}

// cpu-expert and cpu-shared of one model and dtype (under --under-load,
// beside expert copies and GPU experts).
void cpu_expert_tables(HardwareProfile& h, RealCpuExecutor& ex, const CostModel& cost,
                       const ModelSpec& m, const std::string& dname, const CalibrateOptions& opt,
                       bool mean) {
  const int64_t E = m.routed_experts;
  const int burst = opt.burst > 0 ? opt.burst : int(m.top_k);
  std::unique_ptr<LaneLoad> load;
  if (opt.under_load) {
    LaneLoad::Options lo;
    lo.model = m;
    lo.link = lo.gpu = true;
    load = std::make_unique<LaneLoad>(lo);
  }
  const std::vector<double> tokens(opt.tokens.begin(), opt.tokens.end());
  const auto routed =
      measure(opt.tokens, opt.repeats, burst, ex.routed_buffers(), mean, opt.warmup_ms,
              [&](int64_t i, int64_t T) {
                return ex.cpu_expert_ns(cost, int32_t(i / E), int32_t(i % E), T, false);
              });
  replace_table(h, CostTable{"cpu-expert", m.name, dname, tokens, routed});
  if (m.shared_experts > 0) {
    const auto shared =
        measure(opt.tokens, opt.repeats, 1, ex.shared_buffers(), mean, opt.warmup_ms,
                [&](int64_t i, int64_t T) { return ex.shared_experts_ns(cost, int32_t(i), T); });
    replace_table(h, CostTable{"cpu-shared", m.name, dname, tokens, shared});
  }
  if (load) {
    const LaneLoad::Counts c = load->stop();
    fmt::print(stderr, "  cpu tables under load ({}): {} copies, {} GPU tasks beside them\n",
               load->describe(), c.copies, c.gpu_tasks);
  }
  fmt::print(stderr, "  cpu-expert us: {}\n", fmt::join(routed, " "));
}

// The CPU tables of every model and dtype: auto's candidates, the expert
// tables, the transition check and (without a GPU) the rest of the step.
CpuMeasured measure_cpu_tables(HardwareProfile& h, const CalibrateOptions& opt, int threads,
                               bool mean) {
  const auto paths = ConfigPaths::defaults();
  CpuMeasured done;
  for (const std::string& mname : opt.models) {
    const ModelSpec base = load_model(mname, paths);
    // The rest of the step runs in bf16 whatever the experts' dtype: measured
    // once per model (with the first dtype's executor), written for each.
    std::vector<CostTable> step_tables;
    for (const std::string& dname : opt.dtypes) {
      ModelSpec m = base;
      m.expert_dtype = parse_weight_dtype(dname);
      RealCpuOptions ro;
      ro.kernel = opt.kernel;
      ro.weights_gib = opt.weights_gib;
      ro.threads = threads;
      RealCpuExecutor ex(m, ro);
      const CostModel cost(m, h);
      if (opt.kernel == "auto") time_auto_candidates(h, ex, m, dname, opt, mean);
      fmt::print(stderr, "{} {}: kernel {}, {} threads, {} routed buffers ...\n", m.name, dname,
                 ex.kernel_name(), threads, ex.routed_buffers());
      cpu_expert_tables(h, ex, cost, m, dname, opt, mean);
      done.sets.insert({m.name, dname});
      if (opt.transition_rounds > 0) {
        const Transition tr = check_transition(ex, cost, opt.tokens.back(), opt.transition_rounds);
        done.transitions.push_back(
            fmt::format("{} {} {:.3f} ({:.3f}-{:.3f})", m.name, dname, tr.median, tr.lo, tr.hi));
        fmt::print(stderr,
                   "  a 1-token task after a {}-token one / after a 1-token one: median {:.3f} "
                   "(95% {:.3f}-{:.3f})\n",
                   opt.tokens.back(), tr.median, tr.lo, tr.hi);
      }
      if (!h.has_gpu() && step_tables.empty()) step_tables = measure_step_tables(ex, m, opt, mean);
      for (CostTable t : step_tables) {
        t.dtype = dname;
        replace_table(h, t);
      }
    }
  }
  return done;
}

// The tables and kernel times of the base profile this run did not measure.
std::vector<std::string> kept_from_base(const HardwareProfile& h, const CalibrateOptions& opt,
                                        const CpuMeasured& done) {
  std::vector<std::string> kept;
  for (const CostTable& t : h.tables) {
    const bool gpu_lane = t.lane == "gpu-expert" || t.lane == "h2d-expert";
    const bool step_lane =
        t.lane == "cpu-attention" || t.lane == "cpu-dense-ffn" || t.lane == "cpu-lm-head";
    // The GPU's rest of a layer: once per model (dtype "*"; gpu-shared "bf16").
    const bool gpu_layer_lane = t.lane == "gpu-layer" || t.lane == "gpu-shared" ||
                                t.lane == "gpu-dense-ffn" || t.lane == "gpu-lm-head";
    const bool of_model =
        std::find(opt.models.begin(), opt.models.end(), t.model) != opt.models.end();
    const bool measured = ((t.lane == "cpu-expert" || t.lane == "cpu-shared" ||
                            (step_lane && !h.has_gpu()) || (gpu_lane && h.has_gpu())) &&
                           done.sets.count({t.model, t.dtype}) > 0) ||
                          (gpu_layer_lane && h.has_gpu() && of_model);
    if (!measured) kept.push_back(fmt::format("{} {} {}", t.lane, t.model, t.dtype));
  }
  for (const KernelTime& t : h.kernel_times) {
    if (done.sets.count({t.model, t.dtype}) == 0)
      kept.push_back(fmt::format("kernel_time {} {} {}", t.model, t.dtype, t.kernel));
  }
  return kept;
}

// The profile's header: the command, the machine, how each table was
// measured, what was kept from the base.
std::string profile_header(const CalibrateOptions& opt, const HardwareProfile& h,
                           const std::vector<std::string>& argv, const Provenance& prov,
                           int threads, const CpuMeasured& done,
                           const std::vector<std::string>& kept) {
  std::ostringstream o;
  o << "# Written by `" << join(argv, " ") << "`\n";
  o << fmt::format("# on {} ({} logical CPUs; flags: {}), {} threads, commit {}{}, {}.\n",
                   prov.cpu_model, prov.logical_cpus, fmt::join(cpu_info().flag_names(), " "),
                   threads, prov.git_commit, prov.git_dirty ? " (uncommitted changes)" : "",
                   prov.utc_time);
  o << fmt::format(
           "# [[table]] cpu-expert / cpu-shared: {} wall time of one expert task (all\n"
           "# threads, weights not in cache; {} rounds) by tokens per expert, measured with the\n"
           "# real backend's executor; they replace the [cpu] roofline for these models and "
           "dtypes.\n",
           opt.statistic, opt.repeats)
    << (opt.under_load ? "# Under load (--under-load): cpu-expert and cpu-shared measured while "
                         "expert copies and GPU\n# experts ran (tools/calibrate_load.h).\n"
                       : "")
    << (h.has_gpu()
            ? std::string()
            : fmt::format(
                  "# [[table]] cpu-attention / cpu-dense-ffn / cpu-lm-head: {} wall time of a MoE "
                  "block's\n# attention, norms and router, the dense FFN and the lm head ({} "
                  "rounds) "
                  "by tokens in\n# the step, one sequence from position 0 (the real backend's own "
                  "kernels, bf16).\n",
                  opt.statistic, opt.layer_repeats))
    << (h.kernel_times.empty()
            ? std::string()
            : fmt::format("# [[kernel_time]]: {} wall time of one routed expert task per candidate "
                          "kernel of \"auto\"\n"
                          "# ({} rounds, the candidates interleaved); the real backend's \"auto\" "
                          "runs the fastest at\n"
                          "# each token count (kernels/cpu/kernel_choice.h); the "
                          "cpu-expert/cpu-shared tables were measured with it.\n",
                          opt.statistic, opt.choice_repeats))
    << fmt::format(
           "# Routed tasks ran {} back to back per token count and round, the counts largest "
           "first.\n",
           opt.burst > 0 ? std::to_string(opt.burst) : std::string("top-k (a layer's worth)"))
    << (done.transitions.empty()
            ? std::string()
            : fmt::format("# A 1-token task right after a {}-token one, over one right after a "
                          "1-token task "
                          "(median of {} paired rounds, 95% interval): {}.\n",
                          opt.tokens.back(), opt.transition_rounds,
                          fmt::join(done.transitions, "; ")));
  if (!kept.empty()) {
    o << fmt::format(
        "# Kept from the base profile '{}' (measured by an earlier command, not repeated here): "
        "{}.\n",
        opt.hardware, fmt::join(kept, ", "));
  }
  o << "# task_overhead_us: median thread-pool hand-off (already inside the tables);\n"
       "# first_task_warmup_us = 0: every task pays the same hand-off. Everything else is\n"
       "# copied from the base profile '"
    << opt.hardware << "'. Re-run on your machine: docs/BACKENDS.md.\n";
  return o.str();
}

void run_calibrate(const CalibrateOptions& opt, const std::vector<std::string>& argv) {
  HardwareProfile h = load_hardware(opt.hardware, ConfigPaths::defaults());
  check_calibrate_options(opt, h);
  const int threads = opt.threads > 0 ? opt.threads : int(h.cpu.threads);
  const bool mean = opt.statistic == "mean";
  const std::filesystem::path out(opt.out);
  const std::string name = !opt.name.empty() ? opt.name : out.stem().string();
  const Provenance prov = collect_provenance(argv, platform_provenance_probes());
  const CpuMeasured done = measure_cpu_tables(h, opt, threads, mean);
  std::ostringstream gpu_notes;
  if (h.has_gpu()) {
    GpuCalibrateOptions g;
    g.models = opt.models;
    g.dtypes = opt.dtypes;
    g.tokens = opt.gpu_tokens;
    g.repeats = opt.gpu_repeats;
    g.contexts = opt.gpu_contexts;
    g.under_load = opt.under_load;
    g.cpu_threads = threads;
    g.weights_gib = opt.weights_gib;
    calibrate_gpu(h, g, gpu_notes);
  }
  const double dispatch = pool_dispatch_us(threads);
  h.name = name;
  // The base's description says what its [cpu] numbers describe; the tables
  // may come from another CPU (the one this ran on), so name both. A base
  // that calibrate wrote already says so (tools/validate_interleaved.py
  // chains one calibration per model and dtype): kept, not nested.
  const std::string calibrated = "CPU expert tables measured by moebench calibrate";
  if (h.description.rfind(calibrated, 0) != 0) {
    h.description = fmt::format("{} on {}{}; the rest from '{}' ({})", calibrated, prov.cpu_model,
                                h.has_gpu() ? ", GPU tables on " + gpu::describe_device() : "",
                                opt.hardware, h.description);
  }
  const std::vector<std::string> kept = kept_from_base(h, opt, done);
  h.source = fmt::format("moebench calibrate on {} ({} threads, commit {}{}, {})", prov.cpu_model,
                         threads, prov.git_commit.substr(0, 12), prov.git_dirty ? "-dirty" : "",
                         prov.utc_time.substr(0, 10));
  h.cpu.threads = threads;
  h.cpu.task_overhead_us = dispatch;
  h.cpu.first_task_warmup_us = 0.0;
  // The profile must load back (schema and validation) before it replaces anything.
  const std::string text = profile_header(opt, h, argv, prov, threads, done, kept) +
                           gpu_notes.str() + profile_toml(h.to_json());
  const std::string where = out.string();
  parse_hardware(cfg::parse_toml(text, where), "hardware");
  write_file_atomic(out, text);
  fmt::print("wrote {} ({} tables, task hand-off {:.1f} us)\n", where, h.tables.size(), dispatch);
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Measure the CPU expert tables the cost model reads (real backend's kernels and threads), "
      "and on a profile with a GPU the GPU expert, copy and link numbers, and write a hardware "
      "profile with them");
  static CalibrateOptions opt;
  cmd->add_option("--hardware", opt.hardware,
                  "Base hardware profile (name or file); one with a GPU needs a GPU here")
      ->required();
  cmd->add_option("--out", opt.out,
                  "Profile to write, e.g. results/calibrated/configs/hardware/NAME.toml (never "
                  "the tracked configs/; found through MOEBENCH_CONFIG_PATH)")
      ->required();
  cmd->add_option("--name", opt.name, "Profile name (default: the output file's stem)");
  cmd->add_option("--models", opt.models, "Model presets whose expert shapes are measured")
      ->delimiter(',');
  cmd->add_option("--dtypes", opt.dtypes, "Expert dtypes (bf16, int8, int4)")->delimiter(',');
  cmd->add_option("--tokens", opt.tokens, "Tokens per expert (ascending)")->delimiter(',');
  cmd->add_option("--threads", opt.threads, "Threads per task (0 = the profile's cpu.threads)")
      ->check(cli::whole(0, 1024));
  cmd->add_option("--weights-gib", opt.weights_gib, "Memory for distinct expert buffers, GiB")
      ->check(cli::real(0.01, 1024.0));
  cmd->add_option("--repeats", opt.repeats,
                  "Rounds over the token counts (each count's samples give its table entry)")
      ->check(cli::whole(1, 10000));
  cmd->add_option("--statistic", opt.statistic,
                  "Table entry from a count's samples: mean (default; a layer's time is a sum of "
                  "tasks) or median");
  cmd->add_option("--burst", opt.burst,
                  "Routed tasks run back to back per token count and round, each a sample (0 = "
                  "the model's top-k, a layer's worth; default 1)")
      ->check(cli::whole(0, 256));
  cmd->add_option("--kernel", opt.kernel, "Expert kernel, or auto");
  cmd->add_option("--gpu-tokens", opt.gpu_tokens,
                  "Tokens per expert of the gpu-expert tables (profiles with a GPU; ascending)")
      ->delimiter(',');
  cmd->add_option("--gpu-contexts", opt.gpu_contexts,
                  "KV entries each new token reads, one gpu-layer table each (profiles with a "
                  "GPU; ascending)")
      ->delimiter(',');
  cmd->add_flag("--under-load", opt.under_load,
                "Measure each table while the other lanes run (profiles with a GPU): CPU tables "
                "beside expert copies and GPU experts, GPU tables beside CPU experts and copies, "
                "h2d-expert beside CPU and GPU experts");
  cmd->add_option("--gpu-repeats", opt.gpu_repeats, "Rounds per GPU table entry")
      ->check(cli::whole(1, 10000));
  cmd->add_option(
         "--layer-tokens", opt.layer_tokens,
         "Tokens in the step of the cpu-attention, cpu-dense-ffn and cpu-lm-head tables (profiles "
         "without a GPU; ascending)")
      ->delimiter(',');
  cmd->add_option("--layer-repeats", opt.layer_repeats, "Rounds per entry of those tables")
      ->check(cli::whole(1, 10000));
  cmd->add_option(
         "--choice-tokens", opt.choice_tokens,
         "Tokens per expert at which the candidates of --kernel auto are timed against each other "
         "(ascending)")
      ->delimiter(',');
  cmd->add_option("--choice-repeats", opt.choice_repeats, "Rounds per candidate and count")
      ->check(cli::whole(1, 10000));
  cmd->add_option(
         "--transition-rounds", opt.transition_rounds,
         "Paired rounds of the check whether a 1-token task is slower right after the largest "
         "count's task (0 = skip)")
      ->check(cli::whole(0, 10000));
  cmd->add_option("--warmup-ms", opt.warmup_ms,
                  "Untimed one-token tasks before each series, at least this long, ms (default "
                  "1000; less only for tests)")
      ->check(cli::whole(0, 60000));
  cmd->callback([cmd] {
    std::vector<std::string> argv = {"moebench", "calibrate"};
    for (const auto* o : cmd->get_options()) {
      if (o->count() == 0 || o->get_name() == "--help") continue;
      argv.push_back(o->get_name() + " " + join(o->results(), ","));
    }
    run_calibrate(opt, argv);
  });
}

}  // namespace moebench::tools
