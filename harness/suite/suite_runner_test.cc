// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "harness/suite/suite_runner.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "baselines/register.h"
#include "core/results/run_dir.h"
#include "core/scheduler/continuous_scheduler.h"
#include "core/testing/child.h"
#include "core/testing/temp_dir.h"
#include "core/trace/memory_source.h"
#include "core/trace/trace.h"
#include "core/util/atomic_file.h"
#include "core/util/cpu_info.h"
#include "core/util/paths.h"
#include "harness/run/run_case.h"

namespace moebench {
namespace {

// Cases: 3 strategies x `prompts` prompt lengths on Mixtral.
std::string suite_text(int prompts, int decode, const std::string& extra = "") {
  std::string p = "[";
  for (int i = 0; i < prompts; ++i) p += (i ? ", " : "") + std::to_string(8 + 8 * i);
  p += "]";
  return "strategies = [\"all-cpu\", \"gpu-ondemand\", \"fiddler\"]\n" + extra +
         "[suite]\nname = \"t\"\n[model]\npreset = \"mixtral-8x7b\"\nexpert_dtype = \"int4\"\n"
         "[hardware]\npreset = \"hybrimoe-a6000\"\n[workload]\nsequences = 1\nprompt_len = " +
         p + "\ndecode_len = " + std::to_string(decode) + "\n";
}

SuiteOptions options(const testing::TempDir& dir, const std::string& text) {
  SuiteOptions o;
  o.file = dir.write("suite.toml", text);
  o.results_root = dir / "results";
  o.quiet = true;
  return o;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  for (auto& l : split(s, '\n')) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

TEST(RunSuite, WritesManifestAndMatchingJsonlAndCsv) {
  testing::TempDir dir;
  const auto o = run_suite(options(dir, suite_text(2, 4)), builtin_registry());
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.cases, 6);
  EXPECT_EQ(o.ran, 6);
  RunDirectory run(o.run_dir);
  const auto m = run.read_manifest();
  EXPECT_EQ(m["schema_version"], 1);
  EXPECT_EQ(m["status"], "complete");
  EXPECT_FALSE(m["provenance"]["git_commit"].get<std::string>().empty());
  EXPECT_FALSE(m["provenance"]["cpu_model"].get<std::string>().empty());
  EXPECT_TRUE(m["provenance"].contains("onednn_version"));
  EXPECT_EQ(m["cases"].size(), 6u);
  EXPECT_EQ(m["cases"][0]["config"]["model"]["name"], "mixtral-8x7b");
  EXPECT_EQ(m["seeds"], nlohmann::ordered_json::array({1}));
  const auto jl = lines(read_file(o.run_dir / "runs.jsonl"));
  const auto csv = lines(read_file(o.run_dir / "runs.csv"));
  ASSERT_EQ(jl.size(), 6u);
  ASSERT_EQ(csv.size(), 7u);  // header + rows
  // Same columns, same order, in both files; units in the metric names.
  const auto first = nlohmann::ordered_json::parse(jl[0]);
  std::vector<std::string> keys;
  for (auto it = first.begin(); it != first.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(csv[0], join(keys, ","));
  EXPECT_EQ(keys[0], "suite");
  for (const std::string k :
       {"ttft_mean_ms", "tbt_p99_ms", "decode_tokens_per_s", "decode_hit_rate_token_frac",
        "h2d_bytes", "model.top_k", "strategy.cache.kind", "workload.prompt_len"}) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  }
}

TEST(RunSuite, FailingCaseIsRecordedAndTheSuiteGoesOn) {
  testing::TempDir dir;
  // On a CPU-only profile the GPU strategies fail; all-cpu still runs.
  std::string text = suite_text(1, 2);
  text.replace(text.find("hybrimoe-a6000"), std::string("hybrimoe-a6000").size(), "local-cpu");
  const auto o = run_suite(options(dir, text), builtin_registry());
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.failed, 2);
  std::set<std::string> status;
  for (const auto& l : lines(read_file(o.run_dir / "runs.jsonl"))) {
    const auto r = nlohmann::json::parse(l);
    status.insert(r["strategy"].get<std::string>() + "=" + r["status"].get<std::string>());
    if (r["status"] == "error") {
      EXPECT_FALSE(r["error"].get<std::string>().empty());
    }
  }
  EXPECT_EQ(status, (std::set<std::string>{"all-cpu=ok", "fiddler=error", "gpu-ondemand=error"}));
}

// Serving (docs/SERVING.md): one strategy of each component family runs
// under Poisson arrivals to the end with every request served; the same
// seed gives the same numbers; the oracle reads the schedule of its
// previous run until it is its own.
TEST(RunSuite, ServedRunEveryComponentFamily) {
  testing::TempDir dir;
  const std::string text =
      "strategies = [\"dali\", \"smoe\", \"hybrimoe\", \"ktransformers-deferral\", "
      "\"fiddler\", \"oracle\"]\n[suite]\nname = \"t\"\n[model]\npreset = "
      "\"deepseek-v2-lite\"\n[hardware]\npreset = \"dali-rtx3090\"\n[workload]\n"
      "sequences = 12\nprompt_len = 8\ndecode_len = 4\nbatch_size = 3\narrival = \"poisson\"\n"
      "rate = 20.0\nscheduler = \"continuous\"\nmax_batch_tokens = 16\n";
  std::map<std::string, nlohmann::json> first;
  for (const char* sub : {"a", "b"}) {
    SuiteOptions o = options(dir, text);
    o.out = dir / sub;
    const auto out = run_suite(o, builtin_registry());
    EXPECT_EQ(out.failed, 0);
    for (const auto& l : lines(read_file(out.run_dir / "runs.jsonl"))) {
      const auto r = nlohmann::json::parse(l);
      const std::string name = r["strategy"];
      ASSERT_EQ(r["status"], "ok") << name << ": " << r["error"];
      if (name == "oracle") {  // its future was its own schedule
        EXPECT_NE(r["warnings"].dump().find("its own schedule"), std::string::npos)
            << r["warnings"];
      }
      EXPECT_EQ(r["serve_requests"], 12) << name;
      EXPECT_GE(r["serve_ttft_mean_ms"].get<double>(), r["serve_queue_mean_ms"].get<double>());
      EXPECT_GT(r["serve_tpot_p50_ms"].get<double>(), 0.0) << name;
      EXPECT_NE(r["warnings"].dump().find("12 requests"), std::string::npos) << r["warnings"];
      if (std::string(sub) == "a") {
        first[name] = r;
      } else {
        for (const char* k : {"serve_ttft_p99_ms", "serve_tpot_mean_ms", "serve_goodput_rps"})
          EXPECT_EQ(r[k], first[name][k]) << name << " " << k;
      }
    }
  }
  EXPECT_EQ(first.size(), 6u);
  // The oracle's repeated runs apply the residency settings as a single run
  // does: with cache_fill, its expert slots are the fixed batches' ones.
  std::map<std::string, nlohmann::json> fill;
  for (const char* mode : {"served", "static"}) {
    std::string t = "strategies = [\"oracle\"]\n" + text.substr(text.find("[suite]")) +
                    "[strategy_defaults]\nresidency.cache_fill = true\n";
    if (std::string(mode) == "static") {
      for (const char* k : {"arrival = \"poisson\"\n", "rate = 20.0\n",
                            "scheduler = \"continuous\"\n", "max_batch_tokens = 16\n"})
        t.erase(t.find(k), std::string(k).size());
    }
    SuiteOptions o = options(dir, t);
    o.out = dir / (std::string("fill-") + mode);
    const auto out = run_suite(o, builtin_registry());
    const auto r = nlohmann::json::parse(lines(read_file(out.run_dir / "runs.jsonl"))[0]);
    ASSERT_EQ(r["status"], "ok") << mode << ": " << r["error"];
    fill[mode] = r;
  }
  EXPECT_EQ(fill["served"]["gpu_cache_slots"], fill["static"]["gpu_cache_slots"]);
  EXPECT_GT(fill["served"]["gpu_cache_slots"].get<int64_t>(), 0);
  // Chunked prefill: steps that hold prompt chunks beside decode tokens run
  // through every component family too.
  SuiteOptions o = options(dir, text + "chunked_prefill = true\n");
  o.out = dir / "chunked";
  const auto out = run_suite(o, builtin_registry());
  EXPECT_EQ(out.failed, 0);
  for (const auto& l : lines(read_file(out.run_dir / "runs.jsonl"))) {
    const auto r = nlohmann::json::parse(l);
    ASSERT_EQ(r["status"], "ok") << r["strategy"] << ": " << r["error"];
    EXPECT_EQ(r["serve_requests"], 12) << r["strategy"];
    EXPECT_EQ(r["workload.chunked_prefill"], true);
  }
}

// Requests of their own lengths under the static scheduler (uniform
// lengths: once SIGSEGV; a file's lengths with batch arrival: once SIGSEGV
// with the manifest left "running"), and a run resumed after its requests
// file changed or under another --filter is refused, not finished with rows
// of two workloads or marked complete after a few of its cases.
TEST(RunSuite, RequestsOfTheirOwnLengthsRunAndAResumeNeedsTheSameFilesAndFilter) {
  testing::TempDir dir;
  const std::string head =
      "strategies = [\"all-cpu\", \"fiddler\"]\n[suite]\nname = \"t\"\n[model]\npreset = "
      "\"mixtral-8x7b\"\nexpert_dtype = \"int4\"\n[hardware]\npreset = \"hybrimoe-a6000\"\n"
      "[workload]\nsequences = 3\nbatch_size = 2\n";
  dir.write("r.jsonl",
            "{\"arrival_time\": 0, \"prompt_len\": 9, \"output_len\": 4}\n"
            "{\"arrival_time\": 0, \"prompt_len\": 3, \"output_len\": 7}\n"
            "{\"arrival_time\": 0, \"prompt_len\": 5, \"output_len\": 1}\n");
  for (const std::string& w : {std::string("prompt_len = 4\ndecode_len = 2\nlengths = \"uniform\"\n"
                                           "prompt_len_max = 64\n"),
                               std::string("lengths = \"file\"\narrivals = \"r.jsonl\"\n")}) {
    SuiteOptions o = options(dir, head + w);
    o.out = dir / ("run" + std::to_string(w.size()));
    const auto out = run_suite(o, builtin_registry());
    EXPECT_EQ(out.exit_code, 0) << w;
    for (const auto& l : lines(read_file(out.run_dir / "runs.jsonl"))) {
      const auto r = nlohmann::json::parse(l);
      EXPECT_EQ(r["status"], "ok") << w << r["error"];
    }
  }
  // Epoch milliseconds read as seconds are run relative to the first, and said.
  dir.write("ms.jsonl",
            "{\"arrival_time\": 1733558400000, \"prompt_len\": 4, \"output_len\": 2}\n"
            "{\"arrival_time\": 1733558400100, \"prompt_len\": 4, \"output_len\": 2}\n"
            "{\"arrival_time\": 1733558400200, \"prompt_len\": 4, \"output_len\": 2}\n");
  SuiteOptions ms = options(dir, head +
                                     "lengths = \"file\"\narrival = \"file\"\n"
                                     "scheduler = \"continuous\"\narrivals = \"ms.jsonl\"\n");
  ms.out = dir / "ms";
  const auto ms_out = run_suite(ms, builtin_registry());
  for (const auto& l : lines(read_file(ms_out.run_dir / "runs.jsonl"))) {
    const auto r = nlohmann::json::parse(l);
    EXPECT_EQ(r["status"], "ok") << r["error"];
    EXPECT_NE(r["warnings"].dump().find("looks like milliseconds"), std::string::npos)
        << r["warnings"];
  }
  SuiteOptions o = options(dir, head + "lengths = \"file\"\narrivals = \"r.jsonl\"\n");
  o.out = dir / "resumed";
  o.filter = "strategy.name=all-cpu";
  EXPECT_EQ(run_suite(o, builtin_registry()).exit_code, 0);
  o.resume = true;
  o.filter = "";
  try {
    run_suite(o, builtin_registry());
    ADD_FAILURE() << "a resume under another --filter accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected --filter 'strategy.name=all-cpu'"),
              std::string::npos)
        << e.what();
  }
  o.filter = "strategy.name=all-cpu";
  dir.write("r.jsonl",
            "{\"arrival_time\": 0, \"prompt_len\": 9, \"output_len\": 4}\n"
            "{\"arrival_time\": 0, \"prompt_len\": 3, \"output_len\": 8}\n"
            "{\"arrival_time\": 0, \"prompt_len\": 5, \"output_len\": 1}\n");
  try {
    run_suite(o, builtin_registry());
    ADD_FAILURE() << "a resume after the requests file changed accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a file it reads"), std::string::npos) << e.what();
  }
}

