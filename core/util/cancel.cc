// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/cancel.h"

#include <atomic>

namespace moebench {

namespace {
std::atomic<bool> g_cancel{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the flag is set from a signal handler");
}  // namespace

void request_cancel() noexcept {
  g_cancel.store(true, std::memory_order_relaxed);
}
void clear_cancel() noexcept {
  g_cancel.store(false, std::memory_order_relaxed);
}
bool cancel_requested() noexcept {
  return g_cancel.load(std::memory_order_relaxed);
}
void throw_if_cancelled() {
  if (cancel_requested()) throw Cancelled();
}

}  // namespace moebench
