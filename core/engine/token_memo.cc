// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/token_memo.h"

#include <algorithm>

namespace moebench {

namespace {
// Bytes of every memo's tables and their budget (set by the routing cache,
// which makes the memos; 0 until then: no tables).
std::atomic<int64_t> g_bytes{0};
std::atomic<int64_t> g_budget{0};
std::atomic<uint64_t> g_serial{0};
}  // namespace

TokenMemo::TokenMemo(int64_t tokens) : tokens_(tokens), serial_(++g_serial) {}

TokenMemo::Table::Table(int64_t tokens, int64_t width)
    : width_(width),
      state_(new std::atomic<uint8_t>[size_t(tokens)]),
      ids_(size_t(tokens * width)),
      weights_(size_t(tokens * width)) {
  for (int64_t t = 0; t < tokens; ++t) state_[size_t(t)].store(0, std::memory_order_relaxed);
}

bool TokenMemo::Table::get(int64_t token, const int32_t** ids, const float** weights) const {
  if (state_[size_t(token)].load(std::memory_order_acquire) != 2) return false;
  *ids = &ids_[size_t(token * width_)];
  *weights = &weights_[size_t(token * width_)];
  return true;
}

void TokenMemo::Table::put(int64_t token, const int32_t* ids, const float* weights) {
  uint8_t empty = 0;
  if (!state_[size_t(token)].compare_exchange_strong(empty, 1, std::memory_order_acq_rel)) return;
  std::copy(ids, ids + width_, &ids_[size_t(token * width_)]);
  std::copy(weights, weights + width_, &weights_[size_t(token * width_)]);
  state_[size_t(token)].store(2, std::memory_order_release);
}

TokenMemo::~TokenMemo() {
  g_bytes.fetch_sub(bytes_);
}

TokenMemo::Table* TokenMemo::table(const std::string& key, int64_t width) {
  std::lock_guard<std::mutex> g(mu_);
  if (auto it = tables_.find(key); it != tables_.end()) {
    return it->second && it->second->width() == width ? it->second.get() : nullptr;
  }
  const int64_t need = tokens_ * (width * int64_t(sizeof(int32_t) + sizeof(float)) + 1);
  if (width <= 0 || g_bytes.fetch_add(need) + need > g_budget.load()) {
    if (width > 0) g_bytes.fetch_sub(need);
    tables_[key] = nullptr;  // not asked again: every case computes this one
    return nullptr;
  }
  bytes_ += need;
  auto& t = tables_[key] = std::make_unique<Table>(tokens_, width);
  return t.get();
}

int64_t TokenMemo::total_bytes() {
  return g_bytes.load();
}

void TokenMemo::set_budget(int64_t bytes) {
  g_budget.store(std::max<int64_t>(bytes, 0));
}

}  // namespace moebench
