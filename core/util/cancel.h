// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Cooperative cancellation: run_suite's SIGINT/SIGTERM handler asks for it,
// and long loops (the step loop, the real backend's weight allocation and
// its kernels between tasks, workload generation) check it and stop with
// moebench::Cancelled. A cancelled case writes nothing; `--resume` runs it
// again. The flag is a lock-free atomic, safe to set from a signal handler.

#include "core/util/error.h"

namespace moebench {

// Thrown where a loop notices a cancellation request. Not an Error: a
// cancelled case is neither ok nor failed, it is left for --resume.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled (SIGINT or SIGTERM)") {}
};

void request_cancel() noexcept;  // async-signal-safe
void clear_cancel() noexcept;
bool cancel_requested() noexcept;
// Throws Cancelled when a cancellation was requested.
void throw_if_cancelled();

}  // namespace moebench