// A folder whose name is not UTF-8 (byte 0xFF) once ended the run with
// "internal error" (nlohmann's dump refused the manifest) and left a locked
// folder without a manifest: every file is written, the byte shown as U+FFFD.
TEST(RunSuite, APathThatIsNotUtf8IsWrittenNotAnInternalError) {
  testing::TempDir dir;
  SuiteOptions o = options(dir, suite_text(1, 2));
  o.out = dir / "run-\xff";
  const auto out = run_suite(o, builtin_registry());
  EXPECT_EQ(out.exit_code, 0);
  const auto m = RunDirectory(out.run_dir).read_manifest();
  EXPECT_EQ(m["status"], "complete");
  EXPECT_EQ(lines(read_file(out.run_dir / "runs.jsonl")).size(), 3u);
}

// Serving on the real CPU backend (docs/SERVING.md): requests arrive
// against the wall clock. The queueing arithmetic is checked against the
// simulated queue on the same measured step times: the continuous scheduler
// driven by a clock that advances by each measured step gives each
// request's TTFT within the host's time between steps.
TEST(RunSuite, ServedOnTheRealBackendQueuesAsItsMeasuredStepsSay) {
  testing::TempDir dir;
  const std::string text =
      "strategies = [\"all-cpu\"]\n[suite]\nname = \"t\"\nbackend = \"real\"\n"
      "real_weights_gib = 0.05\nreal_threads = 1\n[model]\npreset = \"tiny-deepseek\"\n"
      "[hardware]\npreset = \"local-cpu\"\n[workload]\nsequences = 12\nprompt_len = 2\n"
      "decode_len = 2\nbatch_size = 2\narrival = \"poisson\"\nrate = 20000.0\n"
      "scheduler = \"continuous\"\n";
  const ConfigPaths paths = ConfigPaths::defaults();
  const Experiment ex = load_experiment_text(text, "s.toml", dir.path(), paths, nullptr);
  EngineOptions eo;
  eo.return_steps = true;
  const CaseRun run = run_case(ex.cases[0], builtin_registry(), paths, eo);
  const RunMetrics& m = run.result.metrics;
  const size_t n = 12;
  ASSERT_EQ(m.requests.size(), n);
  ASSERT_EQ(run.result.steps.size(), run.result.step_spans_ns.size());
  std::vector<double> arrival;
  for (const RequestTimes& r : m.requests) {
    EXPECT_GE(r.start_ns, r.arrival_ns);  // never before it arrives, on the wall clock
    arrival.push_back(r.arrival_ns);
  }
  // The simulated queue on the measured step times.
  ContinuousScheduler replay;
  replay.start({std::vector<SequenceInfo>(n, SequenceInfo{2, 2}), arrival, 2, 2048});
  std::vector<double> ttft(n, -1);
  double now = 0, gaps = 0;
  StepPlan sp;
  for (size_t i = 0; replay.next(now, &sp); ++i) {
    ASSERT_LT(i, run.result.steps.size());
    const auto [start, end] = run.result.step_spans_ns[i];
    const double prev_end = i > 0 ? run.result.step_spans_ns[i - 1].second : 0.0;
    gaps += std::max(0.0, start - std::max(prev_end, run.result.steps[i].not_before_ns));
    now = std::max(now, sp.not_before_ns) + (end - start);
    for (const auto& [seq, pos] : sp.tokens)
      if (pos == 1 && ttft[size_t(seq)] < 0) ttft[size_t(seq)] = now - arrival[size_t(seq)];
  }
  double real_mean = 0, sim_mean = 0;
  for (size_t i = 0; i < n; ++i) {
    real_mean += (m.requests[i].first_token_ns - m.requests[i].arrival_ns) / double(n);
    sim_mean += ttft[i] / double(n);
  }
  std::printf(
      "real mean TTFT %.3f ms, simulated on the measured steps %.3f ms, host time between "
      "steps %.3f ms\n",
      real_mean / 1e6, sim_mean / 1e6, gaps / 1e6);
  // The real run also spent the host's time between steps (and its sleeps'
  // overshoot): the two agree within it (plus 0.2 ms of the clock's reads).
  EXPECT_NEAR(real_mean, sim_mean, gaps + 0.2e6)
      << "real mean TTFT " << real_mean / 1e6 << " ms, simulated on the measured steps "
      << sim_mean / 1e6 << " ms, host time between steps " << gaps / 1e6 << " ms";
}

