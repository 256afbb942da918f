// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Measures the ceilings of this machine's CPU that a HardwareProfile needs:
// sustained memory read bandwidth, peak FMA throughput per instruction set,
// and the cost of handing a task to a worker thread. `moebench probe`
// prints the results as a [cpu] section for configs/hardware/.
//
// Each kernel is compiled for its ISA with a target attribute and run only
// when cpu_info() says the ISA is usable, so the binary stays portable.

#include <string>

namespace moebench {

struct ProbeOptions {
  int threads = 0;             // 0 = all CPUs this process may use
  double bandwidth_gib = 1.0;  // buffer size for the bandwidth test
  int repeats = 5;             // best-of
};

struct ProbeResult {
  int threads = 0;
  double read_bw_gbps = 0;  // all threads, one stream per thread, sustained read (decimal GB/s)
  // STREAM-like: four streams per thread with vector loads, and
  // STREAM's triad (a = b + s c; 24 bytes per element counted as STREAM
  // does); the ceiling is the largest of the three, the denominator of the
  // kernels' bandwidth fractions.
  double read4_bw_gbps = 0;
  double triad_bw_gbps = 0;
  double ceiling_bw_gbps = 0;
  double fp32_gflops = 0;      // FMA peak, all threads
  std::string fp32_isa;        // "avx512f", "avx2+fma" or "scalar"
  double bf16_gflops = 0;      // 0 when the CPU has no bf16 dot product
  double int8_gops = 0;        // 0 when the CPU has no int8 dot product (VNNI)
  double int8_avx2_gops = 0;   // vpmaddubsw peak where AVX2 has no VNNI beside it; else 0
  double amx_bf16_gflops = 0;  // AMX TDPBF16PS peak; 0 when the CPU has no usable AMX
  double amx_int8_gops = 0;    // AMX TDPBSSD peak; 0 when the CPU has no usable AMX-INT8
  double dispatch_us =
      0;  // median round trip of a call to the kernels' thread pool (pool_dispatch_us)
};

ProbeResult run_probe(const ProbeOptions& opt);

}  // namespace moebench
