// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/calibrate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <future>

#include <fmt/format.h>

#include "core/util/error.h"

namespace moebench {

namespace {

// DALI Table 8 lists layers 1, 4, 8, 12, 16, 20, 23. We read the IDs as
// 1-based MoE layers and the cosine as between layer ID and the next one,
// i.e. adjacent-pair index ID - 1 in our 0-based statistics (the first
// transition is the one with the low similarity).
const std::vector<int64_t> kDaliPairs = {0, 3, 7, 11, 15, 19, 22};
const std::vector<int64_t> kDaliLaterPairs = {3, 7, 11, 15, 19, 22};

double mean_at(const std::vector<double>& v, const std::vector<int64_t>& idx) {
  double s = 0;
  int64_t n = 0;
  for (int64_t i : idx) {
    if (i < int64_t(v.size())) {
      s += v[i];
      ++n;
    }
  }
  return n ? s / double(n) : std::nan("");
}

double mean_range(const std::vector<double>& v, int64_t begin, int64_t end) {
  double s = 0;
  int64_t n = 0;
  for (int64_t i = std::max<int64_t>(0, begin); i < std::min<int64_t>(int64_t(v.size()), end);
       ++i) {
    s += v[i];
    ++n;
  }
  return n ? s / double(n) : std::nan("");
}

const std::vector<std::string> kFineGrained = {"deepseek-v2", "qwen2-moe", "qwen3-moe"};
const std::vector<std::string> kAll = {"mixtral", "deepseek-v2", "deepseek-v3", "qwen2-moe",
                                       "qwen3-moe"};
const std::vector<std::string> kCosineQwenLike = {"deepseek-v2", "deepseek-v3", "qwen2-moe",
                                                  "qwen3-moe"};
// DeepSeek-V2-Lite has its own raw cosine (ProMoE), which replaces the Qwen3 proxies of the
// mean raw cosine.
const std::vector<std::string> kRawCosineQwenProxy = {"deepseek-v3", "qwen2-moe", "qwen3-moe"};
// ProMoE's Qwen2 recall@8 also stands for the other top-8 families without a measurement of their
// own.
const std::vector<std::string> kRecall8 = {"qwen2-moe", "qwen3-moe", "deepseek-v3"};
// The Mixtral paper's Table 5 reports layers 0, 15 and 31 (0-based, of 32).
const std::vector<int64_t> kMixtralDeep = {15, 31};

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

const std::vector<std::string>& calibration_families() {
  return kAll;
}

std::string calibration_model(const std::string& family) {
  if (family == "mixtral") return "mixtral-8x7b";
  if (family == "deepseek-v2") return "deepseek-v2-lite";
  if (family == "deepseek-v3") return "deepseek-v3";
  if (family == "qwen2-moe") return "qwen2-57b-a14b";
  if (family == "qwen3-moe") return "qwen3-30b-a3b";
  throw Error(
      fmt::format("trace fit: expected a family ({}), found '{}'", join(kAll, ", "), family));
}

bool CalibrationTarget::pending_on(const std::string& family) const {
  return contains(pending, family);
}

int FamilyReport::fitted_targets() const {
  return int(std::count_if(targets.begin(), targets.end(),
                           [&](const TargetResult& t) { return !t.target->pending_on(family); }));
}

int FamilyReport::fitted_in_range() const {
  return int(std::count_if(targets.begin(), targets.end(), [&](const TargetResult& t) {
    return t.within && !t.target->pending_on(family);
  }));
}

namespace {

// The gate inputs' geometry: cosines between consecutive layers (DALI Table 8).
void geometry_targets(std::vector<CalibrationTarget>& v) {
  auto add = [&](CalibrationTarget x) { v.push_back(std::move(x)); };
  add({"cos_raw_layer1", "cos(gate input l, l+1), raw, DALI layer 1", "Qwen3-30B-A3B",
       "DALI Table 8", "0.44", 0.39, 0.49, "published value +- 0.05", kCosineQwenLike, "qwen3-moe",
       "geometry", [](const TraceStats& s) { return mean_at(s.cos_raw, {0}); }});
  add({"cos_residual_layer1", "the same after adding the layer's mean residual", "Qwen3-30B-A3B",
       "DALI Table 8", "0.77", 0.72, 0.82, "published value +- 0.05", kCosineQwenLike, "qwen3-moe",
       "geometry", [](const TraceStats& s) { return mean_at(s.cos_residual, {0}); }});
  add({"cos_raw_mean_qwen", "cos raw, mean over DALI layers 1-23", "Qwen3-30B-A3B", "DALI Table 8",
       "0.79", 0.76, 0.82, "published value +- 0.03", kRawCosineQwenProxy, "qwen3-moe", "geometry",
       [](const TraceStats& s) { return mean_at(s.cos_raw, kDaliPairs); }});
  add({"cos_raw_later_qwen", "cos raw, mean over DALI layers 4-23", "Qwen3-30B-A3B", "DALI Table 8",
       "0.83-0.89", 0.83, 0.89, "stated range", kRawCosineQwenProxy, "qwen3-moe", "geometry",
       [](const TraceStats& s) { return mean_at(s.cos_raw, kDaliLaterPairs); }});
  add({"cos_residual_mean_qwen", "cos residual-corrected, mean over DALI layers", "Qwen3-30B-A3B",
       "DALI Table 8", "0.93", 0.90, 0.96, "published value +- 0.03", kCosineQwenLike, "qwen3-moe",
       "geometry", [](const TraceStats& s) { return mean_at(s.cos_residual, kDaliPairs); }});
  add({"cos_raw_mean_mixtral",
       "cos raw, mean over DALI layers 1-23",
       "Mixtral-8x7B",
       "DALI Table 8",
       "0.79",
       0.76,
       0.82,
       "published value +- 0.03",
       {"mixtral"},
       "mixtral",
       "geometry",
       [](const TraceStats& s) { return mean_at(s.cos_raw, kDaliPairs); }});
  add({"cos_residual_mean_mixtral",
       "cos residual-corrected, mean over DALI layers",
       "Mixtral-8x7B",
       "DALI Table 8",
       "0.89",
       0.86,
       0.92,
       "published value +- 0.03",
       {"mixtral"},
       "mixtral",
       "geometry",
       [](const TraceStats& s) { return mean_at(s.cos_residual, kDaliPairs); }});
  add({"load_max_mixtral",
       "per-layer expert load max/mean (mean over layers)",
       "Mixtral-8x7B",
       "OLMoE project's Mixtral routing analysis",
       "about 1.08-1.12",
       1.08,
       1.12,
       "stated range",
       {"mixtral"},
       "mixtral",
       "routing",
       [](const TraceStats& s) { return s.mean(s.load_max_over_mean); }});
  add({"load_max_olmoe", "per-layer expert load max/mean (mean over layers)",
       "OLMoE-1B-7B (64 x top-8)", "OLMoE routing analysis", "2.5-3.0", 2.5, 3.0, "stated range",
       kFineGrained, "", "routing",
       [](const TraceStats& s) { return s.mean(s.load_max_over_mean); }});
  add({"load_min_olmoe", "per-layer expert load min/mean (mean over layers)",
       "OLMoE-1B-7B (64 x top-8)", "OLMoE routing analysis", "0.19-0.30", 0.19, 0.30,
       "stated range", kFineGrained, "", "routing",
       [](const TraceStats& s) { return s.mean(s.load_min_over_mean); }});
  add({"overlap", "top-k overlap of consecutive tokens, fraction of k", "OLMoE-1B-7B",
       "public replay of an OLMoE trace", "about 0.42", 0.39, 0.45, "published value +- 0.03",
       kCosineQwenLike, "", "routing", [](const TraceStats& s) { return s.mean(s.overlap_frac); }});
  add({"skew_shallow_v3",
       "load max/mean, layers < 10 (\"nearly uniform\")",
       "DeepSeek-V3",
       "SMoE section III-B, Fig. 5",
       "nearly uniform",
       1.0,
       1.5,
       "our reading: max/mean <= 1.5",
       {"deepseek-v3"},
       "deepseek-v3",
       "routing",
       [](const TraceStats& s) { return mean_range(s.load_max_over_mean, 0, 10); }});
  add({"skew_deep_v3",
       "load max/mean, layers >= 10 (\"clearly skewed\")",
       "DeepSeek-V3",
       "SMoE section III-B, Fig. 5",
       "clearly skewed",
       2.0,
       3.0,
       "our reading: max/mean >= 2.0, capped at the OLMoE maximum 3.0",
       {"deepseek-v3"},
       "deepseek-v3",
       "routing",
       [](const TraceStats& s) { return mean_range(s.load_max_over_mean, 10, 1 << 20); }});
}

// Cross-layer predictability: gate reuse (layer l+d's router on layer l's gate input).
void gate_reuse_targets(std::vector<CalibrationTarget>& v) {
  auto add = [&](CalibrationTarget x) { v.push_back(std::move(x)); };
  // Cross-layer predictability: gate reuse (layer l+d's router on layer l's gate input).
  add({"gate_reuse_top1_d1_mixtral",
       "gate reuse, one layer ahead: P(predicted first choice == actual), mean over layers",
       "Mixtral-8x7B",
       "HOBBIT (arXiv 2411.01433) Sec. 3.3, Fig. 7(b)",
       "about 0.96",
       0.94,
       0.98,
       "published value +- 0.02; our reading of 'top-1 accuracy': the first choices agree",
       {"mixtral"},
       "mixtral",
       "geometry",
       [](const TraceStats& s) { return s.gate_reuse_top1_mean(1); }});
  add({"gate_reuse_top1_d23_mixtral",
       "the same two and three layers ahead (mean of both distances)",
       "Mixtral-8x7B",
       "HOBBIT Sec. 3.3, Fig. 7(b)",
       "about 0.90",
       0.87,
       0.93,
       "published value +- 0.03",
       {"mixtral"},
       "mixtral",
       "geometry",
       [](const TraceStats& s) {
         return 0.5 * (s.gate_reuse_top1_mean(2) + s.gate_reuse_top1_mean(3));
       }});
  add({"gate_reuse_recall_d1_mixtral",
       "gate reuse, one layer ahead: recall of the top-2, mean over layers",
       "Mixtral-8x7B",
       "OD-MoE (arXiv 2512.03927) Table 1",
       "0.84-0.91",
       0.84,
       0.91,
       "stated range (three systems' measurements)",
       {"mixtral"},
       "mixtral",
       "geometry",
       [](const TraceStats& s) { return s.gate_reuse_recall_mean(1); }});
  add({"gate_reuse_recall8_qwen2",
       "gate reuse, one layer ahead: recall of the top-8, mean over layers",
       "Qwen2-57B-A14B",
       "ProMoE (arXiv 2410.22134) Sec. 4.2, Fig. 8(b)",
       "0.669",
       0.639,
       0.699,
       "published value +- 0.03",
       kRecall8,
       "qwen2-moe",
       "geometry",
       [](const TraceStats& s) { return s.gate_reuse_recall_mean(1); },
       // Fitted on Qwen3 and DeepSeek-V3 since the invisible half turns
       // at its own rate (theta_hidden; docs/WORKLOADS.md).
       {}});
  add({"cos_raw_mean_dsv2",
       "cos(gate input l, l+1), raw, mean over adjacent MoE layers",
       "DeepSeek-V2-Lite",
       "ProMoE Sec. 4.2",
       "0.917",
       0.887,
       0.947,
       "published value +- 0.03",
       {"deepseek-v2"},
       "deepseek-v2",
       "geometry",
       [](const TraceStats& s) { return s.mean(s.cos_raw); }});
  add({"gate_reuse_dsv2",
       "gate reuse in decode, one layer ahead (read as recall of the top-6)",
       "DeepSeek-V2-Lite",
       "Fate, quoted by arXiv 2511.10676 (secondary; metric not restated)",
       "about 0.79",
       0.69,
       0.89,
       "published value +- 0.10 (secondary source)",
       {"deepseek-v2"},
       "",
       "geometry",
       [](const TraceStats& s) { return s.gate_reuse_recall_mean(1); }});
}

// Temporal: the Mixtral paper's Table 5 (min-max over its eight Pile domains).
void temporal_targets(std::vector<CalibrationTarget>& v) {
  auto add = [&](CalibrationTarget x) { v.push_back(std::move(x)); };
  // Temporal: the Mixtral paper's Table 5 (min-max over its eight Pile domains).
  add({"repeat_first_layer0_mixtral",
       "consecutive tokens, same first choice, layer 0",
       "Mixtral-8x7B",
       "Mixtral paper (arXiv 2401.04088) Sec. 5, Table 5",
       "13.6-14.9% (random 12.5%)",
       0.136,
       0.149,
       "stated range over 8 domains",
       {"mixtral"},
       "mixtral",
       "routing",
       [](const TraceStats& s) { return mean_at(s.repeat_first, {0}); }});
  add({"repeat_any_layer0_mixtral",
       "consecutive tokens share at least one of the 2 experts, layer 0",
       "Mixtral-8x7B",
       "Mixtral paper Sec. 5, Table 5",
       "44.9-49.9% (random 46%)",
       0.449,
       0.499,
       "stated range over 8 domains",
       {"mixtral"},
       "mixtral",
       "routing",
       [](const TraceStats& s) { return mean_at(s.repeat_any, {0}); }});
  add({"repeat_first_deep_mixtral",
       "same first choice, mean of layers 15 and 31",
       "Mixtral-8x7B",
       "Mixtral paper Sec. 5, Table 5",
       "23.3-26.2% (per-domain means of layers 15 and 31)",
       0.233,
       0.262,
       "stated range over 8 domains of the two layers' mean",
       {"mixtral"},
       "mixtral",
       "routing",
       [](const TraceStats& s) { return mean_at(s.repeat_first, kMixtralDeep); }});
  add({"repeat_any_deep_mixtral",
       "share at least one expert, mean of layers 15 and 31",
       "Mixtral-8x7B",
       "Mixtral paper Sec. 5, Table 5",
       "55.8-59.1% (per-domain means of layers 15 and 31)",
       0.558,
       0.591,
       "stated range over 8 domains of the two layers' mean",
       {"mixtral"},
       "mixtral",
       "routing",
       [](const TraceStats& s) { return mean_at(s.repeat_any, kMixtralDeep); }});
}

// The router's hesitation: the combine weights' shares.
void weight_targets(std::vector<CalibrationTarget>& v) {
  auto add = [&](CalibrationTarget x) { v.push_back(std::move(x)); };
  // The router's hesitation: a real router's second
  // choice often carries a good part of the weight. Measured on a public
  // vLLM routing log of Mixtral-8x7B (FP8, greedy, GSM8K and HumanEval
  // prompts, about 670 decode tokens; ../shared/design/WORKLOADS.md): the
  // second expert's share of the renormalised top-2 weights has a median of
  // about 0.30 and is below 0.01 in under 1% of rows. No such figure is
  // published for the other families. Phase "scale": the weights depend on
  // the logits' overall scale, the choice of experts does not, so these are
  // fitted last, by the logit scale alone (fit_family), and the selection
  // targets are untouched.
  add({"weight_share_2nd_median_mixtral",
       "second expert's share of the top-2 combine weights, median over tokens and layers",
       "Mixtral-8x7B",
       "a public vLLM routing log of Mixtral-8x7B (design WORKLOADS.md)",
       "about 0.30",
       0.25,
       0.35,
       "published value +- 0.05",
       {"mixtral"},
       "mixtral",
       "scale",
       [](const TraceStats& s) {
         return s.topk_weight_median.size() > 1 ? s.topk_weight_median[1] : std::nan("");
       }});
  add({"weight_share_2nd_below001_mixtral",
       "rows whose second expert's share of the top-2 weights is below 0.01",
       "Mixtral-8x7B",
       "the same log",
       "under 1%",
       0.0,
       0.01,
       "stated bound",
       {"mixtral"},
       "mixtral",
       "scale",
       [](const TraceStats& s) {
         return s.topk_weight_below_001.size() > 1 ? s.topk_weight_below_001[1] : std::nan("");
       }});
}

}  // namespace

const std::vector<CalibrationTarget>& calibration_targets() {
  static const std::vector<CalibrationTarget> t = [] {
    std::vector<CalibrationTarget> v;
    geometry_targets(v);
    gate_reuse_targets(v);
    temporal_targets(v);
    weight_targets(v);
    return v;
  }();
  return t;
}

const std::vector<CalibrationCheck>& calibration_checks() {
  static const std::vector<CalibrationCheck> c = [] {
    std::vector<CalibrationCheck> v;
    v.push_back(
        {"reuse_by_rank", "reuse probability by score rank", "HybriMoE Fig. 3(b)",
         "rises with router score; flat below the top ~2k ranks", "routing",
         [](const TraceStats& s) -> std::pair<bool, std::string> {
           const int64_t k = s.top_k;
           const auto& r = s.reuse_by_rank;
           if (int64_t(r.size()) < 4 * k) return {false, "no router probabilities"};
           auto avg = [&](int64_t a, int64_t b) {
             double x = 0;
             for (int64_t i = a; i < b; ++i) x += r[i];
             return x / double(b - a);
           };
           const double top = avg(0, k), mid = avg(k, 2 * k), tail = avg(2 * k, 4 * k);
           double lo = 1, hi = 0;
           for (int64_t i = 2 * k; i < 4 * k; ++i) {
             lo = std::min(lo, r[i]);
             hi = std::max(hi, r[i]);
           }
           const bool ok = top > mid && mid > tail && (hi - lo) < 0.5 * (top - tail);
           return {ok,
                   fmt::format(
                       "ranks 0..k-1: {:.3f}, k..2k-1: {:.3f}, 2k..4k-1: {:.3f} (spread {:.3f})",
                       top, mid, tail, hi - lo)};
         }});
    v.push_back({"gate_reuse_shape", "gate reuse by distance and depth",
                 "HOBBIT Fig. 7(b), ProMoE Fig. 8(b)",
                 "falls with distance; lowest at the first layer", "geometry",
                 [](const TraceStats& s) -> std::pair<bool, std::string> {
                   if (s.gate_reuse_recall.empty()) return {false, "no gate inputs"};
                   const double d1 = s.gate_reuse_recall_mean(1), d2 = s.gate_reuse_recall_mean(2),
                                d3 = s.gate_reuse_recall_mean(3);
                   const double first =
                       s.gate_reuse_recall[0].empty() ? std::nan("") : s.gate_reuse_recall[0][0];
                   const bool falls = std::isnan(d2) || (d1 >= d2 && (std::isnan(d3) || d2 >= d3));
                   const bool ok = falls && first < d1;
                   return {ok,
                           fmt::format("recall d=1/2/3: {:.3f}/{:.3f}/{:.3f}; layer 0 -> 1: {:.3f}",
                                       d1, d2, d3, first)};
                 },
                 false});
    // DALI Fig. 8 was a fitted target ("the diagonal is the row's largest
    // cell in >= 90% of rows", our reading of a heatmap). It conflicts with
    // the Mixtral paper's Table 5, a direct measurement of the same model's
    // consecutive-token repetition: the preset fitted to Table 5 gives 0.40
    // of rows (0.30-0.69 at points near Table 5 in docs/WORKLOADS.md); only
    // the earlier preset's too-high repetition (first choice 0.43 against
    // 0.23-0.26) met it. The measurement wins; the heatmap is reported under
    // both readings.
    // The per-sequence overlap of the same vLLM log as the weight targets
    // (GSM8K and HumanEval prompts): reported, not fitted. It conflicts with
    // Table 5's repetition (eight Pile domains), which the preset meets at a
    // mean overlap of 0.317: a fit that took it as a target (warm-started,
    // 977 evaluations, docs/measurements/mixtral-weight-refit) reached 0.347
    // only by leaving five others, Table 5's deep layers and gate reuse among
    // them, out of range.
    v.push_back(
        {"overlap_by_sequence",
         "top-2 overlap of consecutive tokens, fraction of k, mean over sequences",
         "a public vLLM routing log of Mixtral-8x7B (GSM8K, HumanEval; four sequences)",
         "0.34-0.41 per sequence",
         "routing",
         [](const TraceStats& s) -> std::pair<bool, std::string> {
           double sum = 0;
           int64_t n = 0;
           for (double x : s.overlap_by_sequence) {
             if (x == x) {
               sum += x;
               ++n;
             }
           }
           const double m = n ? sum / double(n) : std::nan("");
           return {m >= 0.34 && m <= 0.41, fmt::format("mean {:.3f} over {} sequences", m, n)};
         },
         false,
         {"mixtral"}});
    v.push_back({"high_workload_diagonal",
                 "DALI Fig. 8 heatmap (top-3 by workload at t -> t+1, batch 8)",
                 "DALI Fig. 8",
                 "strong diagonal: the diagonal is the row's largest cell in >= 90% of rows",
                 "routing",
                 [](const TraceStats& s) -> std::pair<bool, std::string> {
                   return {s.high_workload_diagonal_rows >= 0.9,
                           fmt::format("diagonal the row's largest cell in {:.3f} of rows; above "
                                       "the row's mean in {:.3f}",
                                       s.high_workload_diagonal_rows,
                                       s.high_workload_diagonal_above_mean)};
                 },
                 false,
                 {"mixtral"}});
    return v;
  }();
  return c;
}

namespace {

struct Knob {
  const char* name;
  double GeneratorParams::*ptr;
  double lo, hi;
  bool log_space;
};

std::vector<Knob> geometry_knobs() {
  return {{"mean_hidden", &GeneratorParams::mean_hidden, 0.05, 20, true},
          {"drift", &GeneratorParams::drift, 0.0, 5, true},
          {"drift_first", &GeneratorParams::drift_first, 0.0, 10, true},
          {"theta", &GeneratorParams::theta, 0.0, 1.5, false},
          {"theta_first", &GeneratorParams::theta_first, 0.0, 1.5, false},
          {"theta_hidden", &GeneratorParams::theta_hidden, 0.0, 1.5, false},
          {"noise", &GeneratorParams::noise, 0.02, 5, true},
          {"depth_corr", &GeneratorParams::depth_corr, 0.0, 0.99, false},
          {"depth_corr_first", &GeneratorParams::depth_corr_first, 0.0, 0.99, false},
          {"depth_corr_hidden", &GeneratorParams::depth_corr_hidden, 0.0, 0.99, false},
          {"context_first", &GeneratorParams::context_first, 0.0, 1.0, false},
          {"focus", &GeneratorParams::focus, 0.0, 10, true}};
}

std::vector<Knob> routing_knobs(const std::string& family) {
  std::vector<Knob> k = {{"gate_scale", &GeneratorParams::gate_scale, 0.1, 20, true},
                         {"rho", &GeneratorParams::rho, 0.0, 0.995, false},
                         {"skew", &GeneratorParams::skew, 0.0, 6, true},
                         {"mean_visible", &GeneratorParams::mean_visible, 0.0, 5, true},
                         {"topic", &GeneratorParams::topic, 0.0, 5, true}};
  if (family == "deepseek-v3")
    k.push_back({"skew_shallow", &GeneratorParams::skew_shallow, 0.0, 6, true});
  return k;
}

bool applies(const CalibrationTarget& t, const std::string& family) {
  return contains(t.families, family);
}

TraceStats simulate(const std::string& family, const GeneratorParams& p, const ConfigPaths& paths,
                    int64_t sequences, int64_t tokens, int64_t seed, bool gate_inputs, bool probs,
                    const StatsOptions& so) {
  const ModelSpec m = load_model(calibration_model(family), paths);
  SyntheticLayout lay;
  lay.sequences.assign(sequences, SequenceInfo{0, tokens});
  lay.seed = seed;
  lay.h_trace = 256;
  SyntheticSource src(m, p, lay);
  // Drop what this evaluation does not need: stats use whatever the source offers.
  class View : public TraceSource {
   public:
    View(const TraceSource& s, bool g, bool pr) : s_(s), info_(s.info()) {
      if (!g) info_.h_trace = 0;
      if (!pr) info_.probs = ProbsStorage::kNone;
    }
    const TraceInfo& info() const override { return info_; }
    std::unique_ptr<SequenceReader> open(int64_t seq, unsigned f) const override {
      unsigned ff = f;
      if (info_.h_trace == 0) ff &= ~unsigned(kGateInput);
      if (info_.probs == ProbsStorage::kNone) ff &= ~unsigned(kProbs);
      return s_.open(seq, ff);
    }
    const GateWeights* gate_weights() const override { return s_.gate_weights(); }

   private:
    const TraceSource& s_;
    TraceInfo info_;
  } view(src, gate_inputs, probs);
  return compute_stats(view, so);
}

double phase_loss(const std::string& family, const std::string& phase, const TraceStats& st,
                  const FitOptions& opt) {
  double loss = 0;
  for (const auto& t : calibration_targets()) {
    if (t.phase != phase || !applies(t, family) || t.pending_on(family)) continue;
    const double v = t.measure(st);
    if (std::isnan(v)) continue;
    const double center = 0.5 * (t.lo + t.hi), half = 0.5 * (t.hi - t.lo);
    const double z = (v - center) / half;
    const double out = std::max(0.0, std::abs(z) - opt.range_margin);
    loss += (t.direct_family == family ? 1.0 : opt.proxy_weight) *
            (z * z + opt.range_weight * out * out);
  }
  return loss;
}

}  // namespace

FamilyReport evaluate_family(const std::string& family, const GeneratorParams& params,
                             const ConfigPaths& paths, const FitOptions& opt) {
  FamilyReport r;
  r.family = family;
  r.model = calibration_model(family);
  r.params = params;
  // Gate reuse at distances 1-3 on every second token of the gate-input workload.
  StatsOptions so;
  so.gate_reuse_tokens = opt.geometry_sequences * opt.geometry_tokens * 2;
  const TraceStats geo = simulate(family, params, paths, opt.geometry_sequences * 2,
                                  opt.geometry_tokens * 2, opt.seed + 1, true, false, so);
  StatsOptions no_reuse;
  no_reuse.gate_reuse_distance = 0;
  const TraceStats rt = simulate(family, params, paths, opt.routing_sequences * 2,
                                 opt.routing_tokens, opt.seed + 1, false, true, no_reuse);
  for (const auto& t : calibration_targets()) {
    if (!applies(t, family)) continue;
    TargetResult tr;
    tr.target = &t;
    tr.achieved = t.measure(t.phase == "geometry" ? geo : rt);
    tr.within = tr.achieved >= t.lo && tr.achieved <= t.hi;
    r.targets.push_back(tr);
  }
  for (const auto& c : calibration_checks()) {
    if (!c.families.empty() && !contains(c.families, family)) continue;
    const auto [ok, ev] = c.evaluate(c.phase == "geometry" ? geo : rt);
    r.checks.push_back({&c, ok, ev});
  }
  r.loss = phase_loss(family, "geometry", geo, opt) + phase_loss(family, "routing", rt, opt) +
           phase_loss(family, "scale", rt, opt);
  return r;
}

namespace {

// Sequences of the fit's routing workload. Mixtral's layer-0 repetition
// target (Mixtral paper Table 5) is 0.013 wide, where 256 sequences x 63
// token pairs have a sampling s.d. of about 0.003 (binomial estimate), and
// the fits on that workload ended 0.003-0.005 below the range on the
// evaluation seed. Four times the sequences halve that noise; Mixtral's 8
// experts keep it cheap.
int64_t fit_routing_sequences(const std::string& family, const FitOptions& opt) {
  return family == "mixtral" ? opt.routing_sequences * 4 : opt.routing_sequences;
}

// Where a family's fit starts: `start` with the family's structure and, on a
// cold start, the hand-set knobs it needs.
GeneratorParams fit_start(const std::string& family, const GeneratorParams& start,
                          const FitOptions& opt) {
  GeneratorParams x = start;
  x.family = family;
  if (family == "deepseek-v3") {
    x.skew_onset = 10.0 / 57.0;  // SMoE: layers before ~10 of 58 are nearly uniform
    if (x.skew_shallow < 0) x.skew_shallow = 0.1;
  }
  // The cross-layer structure (docs/WORKLOADS.md, "Cross-layer and temporal structure"):
  // shared gate directions, a token state that persists over depth in the
  // gate-visible half and not in the invisible one, and a focus.
  // DeepSeek-V3 keeps independent gates per layer and no focus: with them
  // two fits missed its own shallow-layer skew (SMoE, 1.655 and 1.625
  // against at most 1.5); its recall comes from the context persisting in
  // the visible half (theta, with theta_hidden turning the rest).
  const bool cross_layer = family != "deepseek-v3";
  if (cross_layer && !opt.warm_start && !opt.scale_only) {
    x.shared_gates = true;
    x.depth_corr = 0.8;
    x.depth_corr_first = 0.5;
    x.depth_corr_hidden = 0.0;
    x.context_first = 0.5;
    x.focus = 1.0;
    x.focus_repeat = 0.2;
  }
  if (family == "mixtral" && !opt.warm_start && !opt.scale_only) {
    // Mixtral starts from the hand-set point of docs/WORKLOADS.md that meets
    // Table 5's first-choice and any-overlap repetition together. In the
    // first fit attempt, from the generic start, the fit ended where the
    // token's own state, which Table 5's repetition needs, was nearly gone
    // (noise 0.07), and no Table 5 target was met.
    x.rho = 0.5;
    x.topic = 0.07;
    x.mean_hidden = 0.05;
    x.mean_visible = 0.013;
    x.drift = 0.5;
    x.drift_first = 1.5;
    x.theta = 0.0;
    x.theta_first = 1.2;
    x.noise = 1.0;
    x.depth_corr_first = 0.8;
    x.context_first = 0.1;
    x.focus = 5.0;
    x.focus_repeat = 0.14;
    x.gate_scale = 3.0;
    x.skew = 0.016;
  }
  // The invisible half starts turning at the visible half's rate.
  if (x.theta_hidden < 0) x.theta_hidden = x.theta;
  return x;
}

// One family's fit in progress: the point it has reached and the
// evaluations it has spent (each one a workload simulated and a phase's
// targets scored on it).
class FamilyFit {
 public:
  FamilyFit(const std::string& family, const ConfigPaths& paths, const FitOptions& opt,
            GeneratorParams start)
      : family_(family),
        paths_(paths),
        opt_(opt),
        x_(std::move(start)),
        reuse_distance_(family == "mixtral" ? 3 : 1) {}