TEST(RunSuite, RealBackendRunsCpuOnlyCasesAndRefusesAGpuProfile) {
  testing::TempDir dir;
  auto text = [](const std::string& backend, const std::string& hw) {
    return "strategies = [\"all-cpu\"]\n[suite]\nname = \"t\"\nbackend = \"" + backend +
           "\"\nreal_weights_gib = 0.05\nrepetitions = 2\nreal_threads = 1024\n[model]\npreset = "
           "\"deepseek-v2-lite\"\n[hardware]\npreset = \"" +
           hw + "\"\n[workload]\nsequences = 1\nprompt_len = 4\ndecode_len = 2\n";
  };
  std::filesystem::path real_dir;
  auto run_rows = [&](const std::string& backend, const std::string& hw, const std::string& sub) {
    SuiteOptions o = options(dir, text(backend, hw));
    o.out = dir / sub;
    o.timeline = backend == "real";
    const auto out = run_suite(o, builtin_registry());
    if (backend == "real") real_dir = out.run_dir;
    std::vector<nlohmann::json> rows;
    for (const auto& l : lines(read_file(out.run_dir / "runs.jsonl")))
      rows.push_back(nlohmann::json::parse(l));
    return rows;
  };
  const auto real = run_rows("real", "local-cpu", "real");
  ASSERT_EQ(real.size(), 2u);  // two measured repetitions
  for (const auto& r : real) {
    ASSERT_EQ(r["status"], "ok") << r["error"];
    EXPECT_EQ(r["backend"], "real");
    EXPECT_NE(
        r["warnings"].get<std::string>().find("real backend: routed and shared experts executed"),
        std::string::npos);
    EXPECT_GT(r["expert_ms_per_moe_layer"].get<double>(), 0.0);
    EXPECT_GT(r["host_wall_s"].get<double>(), 0.0);
    // 1,024 threads on this machine's CPUs only time their own contention:
    // capped, and said (a thread count the system refuses is an error).
    EXPECT_NE(r["warnings"].get<std::string>().find("suite.real_threads = 1024 is more than the " +
                                                    std::to_string(cpu_info().logical_cpus) +
                                                    " CPUs this process may run on"),
              std::string::npos)
        << r["warnings"];
    // every task of a CPU-only step ran (nothing is left to the
    // cost model), TTFT and TBT are the steps' wall clock, and the lanes'
    // composition of the measured durations is beside them.
    EXPECT_EQ(r["warnings"].get<std::string>().find("cost model"), std::string::npos)
        << r["warnings"];
    EXPECT_NE(r["warnings"].get<std::string>().find("attention (MLA, absorbed)"),
              std::string::npos);
    EXPECT_GT(r["composed_tbt_mean_ms"].get<double>(), 0.0);
    EXPECT_GT(r["composed_ttft_mean_ms"].get<double>(), 0.0);
    // The composition can only miss time between tasks (one FIFO lane, the
    // tasks run one after another): never longer than the wall clock.
    EXPECT_LE(r["composition_error_tbt"].get<double>(), 0.0);
    EXPECT_GT(r["composition_error_tbt"].get<double>(), -1.0);
  }
  // The timeline: the composed lanes (process 0) and the measured tasks
  // (process 1): per step one attention per block (27) and one lm head.
  {
    const auto tl = nlohmann::json::parse(
        read_file(real_dir / "timelines" / (real[0]["case_id"].get<std::string>() + ".json")));
    std::map<std::pair<int, std::string>, int> n;
    for (const auto& e : tl["traceEvents"]) {
      if (e["ph"] == "X") ++n[{e["pid"].get<int>(), e["cat"].get<std::string>()}];
    }
    EXPECT_EQ((n[{1, "attention"}]), 27 * 3);  // prefill and two decode steps
    EXPECT_EQ((n[{1, "lm-head"}]), 3);
    EXPECT_EQ((n[{1, "dense-ffn"}]), 3);
    EXPECT_EQ((n[{0, "attention"}]), 27 * 3);
    EXPECT_EQ((n[{1, "cpu-expert"}]), (n[{0, "cpu-expert"}]));
  }
  const auto sim = run_rows("sim", "local-cpu", "sim");
  ASSERT_EQ(sim.size(), 2u);
  EXPECT_NE(sim[0]["case_id"], real[0]["case_id"]);  // the backend is part of the case's identity
  EXPECT_TRUE(sim[0]["warnings"].is_null());
  EXPECT_TRUE(sim[0]["composed_tbt_mean_ms"].is_null());
  EXPECT_TRUE(sim[0]["composition_error_tbt"].is_null());
  // Same step loop: the same routing, so the same expert work was counted.
  EXPECT_EQ(sim[0]["decode_activations"], real[0]["decode_activations"]);
  // A GPU profile on the real backend is refused when the suite is loaded,
  // so --dry-run and `config validate` say so too (not only at run time).
  try {
    run_rows("real", "hybrimoe-a6000", "gpu");
    FAIL() << "a real-backend case on a GPU profile was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "suite.backend");
    EXPECT_NE(std::string(e.what()).find("hardware 'hybrimoe-a6000' (1 GPU"), std::string::npos)
        << e.what();
  }
  SuiteOptions dry = options(dir, text("real", "hybrimoe-a6000"));
  dry.dry_run = true;
  EXPECT_THROW(run_suite(dry, builtin_registry()), ConfigError);
}

