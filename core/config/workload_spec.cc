// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/config/workload_spec.h"

#include "core/config/validate.h"

namespace moebench {

const cfg::Schema<WorkloadSpec>& WorkloadSpec::schema() {
  using S = WorkloadSpec;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("workload");
    s.choice("kind", &S::kind, {"synthetic", "trace"}, "Where routing comes from.")
        .string("generator", &S::generator,
                "Synthetic generator preset (\"auto\" = the model family's preset).")
        .string("trace", &S::trace,
                "Trace file for kind = \"trace\" (relative to the experiment file).")
        .string("calibration_trace", &S::calibration_trace,
                "kind = \"trace\": a separate trace for components that calibrate (placement "
                "profiles, predictors).")
        .integer("seed", &S::seed, "Seed of the synthetic generator.", at_least(0))
        .integer("sequences", &S::sequences,
                 "Sequences in the run (kind = \"trace\": the first N of the trace; unset = all).",
                 between(1, 1 << 20))
        .integer("prompt_len", &S::prompt_len,
                 "Prefill tokens per sequence (kind = \"trace\": a cap on each recorded prompt, "
                 "recorded as the "
                 "longest prompt kept; unset = whole prompts).",
                 between(0, 1 << 20), "tokens")
        .integer("decode_len", &S::decode_len,
                 "Generated tokens per sequence (kind = \"trace\": a cap on each recorded "
                 "generation, recorded as "
                 "the longest kept; unset = all).",
                 between(0, 1 << 20), "tokens")
        .integer("batch_size", &S::batch_size, "Sequences processed together.", between(1, 4096),
                 "sequences")
        .integer("h_trace", &S::h_trace, "Gate-input width of synthetic traces.", between(8, 16384),
                 "elements")
        .integer("calibration_sequences", &S::calibration_sequences,
                 "Calibration sequences (disjoint seed) for predictors and profiles.",
                 between(0, 1 << 16))
        .integer("calibration_prompt_len", &S::calibration_prompt_len,
                 "Prefill tokens per calibration sequence (unset = prompt_len): a predictor or "
                 "profile is "
                 "trained offline, once, not per evaluated prompt length.",
                 between(0, 1 << 20), "tokens")
        .integer("calibration_decode_len", &S::calibration_decode_len,
                 "Generated tokens per calibration sequence (unset = decode_len).",
                 between(0, 1 << 20), "tokens")
        .string("dataset", &S::dataset, "Label of the prompt set (informational).")
        .choice("arrival", &S::arrival, {"batch", "poisson", "gamma", "file"},
                "When each sequence arrives as a request: \"batch\" (all at time 0, the papers' "
                "fixed batches), a Poisson process at `rate`, a Gamma process at `rate` with "
                "`arrival_cv`, or the times of the `arrivals` file (docs/SERVING.md).")
        .number("rate", &S::rate, "Requests per second (arrival = \"poisson\" or \"gamma\").",
                positive(), "requests/s")
        .number("arrival_cv", &S::arrival_cv,
                "arrival = \"gamma\": coefficient of variation of the gaps between arrivals "
                "(1 = Poisson; above 1 bursty).",
                NumRange{kMinArrivalCv, kMaxArrivalCv})
        .string("arrivals", &S::arrivals,
                "arrival = \"file\" or lengths = \"file\": JSONL, one request a line with "
                "arrival_time (s) and prompt_len / output_len (tokens); relative to the "
                "experiment file.")
        .choice("lengths", &S::lengths, {"fixed", "uniform", "file"},
                "Prompt and decode lengths of the requests: prompt_len and decode_len for "
                "every one, uniform up to prompt_len_max / decode_len_max, or the arrivals "
                "file's.")
        .integer("prompt_len_max", &S::prompt_len_max,
                 "lengths = \"uniform\": the longest prompt (unset = prompt_len).",
                 between(0, 1 << 20), "tokens")
        .integer("decode_len_max", &S::decode_len_max,
                 "lengths = \"uniform\": the longest decode (unset = decode_len).",
                 between(0, 1 << 20), "tokens")
        .string("scheduler", &S::scheduler,
                "Which tokens run in each step: a scheduler of core/scheduler/ by name "
                "(`moebench config list` lists them with what each does): \"static\" (the "
                "default: fixed batches of batch_size, each prefilled and decoded to its end) or "
                "\"continuous\" (requests join and leave between steps; docs/SERVING.md).")
        .integer("max_batch_tokens", &S::max_batch_tokens,
                 "A scheduler that reads it (continuous): tokens in one step at most (a prompt "
                 "longer than this runs alone).",
                 between(1, 1 << 24), "tokens")
        .boolean("chunked_prefill", &S::chunked_prefill,
                 "A scheduler that reads it (continuous): prompts run in chunks that fill the "
                 "token budget the running requests' decode tokens leave, so a step may hold both "
                 "phases (docs/SERVING.md).")
        .choice("slo", &S::slo,
                {"local-pc", "mlperf-mixtral-server", "mlperf-deepseek-r1-server",
                 "mlperf-deepseek-r1-interactive"},
                "Serving: the latency bounds goodput counts against (docs/SERVING.md).");
    return s;
  }();
  return s;
}

