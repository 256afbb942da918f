// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The CPU expert kernels, one table. Every list of kernels and every choice
// among them derives from it: which kernels this CPU runs
// (expert_kernels_available), the factory (make_expert_kernel), the fixed
// rule of "auto" (auto_expert_kernel), the candidates `moebench calibrate`
// times for a calibrated "auto" (auto_candidates, kernel_choice.h), the
// kernels `bench_expert` times, `moebench kernels` (and its --json, which
// analysis/kernels.py reads: bench_expert also writes the table into its
// JSON context). Adding a kernel is one file with its constructor
// (declared in expert_ffn_impl.h; the build picks up expert_ffn_*.cc) and
// one row in kernel_registry.cc; a name that is not in the table is
// refused, never mapped to another kernel.
//
// Threading: the table is built once, is immutable and is read by any
// thread; a kernel instance it makes belongs to its caller (kernels are not
// shared between concurrent runs).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/dtype.h"
#include "core/util/cpu_info.h"
#include "kernels/cpu/expert_ffn.h"

namespace moebench {

struct ExpertKernelInfo {
  std::string name;
  std::vector<WeightDtype> dtypes;  // the weight types it computes
  // The CPU features it needs (read at run time, core/util/cpu_info.h).
  bool (*supported)(const CpuInfo&) = nullptr;
  // Makes it; `name` is the name or, where takes_switch_point, "name:N".
  std::unique_ptr<ExpertKernel> (*make)(const std::string& name) = nullptr;
  // "name:N" sets the token count at which it switches kernels.
  bool takes_switch_point = false;
  // Runs other kernels of the table by token count: benchmarks time those.
  bool composite = false;
  // The fixed rule of "auto" (no measured kernel times): among the kernels
  // this CPU runs for a dtype, the one with the highest rank; 0 = never.
  int auto_rank = 0;
  // Timed by `moebench calibrate` as one of "auto"'s candidates: the own
  // kernels that read the packed layout (one set of buffers serves every
  // choice), not oneDNN (its OpenMP threads keep spinning after a call)
  // nor the unpacked ones.
  bool auto_candidate = false;
  // Timed by bench_expert (the reference's fp64 loops are too slow there).
  bool benchmarked = true;
  // A switching kernel (takes_switch_point): the row it runs up to and at
  // switch_tokens tokens per expert (or N of "name:N"), and the row above.
  std::string few, many;
  int64_t switch_tokens = 0;
  std::string summary;  // one line
};

// Every kernel, in a fixed order (the order of every list derived from it).
const std::vector<ExpertKernelInfo>& expert_kernel_registry();

// The row named `name` (or, for a kernel that takes a switch point, whose
// name is the part of `name` before ':'); nullptr when there is none.
const ExpertKernelInfo* find_expert_kernel(const std::string& name);

// The fixed rule of "auto" for `dtype` on this CPU: the highest auto_rank
// among the kernels this CPU runs for it (with AMX the switching kernels,
// else the packed AVX-512 kernels, else AVX2, else oneDNN for bf16; the
// ranks in kernel_registry.cc say why). Throws moebench::Error for fp16 and
// when only the reference could run it (too slow for paper shapes; name it
// explicitly to run it anyway).
std::string auto_expert_kernel(WeightDtype dtype);

// The table as JSON: per row its name, dtypes, whether this CPU runs it,
// takes_switch_point, composite, auto_rank, auto_candidate, benchmarked,
// few, many, switch_tokens and summary; and "auto": per dtype the fixed
// rule's kernel on this CPU (or "none: why").
std::string expert_kernel_table_json();

}  // namespace moebench