TEST(RunSuite, FilterSelectsCasesAndRejectsUnknownKeys) {
  testing::TempDir dir;
  auto o = options(dir, suite_text(3, 2));
  o.filter = "strategy.name=fiddler, workload.prompt_len=16";
  EXPECT_EQ(run_suite(o, builtin_registry()).cases, 1);
  // Alternatives: key=a|b matches either value, key~a|b contains either.
  o.filter = "strategy.name=fiddler|all-cpu, workload.prompt_len=16|24";
  EXPECT_EQ(run_suite(o, builtin_registry()).cases, 4);
  o.filter = "strategy.name~ondem|fidd, part=x|t";
  EXPECT_EQ(run_suite(o, builtin_registry()).cases, 6);
  o.filter = "strategy.name=fiddler|";  // an empty alternative matches nothing here
  EXPECT_EQ(run_suite(o, builtin_registry()).cases, 3);
  o.filter = "strategy.nme=fiddler";
  try {
    run_suite(o, builtin_registry());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--filter: expected a configuration key (e.g. strategy.name, model.name, "
              "workload.prompt_len), found "
              "'strategy.nme'; did you mean 'strategy.name'?");
  }
}

// kill -9 in the middle of a suite, then --resume: every case exactly once.
TEST(RunSuite, ResumeAfterKillLosesAndDuplicatesNothing) {
  testing::TempDir dir;
  auto o = options(dir, suite_text(12, 64));  // 36 cases
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    run_suite(o, builtin_registry());
    _exit(0);
  }
  // Wait until some cases are committed, then kill without warning.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::filesystem::path run_dir;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (const auto& d : std::filesystem::directory_iterator(dir / "results" / "t", ec))
      run_dir = d.path();
    int n = 0;
    if (!run_dir.empty()) {
      for ([[maybe_unused]] const auto& f :
           std::filesystem::directory_iterator(run_dir / "cases", ec))
        ++n;
    }
    if (n >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_FALSE(run_dir.empty());
  // SIGKILL leaves no chance to write: the manifest still says "running",
  // with the pid of a process that no longer exists (docs/USAGE.md, "Reading a result").
  const auto killed = RunDirectory(run_dir).read_manifest();
  EXPECT_EQ(killed["status"], "running");
  EXPECT_EQ(killed["pid"], static_cast<int64_t>(child));
  o.resume = true;
  const auto r = run_suite(o, builtin_registry());
  EXPECT_EQ(r.run_dir, run_dir);  // the interrupted run was found and finished
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.ran + r.skipped, 36);
  const auto jl = lines(read_file(run_dir / "runs.jsonl"));
  std::set<std::string> ids;
  for (const auto& l : jl) ids.insert(nlohmann::json::parse(l)["case_id"].get<std::string>());
  EXPECT_EQ(jl.size(), 36u);
  EXPECT_EQ(ids.size(), 36u);
  EXPECT_EQ(RunDirectory(run_dir).read_manifest()["status"], "complete");
  // A second --resume finds nothing to do and starts a new run instead.
  const auto again = run_suite(o, builtin_registry());
  EXPECT_NE(again.run_dir, run_dir);
}