void WorkloadSpec::validate(const cfg::Value& src, const std::string& prefix) const {
  validate_serving(src, prefix);
  cfg::require_key(src, prefix, "lengths", kind != "trace" || lengths == "fixed",
                   "lengths = \"fixed\" with kind = \"trace\" (the trace's sequences have "
                   "their lengths)",
                   "\"" + lengths + "\"");
  cfg::require_key(src, prefix, "trace", kind != "trace" || !trace.empty(),
                   "a trace file path when kind = \"trace\"", "no value");
  if (kind == "trace") {
    // Keys of the synthetic generator do not apply to a trace: refuse them
    // rather than record a value that had no effect.
    for (const char* k : synthetic_only_keys()) {
      cfg::require_key(
          src, prefix, k, src.find(k) == nullptr,
          "no synthetic-generator key with kind = \"trace\" (the trace fixes the routing)",
          fmt::format("{} is set", k));
    }
    // sequences, prompt_len, decode_len and batch_size are checked against
    // the trace itself when the experiment is expanded (resolve_trace).
    return;
  }
  cfg::require_key(src, prefix, "decode_len", prompt_len + decode_len > 0,
                   "prompt_len + decode_len >= 1", "0 tokens in total");
  if (calibration_prompt_len >= 0 || calibration_decode_len >= 0) {
    const int64_t cp = calibration_prompt_len >= 0 ? calibration_prompt_len : prompt_len;
    const int64_t cd = calibration_decode_len >= 0 ? calibration_decode_len : decode_len;
    cfg::require_key(
        src, prefix,
        calibration_decode_len >= 0 ? "calibration_decode_len" : "calibration_prompt_len",
        cp + cd > 0, "calibration_prompt_len + calibration_decode_len >= 1", "0 tokens in total");
  }
  cfg::require_key(src, prefix, "batch_size", batch_size <= sequences,
                   fmt::format("at most sequences ({})", sequences), std::to_string(batch_size));
}

