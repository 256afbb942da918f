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
        .string("trace", &S::trace, "Trace file for kind = \"trace\" (relative to the experiment file).")
        .string("calibration_trace", &S::calibration_trace,
                "kind = \"trace\": a separate trace for components that calibrate (placement profiles, predictors).")
        .integer("seed", &S::seed, "Seed of the synthetic generator.", at_least(0))
        .integer("sequences", &S::sequences, "Sequences in the run.", between(1, 1 << 20))
        .integer("prompt_len", &S::prompt_len, "Prefill tokens per sequence.", between(0, 1 << 20), "tokens")
        .integer("decode_len", &S::decode_len, "Generated tokens per sequence.", between(0, 1 << 20), "tokens")
        .integer("batch_size", &S::batch_size, "Sequences processed together.", between(1, 4096), "sequences")
        .integer("h_trace", &S::h_trace, "Gate-input width of synthetic traces.", between(8, 16384), "elements")
        .integer("calibration_sequences", &S::calibration_sequences,
                 "Calibration sequences (disjoint seed) for predictors and profiles.", between(0, 1 << 16))
        .string("dataset", &S::dataset, "Label of the prompt set (informational).");
    return s;
  }();
  return s;
}

void WorkloadSpec::validate(const cfg::Value& src, const std::string& prefix) const {
  cfg::require_key(src, prefix, "trace", kind != "trace" || !trace.empty(),
                   "a trace file path when kind = \"trace\"", "no value");
  cfg::require_key(src, prefix, "decode_len", prompt_len + decode_len > 0,
                   "prompt_len + decode_len >= 1", "0 tokens in total");
  cfg::require_key(src, prefix, "batch_size", batch_size <= sequences,
                   fmt::format("at most sequences ({})", sequences), std::to_string(batch_size));
}

}  // namespace moebench