TEST(RunSuite, ResumeRefusesARunWhoseProcessIsStillAlive) {
  testing::TempDir dir;
  auto o = options(dir, suite_text(1, 2));
  const auto first = run_suite(o, builtin_registry());
  // A live process named run_suite stands in for a run in progress.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    execl("/bin/sleep", "run_suite", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let exec replace the image
  RunDirectory rd(first.run_dir);
  auto m = rd.read_manifest();
  m["status"] = "running";
  m["pid"] = static_cast<int64_t>(child);
  rd.write_manifest(m);
  o.out = first.run_dir;
  o.resume = true;
  try {
    run_suite(o, builtin_registry());
    ADD_FAILURE() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  fmt::format("found one still running (run_suite pid {} on", child)),
              std::string::npos)
        << e.what();
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  const auto again = run_suite(o, builtin_registry());  // now it may be resumed
  EXPECT_EQ(again.skipped, 3);
  EXPECT_EQ(RunDirectory(first.run_dir).read_manifest()["status"], "complete");
}

TEST(RunSuite, ExistingRunDirectoryNeedsResume) {
  testing::TempDir dir;
  auto o = options(dir, suite_text(1, 2));
  const auto first = run_suite(o, builtin_registry());
  o.out = first.run_dir;
  EXPECT_THROW(run_suite(o, builtin_registry()), Error);
  o.resume = true;
  const auto again = run_suite(o, builtin_registry());
  EXPECT_EQ(again.ran, 0);
  EXPECT_EQ(again.skipped, 3);
}

// A full disk during a run once ended the process from a worker thread
// (SIGABRT), leaving a 0-byte temporary and a manifest saying "running".
// A file size limit stands in for the full disk (every write past it fails,
// EFBIG instead of ENOSPC, through the same path), between the manifest's size
// and a case file's: the first case fails by name, no case is started after
// it, the run ends "partial" with nothing half-written, and --resume finishes.
TEST(RunSuite, AResultThatCannotBeWrittenEndsTheRunPartialAndResumeFinishesIt) {
  testing::TempDir dir;
  std::string text = suite_text(1, 2);
  text.replace(text.find("[suite]\n"), 8, "[suite]\nrepetitions = 24\n");
  auto o = options(dir, text);
  o.jobs = 2;
  // The sizes of the two kinds of file, from an unlimited run elsewhere.
  auto sized = o;
  sized.results_root = dir / "sizes";
  const auto ref = run_suite(sized, builtin_registry());
  const uint64_t manifest = std::filesystem::file_size(ref.run_dir / "manifest.json");
  uint64_t smallest_case = UINT64_MAX;
  for (const auto& f : std::filesystem::directory_iterator(ref.run_dir / "cases"))
    smallest_case = std::min<uint64_t>(smallest_case, std::filesystem::file_size(f.path()));
  // The run sets aside the manifest's size and 64 KiB for its last manifest.
  const uint64_t reserve = manifest + (64 << 10);
  ASSERT_LT(reserve + 4096, smallest_case) << "the limit must fall between the two";
  EXPECT_EQ(testing::exit_code_in_child([&] {
              ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails instead of ending it
              const rlim_t cap = (reserve + smallest_case) / 2;
              const rlimit lim{cap, cap};
              if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) return 7;
              return run_suite(o, builtin_registry()).exit_code;
            }),
            1);
  std::filesystem::path run_dir;
  for (const auto& d : std::filesystem::directory_iterator(dir / "results" / "t"))
    run_dir = d.path();
  ASSERT_FALSE(run_dir.empty());
  const auto m = RunDirectory(run_dir).read_manifest();
  EXPECT_EQ(m["status"], "partial");
  ASSERT_GE(m["write_errors"].size(), 1u);
  const std::string first = m["write_errors"][0].get<std::string>();
  EXPECT_EQ(first.rfind("case ", 0), 0u) << first;
  EXPECT_NE(first.find("File too large"), std::string::npos) << first;
  for (const auto& f : std::filesystem::recursive_directory_iterator(run_dir))
    EXPECT_EQ(f.path().filename().string().find(".tmp."), std::string::npos) << f.path();
  o.resume = true;
  const auto r = run_suite(o, builtin_registry());
  EXPECT_EQ(r.run_dir, run_dir);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.ran + r.skipped, 3);
  EXPECT_EQ(RunDirectory(run_dir).read_manifest()["status"], "complete");
}

