// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// RunModes: the residency settings that change how the engine runs a step,
// parsed and checked once per run (the engine's parts read these flags, not
// the strings of StrategySpec::residency).

#include "core/config/hardware_profile.h"
#include "core/engine/engine.h"
#include "core/engine/variants/attention_path.h"

namespace moebench {

struct RunModes {
  bool attention_ahead = false;  // residency.attention_order = "ahead" (CGOPipe's order)
  bool real_backend = false;     // the executor is the real backend's
  bool pipelined = false;        // a host KV cache or micro_batches > 1: decode steps pipelined
};

// The strategy's modes on this hardware and backend; throws moebench::Error
// for a combination the engine cannot run (a pipelined decode on the real
// backend, a host KV cache without a GPU).
RunModes run_modes(const StrategyInstance& st, const HardwareProfile& hw, bool real_backend,
                   const AttentionPath& attention);

}  // namespace moebench