  // A phase: coordinate descent on `knobs` over the phase's targets
  // ("geometry": the gate-input targets, "routing": the routing targets,
  // "joint": both), then a simplex refinement of the point it reached.
  void phase(const std::string& phase, const std::vector<Knob>& knobs) {
    refine(phase, knobs, descend(phase, knobs));
  }
  // The router's weights ("scale" targets) by the logit scale alone.
  void logit_scale();

  const GeneratorParams& point() const { return x_; }
  int64_t evals() const { return evals_; }

 private:
  double loss(const std::string& phase, const GeneratorParams& p);
  double descend(const std::string& phase, const std::vector<Knob>& knobs);
  void refine(const std::string& phase, const std::vector<Knob>& knobs, double best);
  GeneratorParams scaled(double c) const;
  double scale_loss(double log_c);

  const std::string family_;
  const ConfigPaths& paths_;
  const FitOptions& opt_;
  GeneratorParams x_;
  int64_t evals_ = 0;
  const int64_t
      reuse_distance_;  // the largest gate-reuse distance a fitted target of the family reads
};

double FamilyFit::loss(const std::string& phase, const GeneratorParams& p) {
  ++evals_;
  auto geometry = [&] {
    StatsOptions so;
    so.gate_reuse_distance = reuse_distance_;
    so.gate_reuse_tokens = opt_.gate_reuse_tokens;
    so.coactivation = false;
    return phase_loss(family_, "geometry",
                      simulate(family_, p, paths_, opt_.geometry_sequences, opt_.geometry_tokens,
                               opt_.seed, true, false, so),
                      opt_);
  };
  auto routing = [&] {
    StatsOptions so;
    so.gate_reuse_distance = 0;
    so.coactivation = false;
    return phase_loss(family_, "routing",
                      simulate(family_, p, paths_, fit_routing_sequences(family_, opt_),
                               opt_.routing_tokens, opt_.seed, false, false, so),
                      opt_);
  };
  if (phase == "geometry") return geometry();
  if (phase == "routing") return routing();
  // The joint phase needs both workloads; they are independent, so they
  // run side by side (the sum is the same in either order of completion).
  auto g = std::async(std::launch::async, geometry);
  const double r = routing();
  return g.get() + r;
}

// Coordinate descent: each knob a step either way, kept going while it
// helps (a cheap line search); the step halves when no knob improves.
// Returns the loss at the point reached.
double FamilyFit::descend(const std::string& phase, const std::vector<Knob>& knobs) {
  const int64_t budget = evals_ + max_evals_for(family_, opt_);
  double best = loss(phase, x_);
  double step = 0.5;
  auto moved = [&](const Knob& k, const GeneratorParams& from, int dir) {
    GeneratorParams y = from;
    double& v = y.*(k.ptr);
    if (k.log_space) {
      const double base = std::max(v, 0.02);
      v = dir > 0 ? base * (1.0 + step) : base / (1.0 + step);
    } else {
      v = v + dir * step * 0.5 * (k.hi - k.lo) * 0.25;
    }
    v = std::clamp(v, k.lo, k.hi);
    return y;
  };
  while (evals_ < budget && step > 0.01 && best > 1e-4) {
    bool improved = false;
    for (const auto& k : knobs) {
      for (int dir : {+1, -1}) {
        GeneratorParams y = moved(k, x_, dir);
        if (y.*(k.ptr) == x_.*(k.ptr)) continue;
        double l = loss(phase, y);
        if (!(l < best)) continue;
        while (evals_ < budget) {
          GeneratorParams z = moved(k, y, dir);
          if (z.*(k.ptr) == y.*(k.ptr)) break;
          const double lz = loss(phase, z);
          if (!(lz < l)) break;
          y = z;
          l = lz;
        }
        best = l;
        x_ = y;
        improved = true;
        if (opt_.verbose)
          fmt::print(stderr, "  [{}] {} = {:.4f}  loss {:.4f}\n", phase, k.name, x_.*(k.ptr), best);
        break;
      }
    }
    if (!improved) step *= 0.5;
  }
  return best;
}

// Coordinate descent stalls in narrow valleys where two or three knobs
// must move together (raising the residual-corrected cosine while
// holding the raw one needs more drift and less rotation at once), so a
// Nelder-Mead simplex refines the point in the same knob coordinates
// (log for log-space knobs, scaled by each knob's range). `best`: the
// loss at the point now.
void FamilyFit::refine(const std::string& phase, const std::vector<Knob>& knobs, double best) {
  const int64_t nm_budget = evals_ + refine_evals_for(family_, opt_);
  const size_t n = knobs.size();
  auto to_u = [&](const GeneratorParams& p) {
    std::vector<double> u(n);
    for (size_t i = 0; i < n; ++i) {
      const double v = p.*(knobs[i].ptr);
      u[i] = knobs[i].log_space ? std::log(std::max(v, 1e-3)) : v / (knobs[i].hi - knobs[i].lo);
    }
    return u;
  };
  auto from_u = [&](const std::vector<double>& u) {
    GeneratorParams p = x_;
    for (size_t i = 0; i < n; ++i) {
      double v = knobs[i].log_space ? std::exp(u[i]) : u[i] * (knobs[i].hi - knobs[i].lo);
      p.*(knobs[i].ptr) = std::clamp(v, knobs[i].lo, knobs[i].hi);
    }
    return p;
  };
  std::vector<std::vector<double>> simplex{to_u(x_)};
  std::vector<double> f{best};
  for (size_t i = 0; i < n && evals_ < nm_budget; ++i) {
    auto u = simplex[0];
    u[i] += knobs[i].log_space ? 0.2 : 0.05;
    simplex.push_back(u);
    f.push_back(loss(phase, from_u(u)));
  }
  while (simplex.size() == n + 1 && evals_ + 2 < nm_budget && f[0] > 1e-4) {
    std::vector<size_t> ord(n + 1);
    for (size_t i = 0; i <= n; ++i) ord[i] = i;
    std::stable_sort(ord.begin(), ord.end(), [&](size_t a, size_t b) { return f[a] < f[b]; });
    std::vector<std::vector<double>> s2;
    std::vector<double> f2;
    for (size_t i : ord) {
      s2.push_back(simplex[i]);
      f2.push_back(f[i]);
    }
    simplex.swap(s2);
    f.swap(f2);
    double size = 0;
    for (size_t i = 1; i <= n; ++i) {
      for (size_t j = 0; j < n; ++j) size = std::max(size, std::abs(simplex[i][j] - simplex[0][j]));
    }
    if (size < 1e-3) break;
    std::vector<double> c(n, 0.0);
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) c[j] += simplex[i][j] / double(n);
    }
    auto along = [&](double t) {
      std::vector<double> u(n);
      for (size_t j = 0; j < n; ++j) u[j] = c[j] + t * (simplex[n][j] - c[j]);
      return u;
    };
    const auto ur = along(-1.0);
    const double fr = loss(phase, from_u(ur));
    if (fr < f[0]) {
      const auto ue = along(-2.0);
      const double fe = loss(phase, from_u(ue));
      simplex[n] = fe < fr ? ue : ur;
      f[n] = fe < fr ? fe : fr;
    } else if (fr < f[n - 1]) {
      simplex[n] = ur;
      f[n] = fr;
    } else {
      const auto uc = fr < f[n] ? along(-0.5) : along(0.5);
      const double fc = loss(phase, from_u(uc));
      if (fc < std::min(fr, f[n])) {
        simplex[n] = uc;
        f[n] = fc;
      } else {
        for (size_t i = 1; i <= n && evals_ < nm_budget; ++i) {
          for (size_t j = 0; j < n; ++j)
            simplex[i][j] = simplex[0][j] + 0.5 * (simplex[i][j] - simplex[0][j]);
          f[i] = loss(phase, from_u(simplex[i]));
        }
      }
    }
  }
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] < best) {
      best = f[i];
      x_ = from_u(simplex[i]);
    }
  }
  if (opt_.verbose)
    fmt::print(stderr, "  [{}] after simplex refinement: loss {:.4f}\n", phase, best);
}

