// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// What "auto" runs, from measurements on this machine: each
// candidate kernel's time per expert task by tokens per expert, measured by
// `moebench calibrate` and stored in the hardware profile ([[kernel_time]]),
// and for every token count the candidate with the least time. Replaces
// constant switch points (kAmxSwitchTokens, kAmxQuantSwitchTokens), which
// were right on one machine and wrong on another (the tiles slower than
// avx512-vnni-gemm up to about 512 tokens on a 2-vCPU Xeon, faster from 16
// on a 16-core one).
//
// The candidates for a dtype are the kernels marked auto_candidate in the
// table of kernels (kernel_registry.cc): the own kernels that read the
// packed layout (ExpertWeights::pack, one layout for all of them, so one set
// of buffers serves every choice): bf16 avx512-bf16-gemm, amx-bf16,
// avx2-gemm; int8 and int4 avx512-vnni-gemm, amx-quant, amx-int8,
// avx2-gemm; those this CPU runs.
// Not oneDNN (its OpenMP threads keep spinning after a call and slow the
// next task on a small machine: timed alone it would win where a layer of
// tasks loses) nor the unpacked kernels (a second copy of every weight).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/dtype.h"
#include "kernels/cpu/expert_ffn.h"

namespace moebench {

// One candidate's measured time per task by tokens per expert.
struct KernelTiming {
  std::string kernel;
  std::vector<double> tokens;   // ascending, >= 1
  std::vector<double> time_us;  // same length
};

// From `first_tokens` tokens per expert on (to the next segment's first
// count), `kernel` runs.
struct KernelSegment {
  int64_t first_tokens = 1;
  std::string kernel;
  bool operator==(const KernelSegment& o) const {
    return first_tokens == o.first_tokens && kernel == o.kernel;
  }
};

// The own packed kernels this CPU runs for `dtype`, in the table's order
// (the first is the one preferred on a tie); kernel_registry.cc.
std::vector<std::string> auto_candidates(WeightDtype dtype);

// The time of `t` at `tokens`: linear between measured counts, the first
// entry below the first count, in proportion to the tokens beyond the last.
double timing_at(const KernelTiming& t, double tokens);

// For each token count from 1 to the largest measured, the timing with the
// least time_at (a tie to the earlier one in `timings`); one segment per
// run of counts with the same kernel, the last one open-ended. Throws
// moebench::Error when `timings` is empty or a timing is malformed (naming
// it).
std::vector<KernelSegment> fastest_kernels(const std::vector<KernelTiming>& timings);

// "avx512-vnni-gemm 1-8, amx-quant 9+".
std::string describe(const std::vector<KernelSegment>& segments);

// One kernel that runs segment i's kernel for token counts in segment i,
// named `name`. Throws moebench::Error when a segment's kernel is not
// available here, when they differ in needs_packed(), or when the segments
// are not ascending from 1.
std::unique_ptr<ExpertKernel> make_segmented_kernel(const std::string& name,
                                                    const std::vector<KernelSegment>& segments);

// Two kernels behind one name: `few` up to `last_few` tokens per expert,
// `many` above ("hybrid", "avx512-amx-bf16", "avx512-amx-quant" and their
// ":N" forms, kernels/cpu/kernel_registry.cc). Throws moebench::Error when
// they differ in needs_packed().
std::unique_ptr<ExpertKernel> make_switch_kernel(const std::string& name, int64_t last_few,
                                                 std::unique_ptr<ExpertKernel> few,
                                                 std::unique_ptr<ExpertKernel> many);

// The kernel a segmented or switching kernel runs for `tokens` (its own
// name for any other kernel).
std::string kernel_for(const ExpertKernel& k, int64_t tokens);

}  // namespace moebench
