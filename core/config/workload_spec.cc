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
        .string("dataset", &S::dataset, "Label of the prompt set (informational).");
    return s;
  }();
  return s;
}

void WorkloadSpec::validate(const cfg::Value& src, const std::string& prefix) const {
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
  return j;
}

}  // namespace moebench