GeneratorParams FamilyFit::scaled(double c) const {
  GeneratorParams y = x_;
  y.gate_scale *= c;
  y.skew *= c;
  if (y.skew_shallow >= 0) y.skew_shallow *= c;
  return y;
}

double FamilyFit::scale_loss(double log_c) {
  ++evals_;
  StatsOptions so;
  so.gate_reuse_distance = 0;
  so.coactivation = false;
  return phase_loss(
      family_, "scale",
      simulate(family_, scaled(std::exp(log_c)), paths_, fit_routing_sequences(family_, opt_),
               opt_.routing_tokens, opt_.seed, false, false, so),
      opt_);
}

// Every logit is gate_scale x (the gate input's projection) + the
// popularity bias (std skew, skew_shallow), so multiplying gate_scale, skew
// and skew_shallow by one factor c scales every logit by c: the experts
// chosen stay the same (every other target is untouched) and only the
// weights and probabilities move. A 1-D search over log c: a grid of
// quarter octaves from 1/1024 to 16, then golden-section refinement around
// the best.
void FamilyFit::logit_scale() {
  const double step = std::log(2.0) / 4;
  double best_lc = 0, best = scale_loss(0.0);
  for (int i = -40; i <= 16; ++i) {
    if (i == 0) continue;
    const double l = scale_loss(i * step);
    if (l < best) {
      best = l;
      best_lc = i * step;
    }
  }
  double a = best_lc - step, b = best_lc + step;
  const double g = (std::sqrt(5.0) - 1) / 2;
  double c1 = b - g * (b - a), c2 = a + g * (b - a);
  double f1 = scale_loss(c1), f2 = scale_loss(c2);
  for (int it = 0; it < 20; ++it) {
    if (f1 < f2) {
      b = c2;
      c2 = c1;
      f2 = f1;
      c1 = b - g * (b - a);
      f1 = scale_loss(c1);
    } else {
      a = c1;
      c1 = c2;
      f1 = f2;
      c2 = a + g * (b - a);
      f2 = scale_loss(c2);
    }
  }
  if (std::min(f1, f2) < best) best_lc = f1 < f2 ? c1 : c2;
  x_ = scaled(std::exp(best_lc));
  if (opt_.verbose)
    fmt::print(stderr, "  [scale] logit scale x{:.4f}: gate_scale {:.4f}, skew {:.5f}\n",
               std::exp(best_lc), x_.gate_scale, x_.skew);
}

}  // namespace

