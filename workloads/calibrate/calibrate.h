// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Calibration of the synthetic-workload presets on published trace
// statistics (docs/WORKLOADS.md, "Calibration targets"), never on a
// strategy's result.
//
// `moebench trace fit` fits one family's knobs by coordinate descent on a
// fixed-seed generated workload (common random numbers keep the objective
// smooth), writes configs/workloads/<family>.toml and the report
// docs/calibration.md: for every target, its source, whether it is measured
// on that family or used as a proxy, the published value or range, the
// achieved value, and whether it lies in the range.

#include <functional>
#include <string>
#include <vector>

#include "workloads/stats/trace_stats.h"
#include "workloads/synthetic/generator.h"

namespace moebench {

struct CalibrationTarget {
  std::string id;              // short key, e.g. "cos_raw_mean"
  std::string statistic;       // what is measured
  std::string measured_on;     // model the published number comes from
  std::string source;          // "DALI Table 8", ...
  std::string published;       // as published ("0.44", "1.08-1.12")
  double lo = 0, hi = 0;       // accepted range (stated range, or published value +- our tolerance)
  std::string tolerance_note;  // how lo/hi were derived when the source gives a point value
  std::vector<std::string> families;  // families it is fitted and checked on
  std::string direct_family;          // the family it was measured on ("" = none of ours)
  std::string phase;  // "geometry" (gate inputs: cosines, gate reuse), "routing", or
                      // "scale" (the router's weights: fitted last, by the logit scale alone)
  std::function<double(const TraceStats&)> measure;
  // Families the target is measured and reported on but not fitted nor
  // required by the tests (docs/WORKLOADS.md, "Known limitations", says why
  // for each).
  std::vector<std::string> pending = {};
  bool pending_on(const std::string& family) const;
};

// Qualitative checks reported next to the targets (not fitted).
struct CalibrationCheck {
  std::string id, statistic, source, expectation;
  std::string phase = "routing";  // the workload it reads: "geometry" (gate inputs) or "routing"
  std::function<std::pair<bool, std::string>(const TraceStats&)> evaluate;  // (holds, evidence)
  bool required = true;  // false: reported only, where it conflicts with a measured target
  std::vector<std::string> families = {};  // the families it applies to (empty: every family)
};

const std::vector<CalibrationTarget>& calibration_targets();
const std::vector<CalibrationCheck>& calibration_checks();

// The model preset each family is fitted and reported on.
std::string calibration_model(const std::string& family);
const std::vector<std::string>& calibration_families();

struct FitOptions {
  int64_t geometry_sequences = 16, geometry_tokens = 96;  // workload for cosine targets
  int64_t routing_sequences = 256,
          routing_tokens = 64;  // workload for load/overlap targets
                                // (many sequences: consecutive tokens are correlated)
  int64_t seed = 20261121;
  // Gate reuse in the fit's objective: every n-th token of the gate-input
  // workload, so that about this many tokens are measured per layer.
  int64_t gate_reuse_tokens = 768;
  double proxy_weight = 0.5;  // a proxy target (measured on another model) counts half a direct one
  // A statistic beyond the inner range_margin of its range (in half-widths
  // from the centre) costs range_weight times the squared excess on top of
  // the centring term, so the fit does not trade one target out of its range
  // for several others a little nearer their centres; the margin leaves room
  // for the evaluation seed's sampling noise.
  double range_weight = 10.0;
  double range_margin = 0.8;
  int64_t max_evals = -1;  // coordinate descent, per phase (-1: the family's default)
  int64_t refine_evals =
      -1;  // Nelder-Mead refinement after it, per phase (-1: the family's default)
  bool verbose = false;
  // Start from the committed preset's knobs (passed as `start`) instead of
  // the generic start point, and run only the joint phase. The result then
  // depends on the file it started from: `warm_start_from` holds that file's
  // own Reproduce line, which the written preset and the report repeat.
  bool warm_start = false;
  std::string warm_start_from;
  // Start from the committed preset's knobs and fit only the logit scale
  // on the "scale" targets (the router's weights; selection unchanged).
  // warm_start_from holds the committed file's Reproduce line as above.
  bool scale_only = false;
};

struct TargetResult {
  const CalibrationTarget* target;
  double achieved = 0;
  bool within = false;
};

struct CheckResult {
  const CalibrationCheck* check;
  bool holds = false;
  std::string evidence;
};

struct FamilyReport {
  std::string family, model;
  GeneratorParams params;
  std::vector<TargetResult> targets;
  std::vector<CheckResult> checks;
  int64_t evals = 0;
  double loss = 0;
  std::string provenance;  // the evaluated preset's Reproduce line ("" when not known)
  // Targets fitted on this family (not pending), and how many of them are in range.
  int fitted_targets() const;
  int fitted_in_range() const;
};

// Fits `start` for `family` (knobs listed in the report); returns the fitted
// parameters with their evaluation.
FamilyReport fit_family(const std::string& family, const GeneratorParams& start,
                        const ConfigPaths& paths, const FitOptions& opt);
// Evaluates parameters without fitting.
FamilyReport evaluate_family(const std::string& family, const GeneratorParams& params,
                             const ConfigPaths& paths, const FitOptions& opt);

// Nelder-Mead evaluations per phase for a family: opt.refine_evals, or the
// family's default when it is -1 (600 for mixtral, whose ten targets include
// four narrow Table 5 ranges; 300 for deepseek-v3, whose evaluations over
// 58 layers x 256 experts take about a second each; 200 otherwise).
int64_t refine_evals_for(const std::string& family, const FitOptions& opt);
// Coordinate-descent evaluations per phase: opt.max_evals, or the family's
// default when it is -1 (600 for mixtral, 200 for deepseek-v3, 300 otherwise).
int64_t max_evals_for(const std::string& family, const FitOptions& opt);
// The non-default fit options as command-line flags (" --refine-evals 600"), or "".
std::string fit_options_flags(const FitOptions& opt);

// TOML text of a fitted preset.
std::string preset_toml(const GeneratorParams& p, const FamilyReport& r, const FitOptions& opt);
// Markdown report over families.
std::string calibration_report(const std::vector<FamilyReport>& reports, const FitOptions& opt);

}  // namespace moebench
