// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Fuzz target: the trace reader (safetensors trace file -> header checks,
// every sequence's tokens, the statistics `moebench trace stats` prints).
// Bad input must end in a moebench::Error naming the file; anything else
// (another exception, a crash, a sanitizer report, a hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/trace/trace.h"
#include "core/util/error.h"
#include "fuzz/scratch.h"
#include "workloads/stats/trace_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moebench;
  // Size checks against a budget below libFuzzer's -rss_limit_mb, so a
  // metadata size too large for memory is the clear error it is for a user.
  static const bool limited = ::setenv("MOEBENCH_MEMORY_LIMIT_MB", "1024", 0) == 0;
  (void)limited;
  // One scratch file per process, removed when the process exits.
  static const fuzz::ScratchPath scratch("moebench-fuzz-trace", ".safetensors");
  const std::filesystem::path& file = scratch.path;
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  try {
    const auto src = open_trace_file(file);
    const TraceInfo& info = src->info();
    int64_t tokens = 0;
    for (int64_t s = 0; s < int64_t(info.sequences.size()) && tokens < 4096; ++s) {
      auto reader = src->open(s, kAllFields);
      TokenRecord rec;
      while (tokens < 4096 && reader->next(rec)) ++tokens;
    }
    (void)compute_stats(*src);
  } catch (const Error&) {
    // The expected outcome of bad input: a clear error.
  }
  return 0;
}
