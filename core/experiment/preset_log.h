// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// While a case's sections are resolved, the preset files they come from are
// recorded (Case::presets): resolve_preset (presets.cc) appends to the log
// of the thread's innermost PresetLog (experiment.cc opens one per case).

#include <vector>

#include "core/experiment/experiment.h"

namespace moebench {

// The log the thread's presets go to, or none.
inline thread_local std::vector<PresetFile>* t_preset_log = nullptr;

// Records the preset files resolved while it lives (one case's sections).
class PresetLog {
 public:
  explicit PresetLog(std::vector<PresetFile>* out) : prev_(t_preset_log) { t_preset_log = out; }
  ~PresetLog() { t_preset_log = prev_; }
  PresetLog(const PresetLog&) = delete;
  PresetLog& operator=(const PresetLog&) = delete;

 private:
  std::vector<PresetFile>* prev_;
};

}  // namespace moebench