// The phases: the gate-input targets with the geometry knobs, the routing
// targets with the routing knobs, then every target with every knob (the
// focus and the token state move both kinds); last the logit scale.
FamilyReport fit_family(const std::string& family, const GeneratorParams& start,
                        const ConfigPaths& paths, const FitOptions& opt) {
  FamilyFit fit(family, paths, opt, fit_start(family, start, opt));
  std::vector<Knob> geometry = geometry_knobs();
  if (!fit.point().shared_gates) {  // a focus needs shared gates
    std::erase_if(geometry, [](const Knob& k) { return std::string(k.name) == "focus"; });
  }
  if (!opt.scale_only) {
    if (!opt.warm_start) {  // a warm start is already near both kinds of target
      fit.phase("geometry", geometry);
      fit.phase("routing", routing_knobs(family));
    }
    std::vector<Knob> all = geometry;
    for (const auto& k : routing_knobs(family)) all.push_back(k);
    fit.phase("joint", all);
  }
  bool has_scale = false;
  for (const auto& t : calibration_targets())
    has_scale = has_scale || (t.phase == "scale" && applies(t, family) && !t.pending_on(family));
  if (has_scale) fit.logit_scale();
  FamilyReport r = evaluate_family(family, fit.point(), paths, opt);
  r.evals = fit.evals();
  return r;
}