// --out into a folder of the user's: its files named like temporaries
// ("draft.tmp.999999.0") were deleted, and the message promised "a new or
// empty folder" while a non-empty one was written into.
TEST(RunSuite, AnOutFolderThatIsNotARunIsRefusedAndLeftAsItWas) {
  testing::TempDir dir;
  auto o = options(dir, suite_text(1, 2));
  o.out = dir / "mine";
  dir.write("mine/draft.tmp.999999.0", "a draft");
  try {
    run_suite(o, builtin_registry());
    ADD_FAILURE() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected a new or empty folder, or a run folder to "
                                         "--resume, found a folder that is not a run (no "
                                         "manifest.json) holding 'draft.tmp.999999.0'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_file(dir / "mine" / "draft.tmp.999999.0"), "a draft");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir / "mine"))
    ++entries;
  EXPECT_EQ(entries, 1);
  o.out = dir / "empty";  // an empty folder is fine
  std::filesystem::create_directory(o.out);
  EXPECT_EQ(run_suite(o, builtin_registry()).exit_code, 0);
}

// An unusable results root was reported as the 100th folder name tried
// inside it ("<root>/<suite>/<stamp>-<hash>-100") after 99 retries.
TEST(RunSuite, AnUnusableResultsRootIsNamedAtOnce) {
  testing::TempDir dir;
  auto o = options(dir, suite_text(1, 2));
  dir.write("a-file", "x");
  std::filesystem::create_symlink(dir / "nothing", dir / "dangling");
  std::filesystem::create_symlink(dir / "loop", dir / "loop");
  const std::pair<std::string, std::string> roots[] = {
      {"a-file", "found a regular file"},
      {"dangling", "found a symbolic link to nothing"},
      {"loop", "found an unusable path (Too many levels of symbolic links)"},
      {"a-file/sub", "found an unusable path (Not a directory)"}};
  for (const auto& [root, found] : roots) {
    o.results_root = dir / root;
    try {
      run_suite(o, builtin_registry());
      ADD_FAILURE() << root << " was accepted";
    } catch (const Error& e) {
      const std::string want = "--results " + (dir / root).string() +
                               ": expected a folder results can be written in, " + found;
      EXPECT_EQ(std::string(e.what()), want);
    }
  }
}

// two run_suite processes into one --out (different suites, the
// same suite, or two --resume of one run) both ran and wrote over each
// other. The folder is locked; the second is refused and told who holds it.
TEST(RunSuite, ASecondRunIntoALockedFolderIsRefused) {
  testing::TempDir dir;
  auto o = options(dir, suite_text(1, 2));
  o.out = dir / "run";
  {
    RunDirectory holder(o.out);
    holder.lock("run_suite pid 4242 (another suite)");
    try {
      run_suite(o, builtin_registry());
      ADD_FAILURE() << "expected an Error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("found it in use by run_suite pid 4242 (another suite)"),
                std::string::npos)
          << e.what();
    }
    o.resume = true;  // a second --resume of a run in progress: the same
    EXPECT_THROW(run_suite(o, builtin_registry()), Error);
    o.resume = false;
  }
  // Released when its holder ends (a killed process releases it too).
  EXPECT_EQ(run_suite(o, builtin_registry()).exit_code, 0);
}

// A paper suite ends with its verdicts, which the report computes from the
// newest run under <results>/<suite>/ and writes to <results>/report. A run
// put elsewhere with --out was not judged (an older run under the results
// root was) and its report landed in a folder the user did not name.
TEST(RunSuite, ARunOutsideTheResultsRootIsNotJudgedAndWritesNoReportThere) {
  testing::TempDir dir;
  std::string text = suite_text(1, 2);
  const std::string head = "[suite]\n";
  text.replace(text.find(head), head.size(), head + "reproduces = \"a paper\"\n");
  auto o = options(dir, text);
  o.quiet = false;
  o.out = dir / "elsewhere";
  ::testing::internal::CaptureStdout();
  const auto r = run_suite(o, builtin_registry());
  const std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(printed.find("verdicts not computed: the report reads runs under"), std::string::npos)
      << printed;
  EXPECT_FALSE(std::filesystem::exists(dir / "results")) << printed;
  EXPECT_TRUE(std::filesystem::exists(dir / "elsewhere" / "runs.csv"));
}

TEST(RunSuite, AFilterThatMatchesNothingIsAnErrorAndWritesNothing) {
  testing::TempDir dir;
  auto o = options(dir, suite_text(1, 2));
  o.filter = "strategy.name=zzz";
  try {
    run_suite(o, builtin_registry());
    ADD_FAILURE() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "--filter 'strategy.name=zzz': expected to match at least one of the 3 cases "
                  "of suite 't', found none"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "results" / "t"));
}

