// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Runs one resolved case: builds its workload (synthetic generator or trace
// file), the calibration workload when a component needs one, the strategy's
// components, and the backend.

#include <memory>

#include "core/engine/engine.h"
#include "core/experiment/experiment.h"
#include "core/experiment/requests.h"

namespace moebench {

// The evaluation workload of a case; a synthetic one takes the lengths of
// served `requests` when workload.lengths is not "fixed" (docs/SERVING.md).
std::unique_ptr<TraceSource> make_workload(const WorkloadSpec& w, const ModelSpec& m,
                                           const std::filesystem::path& base_dir,
                                           const ConfigPaths& paths,
                                           const std::vector<Request>* requests = nullptr);

// Calibration data drawn from a stream disjoint from the evaluation workload
// (the synthetic generator's calibration stream, or workload.calibration_trace).
class WorkloadCalibration : public CalibrationData {
 public:
  WorkloadCalibration(const WorkloadSpec& w, const ModelSpec& m,
                      const std::filesystem::path& base_dir, const ConfigPaths& paths);
  const CalibrationProfile& profile() const override;
  const TraceSource& trace() const override;
  // The calibration workload if a component asked for it, else nullptr.
  const TraceSource* opened() const { return src_.get(); }

 private:
  void load() const;
  WorkloadSpec w_;
  ModelSpec m_;
  std::filesystem::path base_;
  ConfigPaths paths_;
  mutable std::unique_ptr<TraceSource> src_;
  mutable std::unique_ptr<CalibrationProfile> profile_;
};

struct CaseRun {
  SimulationResult result;
  std::string backend;
};

CaseRun run_case(const Case& c, const Registry& registry, const ConfigPaths& paths,
                 const EngineOptions& opt);

// What decides a simulated case's numbers: its resolved configuration with
// the comparison label replaced by the hardware its strategy actually runs on
// in that comparison (implementation_hardware), and its citation text left
// out. Two simulated cases with one key give the same numbers bit for bit
// (the simulation is deterministic), so run_suite simulates the key once and
// marks the other case's rows `result_of` (docs/USAGE.md, "Reading a result").
std::string simulation_key(const Case& c);

// The checks a case can pass or fail from its configuration alone, before
// anything is generated, read or allocated: the strategy's components can
// be created, and the case fits in GPU memory and in the host memory the
// simulation holds (core/engine/engine.h, case_footprint). run_case does
// them first; run_suite --dry-run and `moebench config validate` report
// them per case. Throws moebench::Error.
void preflight_case(const Case& c, const Registry& registry);

// What the strategy's components need of the workload (Needs: gate inputs
// and gate weights, a calibration workload) against what the case's workload
// has, a trace's header read for it. Throws moebench::Error naming the
// components and the workload key (a predictor needing gate
// inputs on a trace without them failed only when its case ran). Part of
// preflight_case; run_suite also checks every case with it at load.
void check_needs(const Case& c, const StrategyInstance& st);

// Test-only flag: MOEBENCH_TEST_SLOWDOWN=STRATEGY:FACTOR makes the CPU of the
// named strategy's cases FACTOR times slower (bandwidth, peaks and measured
// CPU tables), so CI can check that ci/check_regression catches a slower
// strategy. Returns `hw` unchanged when the variable is unset or names
// another strategy.
HardwareProfile test_slowdown(const HardwareProfile& hw, const std::string& strategy);

}  // namespace moebench