int64_t refine_evals_for(const std::string& family, const FitOptions& opt) {
  if (opt.refine_evals >= 0) return opt.refine_evals;
  if (family == "deepseek-v3") return 300;  // each evaluation ~1 s: 58 layers x 256 experts
  return family == "mixtral" ? 600 : 200;
}

int64_t max_evals_for(const std::string& family, const FitOptions& opt) {
  if (opt.max_evals >= 0) return opt.max_evals;
  if (family == "deepseek-v3") return 200;
  return family == "mixtral" ? 600 : 300;
}

std::string fit_options_flags(const FitOptions& opt) {
  const FitOptions d;
  std::string f;
  if (opt.max_evals != d.max_evals) f += fmt::format(" --max-evals {}", opt.max_evals);
  if (opt.refine_evals != d.refine_evals) f += fmt::format(" --refine-evals {}", opt.refine_evals);
  if (opt.proxy_weight != d.proxy_weight) f += fmt::format(" --proxy-weight {}", opt.proxy_weight);
  if (opt.range_weight != d.range_weight) f += fmt::format(" --range-weight {}", opt.range_weight);
  if (opt.range_margin != d.range_margin) f += fmt::format(" --range-margin {}", opt.range_margin);
  if (opt.warm_start) f += " --warm-start";
  if (opt.scale_only) f += " --scale-only";
  return f;
}

