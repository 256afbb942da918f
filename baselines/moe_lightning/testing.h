// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The MoE-Lightning tests' hardware (moe_lightning_test.cc, hrm_test.cc):
// baselines/testing.h's round hardware with a CPU that reads 0.064 bytes/ns
// (one sequence's attention over one 256-byte KV entry: 4 us) and a GPU
// whose layer overhead is 1 us (the QKV part).

#include "baselines/testing.h"

namespace moebench::testing {

inline HardwareProfile cpu_attention_hardware() {
  HardwareProfile h = round_hardware();
  h.cpu.mem_bw_gbps = 0.064;
  h.cpu.peak_gflops_fp32 = 1e9;
  h.gpu.layer_overhead_us = 1;
  return h;
}

}  // namespace moebench::testing