void WorkloadSpec::validate_serving(const cfg::Value& src, const std::string& prefix) const {
  const bool file = arrival == "file" || lengths == "file";
  cfg::require_key(src, prefix, "arrivals", !file || !arrivals.empty(),
                   "a JSONL file of requests when arrival or lengths is \"file\"", "no value");
  cfg::require_key(
      src, prefix, "arrivals", file || arrivals.empty(),
      "no arrivals file unless arrival or lengths is \"file\"",
      fmt::format("'{}' with arrival = \"{}\", lengths = \"{}\"", arrivals, arrival, lengths));
  const std::string no_effect =
      fmt::format(" with arrival = \"{}\" (it would have no effect)", arrival);
  cfg::require_key(src, prefix, "rate",
                   arrival == "poisson" || arrival == "gamma" || src.find("rate") == nullptr,
                   "no rate" + no_effect, "it is set");
  cfg::require_key(src, prefix, "arrival_cv",
                   arrival == "gamma" || src.find("arrival_cv") == nullptr,
                   "no arrival_cv" + no_effect, "it is set");
  cfg::require_key(src, prefix, "prompt_len_max",
                   prompt_len_max < 0 || (lengths == "uniform" && prompt_len_max >= prompt_len),
                   fmt::format("lengths = \"uniform\" and at least prompt_len ({})", prompt_len),
                   fmt::format("{} with lengths = \"{}\"", prompt_len_max, lengths));
  cfg::require_key(src, prefix, "decode_len_max",
                   decode_len_max < 0 || (lengths == "uniform" && decode_len_max >= decode_len),
                   fmt::format("lengths = \"uniform\" and at least decode_len ({})", decode_len),
                   fmt::format("{} with lengths = \"{}\"", decode_len_max, lengths));
  // The file's lengths apply: a prompt_len or decode_len of the workload
  // would be recorded without having any effect.
  for (const char* k : {"prompt_len", "decode_len"}) {
    cfg::require_key(src, prefix, k, lengths != "file" || src.find(k) == nullptr,
                     fmt::format("no {} with lengths = \"file\" (the arrivals file's lengths "
                                 "apply; calibration_{} shapes the calibration sequences)",
                                 k, k),
                     "it is set");
  }
  // The scheduler's name and its own keys (max_batch_tokens, chunked_prefill)
  // are checked against the schedulers when the experiment is expanded
  // (check_scheduler, core/scheduler/scheduler.cc).
  cfg::require_key(src, prefix, "slo", serving() || src.find("slo") == nullptr,
                   "no slo with the fixed batches of the default scheduler and arrival = "
                   "\"batch\" (no request is served)",
                   "it is set");
}

const std::vector<const char*>& WorkloadSpec::synthetic_only_keys() {
  static const std::vector<const char*> k = {"generator",
                                             "seed",
                                             "h_trace",
                                             "calibration_sequences",
                                             "calibration_prompt_len",
                                             "calibration_decode_len"};
  return k;
}

nlohmann::ordered_json WorkloadSpec::to_json() const {
  nlohmann::ordered_json j = schema().to_json(*this);
  if (kind == "trace") {
    for (const char* k : synthetic_only_keys()) j.erase(k);
  }
  // Unset: the run's own shape (results written before these keys existed keep their case ids).
  if (calibration_prompt_len < 0) j.erase("calibration_prompt_len");
  if (calibration_decode_len < 0) j.erase("calibration_decode_len");
  // Serving keys only where they apply (every case of the papers' fixed batches keeps its id).
  if (!serving()) {
    for (const char* k : {"arrival", "scheduler", "max_batch_tokens", "slo"}) j.erase(k);
  }
  if (!chunked_prefill) j.erase("chunked_prefill");
  if (arrival != "poisson" && arrival != "gamma") j.erase("rate");
  if (arrival != "gamma") j.erase("arrival_cv");
  if (arrivals.empty()) j.erase("arrivals");
  if (lengths == "fixed") j.erase("lengths");
  if (prompt_len_max < 0) j.erase("prompt_len_max");
  if (decode_len_max < 0) j.erase("decode_len_max");
  if (!trace_sha256.empty()) j["trace_sha256"] = trace_sha256;
  if (!calibration_trace_sha256.empty()) j["calibration_trace_sha256"] = calibration_trace_sha256;
  if (!arrivals_sha256.empty()) j["arrivals_sha256"] = arrivals_sha256;
  return j;
}

}  // namespace moebench
