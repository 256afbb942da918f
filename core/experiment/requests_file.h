// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// A served workload's requests file (workload.arrivals, docs/SERVING.md): one
// JSON object a line, the shape vLLM's and SGLang's benchmark tools write.
// Read once when the experiment is expanded (so --dry-run and `config
// validate` refuse a bad file, and the case id holds its SHA-256) and again
// when a case runs (the same bytes, or the case fails by name).
//
// What a line means:
//   arrival_time (or timestamp)  seconds on any clock; kept relative to the
//                                file's first request, so Unix-epoch times
//                                and times from 0 give the same run
//   prompt_len (or input_len)    prompt tokens
//   output_len                   tokens generated, the first one (the
//                                prefill's) included, as vLLM and SGLang
//                                count them: output_len - 1 decode steps
//   decode_len                   decode steps after the prefill (moebench's
//                                own key: decode_len + 1 tokens generated)

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/workload_spec.h"

namespace moebench {

// The most tokens of one request's prompt, and of its decode steps (the same
// bound as the workload keys prompt_len and decode_len).
inline constexpr int64_t kMaxRequestTokens = int64_t(1) << 20;
// First arrival times above this (s) look like Unix-epoch milliseconds
// (about 1.7e12 in 2026) read as seconds: the case warns.
inline constexpr double kEpochMillisecondsLike = 1e11;
// The longest line, and the largest file, read.
inline constexpr size_t kMaxRequestLineBytes = 65536;
inline constexpr uint64_t kMaxRequestsFileBytes = uint64_t(256) << 20;

struct RequestLine {
  double arrival_s = 0;  // seconds after the file's first request (0 without times)
  int64_t prompt_len = 0;
  int64_t decode_len = 0;  // decode steps after the prefill
  int line = 0;            // 1-based line of the file
};

struct RequestsFile {
  std::string shown;   // the path as the workload names it
  std::string sha256;  // of the bytes read
  std::vector<RequestLine> requests;
  double first_arrival_s = 0;  // the file's own time of its first request (times read)
};

// What the workload reads of the file.
struct RequestsNeeds {
  bool times = false;          // arrival = "file"
  bool lengths = false;        // lengths = "file"
  int64_t context_length = 0;  // the model's (prompt and output together); 0: not checked
};

// Reads and checks the file at `path` (`shown`: as the workload names it).
// Throws ConfigError naming the file, the line and the key for a bad line
// (not a JSON object, a key missing, given twice under two names, not a
// whole number, out of range, times out of order or spread over more than
// kMaxArrivalSpanS, a request longer than the context), and Error for a
// path that is not a readable regular file (a FIFO, a device or a folder is
// named, never opened), invalid UTF-8, or a file too large.
RequestsFile read_requests_file(const std::filesystem::path& path, const std::string& shown,
                                const RequestsNeeds& needs);

// The same checks on a file's bytes already read (the fuzz target's way in):
// UTF-8 and every line; `shown` names the file in errors.
RequestsFile parse_requests(std::string_view bytes, const std::string& shown,
                            const RequestsNeeds& needs);

}  // namespace moebench