std::string preset_toml(const GeneratorParams& p, const FamilyReport& r, const FitOptions& opt) {
  std::string s = fmt::format(
      "# Synthetic-workload preset for the {} family, fitted on {}.\n"
      "# Reproduce: build/bin/moebench trace fit --family {}{} --write"
      "   (seed {}, {} evaluations)\n"
      "# Targets in range: {} of {}; see docs/calibration.md for every target and its source.\n",
      r.family, r.model, r.family, fit_options_flags(opt), opt.seed, r.evals, r.fitted_in_range(),
      r.fitted_targets());
  if (opt.warm_start || opt.scale_only)
    s += fmt::format(
        "# {} from the preset this file held before, itself: {}\n",
        opt.scale_only ? "Its logit scale refitted (selection unchanged)" : "Warm-started",
        opt.warm_start_from.empty() ? std::string("(no Reproduce line)") : opt.warm_start_from);
  const auto j = p.to_json();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_string()) {
      s += fmt::format("{} = {}\n", it.key(), it.value().dump());
    } else if (it.value().is_number_float()) {
      s += fmt::format("{} = {:.6g}\n", it.key(), it.value().get<double>());
    } else {
      s += fmt::format("{} = {}\n", it.key(), it.value().dump());
    }
  }
  return s;
}