TEST(RunSuite, DryRunSaysWhichCasesCannotRun) {
  testing::TempDir dir;
  auto o = options(
      dir,
      "strategies = [\"gpu-ondemand\", \"all-cpu\"]\n[suite]\nname = \"t\"\n[model]\npreset = "
      "\"mixtral-8x7b\"\nnum_layers = 1024\nrouted_experts = 65536\ntop_k = 64\n[hardware]\npreset "
      "= "
      "\"hybrimoe-a6000\"\n[workload]\nsequences = 1\nprompt_len = 8\ndecode_len = 4\n");
  o.dry_run = true;
  const auto t0 = std::chrono::steady_clock::now();
  const auto d = run_suite(o, builtin_registry());
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_EQ(d.failed, 2);  // neither fits the A6000's 48 GiB (non-expert weights alone: 592 GiB)
  // Run for real, the cases fail at once with the breakdown (once 114 s and 3 GB each).
  o.dry_run = false;
  const auto r = run_suite(o, builtin_registry());
  EXPECT_EQ(r.failed, 2);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
  for (const auto& l : lines(read_file(r.run_dir / "runs.jsonl"))) {
    EXPECT_NE(nlohmann::json::parse(l)["error"].get<std::string>().find("case does not fit"),
              std::string::npos)
        << l;
  }
}

// a predictor that needs gate inputs, on a trace without them,
// failed only when its case came up. --dry-run says so per case, and a run
// is refused at load, naming the component and the trace, before anything
// is written.
// A Mixtral trace of one sequence (4 prompt tokens, 2 generated), with router
// probabilities and without gate inputs.
std::filesystem::path write_mixtral_trace(const std::filesystem::path& path) {
  const ModelSpec m = load_model("mixtral-8x7b", ConfigPaths::defaults());
  TraceInfo info;
  info.model_name = m.name;
  info.model_hash = m.hash();
  info.moe_layers = m.moe_layers();
  info.routing = RoutingConfig::from_model(m);
  info.probs = ProbsStorage::kFull;
  info.sequences = {{4, 2}};
  MemoryTraceSource mem(info);
  for (int64_t t = 0; t < 6; ++t) {
    TokenRecord r;
    r.probs.assign(size_t(m.moe_layers() * 8), 0.01f);
    for (int64_t l = 0; l < m.moe_layers(); ++l) {
      r.ids.insert(r.ids.end(), {int32_t((t + l) % 8), int32_t((t + l + 3) % 8)});
      r.weights.insert(r.weights.end(), {0.7f, 0.3f});
    }
    mem.add(0, std::move(r));
  }
  TraceWriteOptions o;
  o.gate_inputs = false;
  write_trace(mem, path, o);
  return path;
}

TEST(RunSuite, ComponentsWhoseNeedsTheWorkloadCannotMeetAreRefusedAtLoad) {
  testing::TempDir dir;
  write_mixtral_trace(dir / "t.safetensors");
  auto o = options(
      dir,
      "strategies = [\"all-cpu\", \"adapmoe\"]\n[suite]\nname = \"t\"\n[model]\npreset = "
      "\"mixtral-8x7b\"\n[hardware]\npreset = \"hybrimoe-a6000\"\n[workload]\nkind = \"trace\"\n"
      "trace = \"t.safetensors\"\n");
  o.dry_run = true;
  ::testing::internal::CaptureStdout();
  const auto d = run_suite(o, builtin_registry());
  std::fflush(stdout);
  const std::string text = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_EQ(d.failed, 1) << text;  // adapmoe's gate-reuse predictor; all-cpu needs nothing
  EXPECT_NE(text.find("strategy.predictor = \"gate-reuse\" needs gate inputs and gate weights"),
            std::string::npos)
      << text;
  o.dry_run = false;
  try {
    run_suite(o, builtin_registry());
    ADD_FAILURE() << "expected an Error at load";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("found 1 of 2 cases without (nothing was run"), std::string::npos) << m;
    EXPECT_NE(
        m.find("adapmoe / mixtral-8x7b: strategy 'adapmoe': strategy.predictor = \"gate-reuse\""),
        std::string::npos)
        << m;
    EXPECT_NE(m.find("workload.trace 't.safetensors' with no gate inputs (h_trace 0)"),
              std::string::npos)
        << m;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "results" / "t"));
}

// A trace written to while a suite ran gave a case "ok" with another hit
// rate. The cases of a run read the file the suite loaded: one changed since
// (here between load and the case, in place, as dd conv=notrunc does) fails
// the case by name, and the run's other cases fail with it.
TEST(RunSuite, ATraceChangedUnderTheRunFailsItsCasesByName) {
  testing::TempDir dir;
  const auto trace = write_mixtral_trace(dir / "t.safetensors");
  const Experiment ex = load_experiment_text(
      "strategies = [\"all-cpu\", \"gpu-ondemand\"]\n[suite]\nname = \"t\"\n[model]\npreset = "
      "\"mixtral-8x7b\"\n[hardware]\npreset = \"hybrimoe-a6000\"\n[workload]\nkind = "
      "\"trace\"\ntrace = \"t.safetensors\"\n",
      "t.toml", dir.path(), ConfigPaths::defaults(), &builtin_registry());
  ASSERT_EQ(ex.cases.size(), 2u);
  EXPECT_EQ(ex.cases[0].file_stamps.at(trace.string()), file_stamp(trace));
  EXPECT_NO_THROW(run_case(ex.cases[0], builtin_registry(), ConfigPaths::defaults(), {}));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a later modification time
  {
    std::fstream f(trace, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-8, std::ios::end);
    const char zeros[8] = {};
    f.write(zeros, 8);
  }
  for (const Case& c : ex.cases) {
    try {
      run_case(c, builtin_registry(), ConfigPaths::defaults(), {});
      ADD_FAILURE() << c.strategy.name << " finished on a changed trace";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("workload.trace: " + trace.string() +
                                           ": expected the trace file the suite loaded, found "
                                           "that it changed since"),
                std::string::npos)
          << e.what();
    }
  }
}

