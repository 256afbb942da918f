// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The probe's bandwidth figures: the STREAM-like ceiling is the
// largest of the one-stream read, the four-stream read and the triad, each
// measured (positive) where the CPU has the instructions.
#include "kernels/cpu/probe.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "core/util/cpu_info.h"

namespace moebench {
namespace {

TEST(Probe, TheBandwidthCeilingIsTheLargestOfItsMeasurements) {
  ProbeOptions o;
  o.threads = 1;
  o.bandwidth_gib = 0.05;
  o.repeats = 1;
  const ProbeResult r = run_probe(o);
  EXPECT_GT(r.read_bw_gbps, 0.0);
  EXPECT_GT(r.triad_bw_gbps, 0.0);
  const CpuInfo& c = cpu_info();
  if (c.avx512f || c.avx2) {
    EXPECT_GT(r.read4_bw_gbps, 0.0);
  } else {
    EXPECT_EQ(r.read4_bw_gbps, 0.0);
  }
  EXPECT_EQ(r.ceiling_bw_gbps, std::max({r.read_bw_gbps, r.read4_bw_gbps, r.triad_bw_gbps}));
}

}  // namespace
}  // namespace moebench