std::string calibration_report(const std::vector<FamilyReport>& reports, const FitOptions& opt) {
  std::string s =
      "# Synthetic workload calibration report\n\n"
      "Generated by `build/bin/moebench trace fit --all --write --report docs/calibration.md` "
      "(or, to evaluate the committed presets without refitting, `--evaluate-only` instead of "
      "`--write`). "
      "Do not edit by hand.\n\n"
      "Each family's preset (`configs/workloads/<family>.toml`) is fitted in three phases (the "
      "gate-input targets with the geometry knobs, the routing targets with the routing knobs, "
      "then every target with every knob), each a coordinate descent (" +
      (opt.max_evals >= 0 ? fmt::format("{} evaluations", opt.max_evals)
                          : std::string("300 evaluations, 600 for mixtral, 200 for deepseek-v3")) +
      " at most) refined by a Nelder-Mead simplex (" +
      (opt.refine_evals >= 0
           ? fmt::format("{} evaluations", opt.refine_evals)
           : std::string("200 evaluations, 600 for mixtral, 300 for deepseek-v3")) +
      "), on the targets below, which are published statistics of real models' routing "
      "(docs/WORKLOADS.md). No strategy result is used. Gate-input targets are evaluated on " +
      fmt::format(
          "{} sequences x {} tokens, routing targets on {} sequences x {} tokens (seed {}), ",
          opt.geometry_sequences * 2, opt.geometry_tokens * 2, opt.routing_sequences * 2,
          opt.routing_tokens, opt.seed + 1) +
      "a different seed from the one the fit used (the fit's workloads: " +
      fmt::format("{} x {} and {} x {}, Mixtral's routing {} x {}). ", opt.geometry_sequences,
                  opt.geometry_tokens, opt.routing_sequences, opt.routing_tokens,
                  opt.routing_sequences * 4, opt.routing_tokens) +
      "The fit minimises the squared distance of each "
      "statistic from the centre of its range, in half-widths, plus " +
      fmt::format("{}", opt.range_weight) + " times the squared excess beyond " +
      fmt::format("{}", opt.range_margin) +
      " half-widths (so that it does not give up one target's range to bring several others "
      "nearer their centres, and leaves room for the evaluation seed's noise); a proxy target "
      "counts " +
      fmt::format("{}", opt.proxy_weight) +
      " of a direct one, so a family's own measurements win where targets conflict. A preset "
      "fitted with `--warm-start` began at the knobs its file held before and ran only the "
      "third phase; its line below names both fits. Last, where a family has targets on the "
      "router's weights (phase *scale*: Mixtral's second-expert weight share), one factor "
      "multiplies gate_scale, skew and skew_shallow, which scales every logit and leaves every "
      "choice of experts, and so every other target, unchanged; `--scale-only` runs that phase "
      "alone on the committed preset.\n\n"
      "*Direct*: the number was measured on this family's model. *Proxy*: it was measured on "
      "another model (e.g. OLMoE) and is the closest published statistic for this family. "
      "Where a source gives a point value, the accepted range is that value plus or minus the "
      "tolerance shown.\n\n"
      "DALI Table 8 layer IDs are read as 1-based MoE layers; the cosine is between a layer's "
      "gate input and the next layer's. The residual vector is computed from the evaluated trace "
      "itself.\n";
  for (const auto& r : reports) {
    const int fitted = r.fitted_targets();
    s += fmt::format(
        "\n## {} (fitted on {})\n\n{} of {} fitted targets in range; {}.{}", r.family, r.model,
        r.fitted_in_range(), fitted,
        r.evals > 0 ? fmt::format("{} evaluations", r.evals)
        : r.provenance.empty()
            ? std::string("evaluated without refitting (the committed preset's knobs)")
            : fmt::format("evaluated without refitting (the committed preset's knobs, from `{}`)",
                          r.provenance),
        fitted < int(r.targets.size())
            ? " Targets marked *not fitted* are reported but left out of this family's fit; "
              "docs/WORKLOADS.md (\"Known limitations\") says why."
            : "");
    s += "\n\n";
    s += "| target | statistic | source (measured on) | applies as | published | accepted range | "
         "achieved | in range |\n";
    s += "|---|---|---|---|---|---|---|---|\n";
    for (const auto& t : r.targets) {
      const auto& c = *t.target;
      s += fmt::format("| `{}` | {} | {} ({}) | {} | {} | [{:.2f}, {:.2f}] ({}) | {:.3f} | {} |\n",
                       c.id, c.statistic, c.source, c.measured_on,
                       c.direct_family == r.family ? "direct" : "proxy", c.published, c.lo, c.hi,
                       c.tolerance_note, t.achieved,
                       std::string(t.within ? "yes" : "**no**") +
                           (c.pending_on(r.family) ? " (*not fitted*)" : ""));
    }
    s += "\n| qualitative check | source | expectation | holds | evidence "
         "|\n|---|---|---|---|---|\n";
    for (const auto& c : r.checks) {
      s += fmt::format("| {} | {} | {} | {}{} | {} |\n", c.check->statistic, c.check->source,
                       c.check->expectation, c.holds ? "yes" : "**no**",
                       c.check->required ? "" : " (*reported only*)", c.evidence);
    }
    s += "\nFitted knobs: ";
    const auto j = r.params.to_json();
    std::vector<std::string> kv;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.value().is_number())
        kv.push_back(fmt::format("`{}` = {}", it.key(), it.value().dump()));
    }
    s += join(kv, ", ") + ".\n";
  }
  return s;
}

}  // namespace moebench