// SIGTERM waited for the running cases (54 s in one trial). Now
// they stop at their next check, write nothing, and --resume runs them.
TEST(RunSuite, SigtermStopsRunningCasesKeepsFinishedOnesAndResumes) {
  testing::TempDir dir;
  // A first case that is quick and a second that takes far longer than the
  // test waits (DeepSeek-V3, 40,960 tokens generated and simulated).
  auto o = options(
      dir,
      "strategies = [\"all-cpu\"]\n[suite]\nname = \"t\"\n[model]\npreset = \"deepseek-v3\"\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n[workload]\nsequences = [1, 32]\nprompt_len = [4, "
      "1024]\n"
      "decode_len = 256\n");
  o.jobs = 1;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const auto r = run_suite(o, builtin_registry());
    _exit(r.exit_code);
  }
  // Wait for the first committed case, then a little longer, then SIGTERM.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::filesystem::path run_dir;
  int committed = 0;
  while (std::chrono::steady_clock::now() < deadline && committed < 1) {
    std::error_code ec;
    for (const auto& d : std::filesystem::directory_iterator(dir / "results" / "t", ec))
      run_dir = d.path();
    committed = 0;
    if (!run_dir.empty()) {
      for ([[maybe_unused]] const auto& f :
           std::filesystem::directory_iterator(run_dir / "cases", ec))
        ++committed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(committed, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto t0 = std::chrono::steady_clock::now();
  kill(child, SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  const double stop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_LT(stop_s, 10.0);  // stopped, not waited for (the long case runs for minutes)
  const auto m = RunDirectory(run_dir).read_manifest();
  EXPECT_EQ(m["status"], "interrupted");
  const auto kept = RunDirectory(run_dir).finished_cases();
  EXPECT_GE(kept.size(), 1u);
  EXPECT_LT(kept.size(), 4u);  // the long cases did not finish
  for (const auto& [id, c] : kept)
    EXPECT_EQ(c["status"], "ok") << id;  // a stopped case is not a failure
}

// A composite suite's summary says which part (figure or table) each row belongs to.
TEST(RunSuite, TheSummaryOfACompositeSuiteHasAPartColumn) {
  RunRecord a, b;
  a.fields = {{"case_id", "1"},        {"case_index", 0}, {"suite", "ablation"},
              {"parts", "smoe-fig14"}, {"status", "ok"},  {"strategy", "smoe"}};
  b.fields = a.fields;
  b.fields["case_id"] = "2";
  b.fields["parts"] = "hybrimoe-table3";
  const std::string t = summary_table({a, b});
  EXPECT_EQ(t.rfind("#  part ", 0), 0u) << t;
  EXPECT_NE(t.find("hybrimoe-table3"), std::string::npos) << t;
  a.fields["parts"] = "ablation";  // a plain suite: its rows' part is the suite itself, no column
  EXPECT_EQ(summary_table({a}).find("part"), std::string::npos) << summary_table({a});
}

// A case whose simulation is identical to another's (the two comparisons of
// a strategy no fitted entry applies to) is simulated once; its rows copy the
// numbers and name the case (result_of). The copy equals what simulating that
// case alone gives.
TEST(RunSuite, IdenticalSimulationsRunOnceAndTheCopyEqualsARun) {
  testing::TempDir dir;
  const std::string text =
      "strategies = [\"fiddler\", \"ktransformers\"]\n[suite]\nname = \"t\"\n"
      "comparison = [\"as-published\", \"mechanism\"]\n[model]\npreset = \"deepseek-v2-lite\"\n"
      "[hardware]\npreset = \"hybrimoe-a6000\"\n[workload]\nsequences = 1\nprompt_len = "
      "8\ndecode_len = 4\n";
  auto rows_of = [&](SuiteOptions o) {
    const auto out = run_suite(o, builtin_registry());
    EXPECT_EQ(out.exit_code, 0);
    std::map<std::string, nlohmann::json> rows;  // "strategy/comparison" -> row
    for (const auto& l : lines(read_file(out.run_dir / "runs.jsonl"))) {
      const auto r = nlohmann::json::parse(l);
      rows[r["strategy"].get<std::string>() + "/" + r["run.comparison.mode"].get<std::string>()] =
          r;
    }
    return rows;
  };
  SuiteOptions all = options(dir, text);
  all.jobs = 2;
  all.out = dir / "all";
  auto rows = rows_of(all);
  ASSERT_EQ(rows.size(), 4u);
  // fiddler (PyTorch stack, no fitted entry): one simulation for both comparisons.
  const auto& fa = rows["fiddler/as-published"];
  const auto& fm = rows["fiddler/mechanism"];
  ASSERT_TRUE(fa["result_of"].is_null() != fm["result_of"].is_null());
  const auto& copied = fa["result_of"].is_null() ? fm : fa;
  const auto& ran = fa["result_of"].is_null() ? fa : fm;
  EXPECT_EQ(copied["result_of"], ran["case_id"]);
  EXPECT_NE(copied["case_id"], ran["case_id"]);
  // kTransformers: the fitted stack measured on it applies as published only: two simulations.
  EXPECT_TRUE(rows["ktransformers/as-published"]["result_of"].is_null());
  EXPECT_TRUE(rows["ktransformers/mechanism"]["result_of"].is_null());
  EXPECT_NE(rows["ktransformers/as-published"]["decode_tokens_per_s"],
            rows["ktransformers/mechanism"]["decode_tokens_per_s"]);
  // The copied case simulated on its own gives the same numbers.
  SuiteOptions one = options(dir, text);
  one.out = dir / "one";
  one.filter =
      "strategy.name=fiddler,suite.comparison=" + copied["run.comparison.mode"].get<std::string>();
  auto alone = rows_of(one);
  ASSERT_EQ(alone.size(), 1u);
  const auto& a = alone.begin()->second;
  EXPECT_TRUE(a["result_of"].is_null());
  EXPECT_EQ(a["case_id"], copied["case_id"]);
  for (const std::string k : {"ttft_mean_ms", "tbt_mean_ms", "decode_tokens_per_s",
                              "decode_hit_rate_frac", "h2d_bytes", "cpu_busy_s", "total_time_s"}) {
    EXPECT_EQ(a[k], copied[k]) << k;
  }
}

}  // namespace
}  // namespace moebench
