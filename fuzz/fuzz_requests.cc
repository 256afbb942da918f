// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Fuzz target: a served workload's requests file (workload.arrivals, JSONL
// -> checked requests, then the requests a case runs: arrivals relative to
// the first and each line's lengths). Each input is read with every
// combination of what a workload reads of it (times, lengths, a context
// length). Bad input must end in a moebench::Error naming the file and
// line; anything else (another exception, a crash, a sanitizer report, a
// hang) is a bug. The workload keys that go with it are fuzzed by the
// experiment target (fuzz/corpus/experiment/served-*.toml).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/experiment/requests.h"
#include "core/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moebench;
  // The bytes as read_requests_file has them after its path checks (those
  // are tested in core/experiment/requests_test.cc): no file per input.
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (int needs = 1; needs < 4; ++needs) {
    const bool times = (needs & 1) != 0, lengths = (needs & 2) != 0;
    for (int64_t context : {int64_t(0), int64_t(4096)}) {
      try {
        const RequestsFile f = parse_requests(bytes, "<fuzz>", {times, lengths, context});
        WorkloadSpec w;
        w.arrival = times ? "file" : "batch";
        w.lengths = lengths ? "file" : "fixed";
        w.scheduler = times ? "continuous" : "static";
        w.arrivals = "<fuzz>";
        w.sequences = std::max<int64_t>(1, int64_t(f.requests.size()));
        const auto requests = make_requests(w, &f);
        double last = 0;
        for (const Request& r : requests) {
          // What the engine relies on: times from 0, in order, within the
          // span; lengths within their bound.
          if (!(r.arrival_s >= last && r.arrival_s <= kMaxArrivalSpanS) || r.prompt_len < 0 ||
              r.decode_len < 0 || r.prompt_len > kMaxRequestTokens ||
              r.decode_len > kMaxRequestTokens) {
            __builtin_trap();
          }
          last = r.arrival_s;
        }
      } catch (const Error&) {
        // The expected outcome of bad input: a clear error.
      }
    }
  }
  return 0;
}
