// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// TokenMemo: per-token results of a deterministic function of a token's
// gate inputs (a router applied to them: HybriMoE's and DALI's predictors),
// shared by the cases that share one RunRouting (core/engine/routing_cache.h).
// Those cases read the same workload bit for bit (same tokens, gate inputs
// and gate weights: the source's content key names them all), so a result
// computed by one case is the result every other would compute.
//
// A table is named by a key that must say everything besides the token that
// decides the result (the function, its parameters, the layers). Each token
// is written once (the first case to claim it) and read by the rest; a case
// that finds a token being written computes it itself. The tables of all
// memos together hold at most a budget of bytes (the routing cache's,
// MOEBENCH_ROUTING_CACHE_MIB); past it a table is not made and the caller
// computes every token.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace moebench {

class TokenMemo {
 public:
  // `width` ids and `width` weights per token.
  class Table {
   public:
    Table(int64_t tokens, int64_t width);
    int64_t width() const { return width_; }
    // The token's result when it has been written.
    bool get(int64_t token, const int32_t** ids, const float** weights) const;
    // Writes the token's result unless another case has claimed it.
    void put(int64_t token, const int32_t* ids, const float* weights);

   private:
    int64_t width_;
    std::unique_ptr<std::atomic<uint8_t>[]> state_;  // 0 empty, 1 being written, 2 written
    std::vector<int32_t> ids_;
    std::vector<float> weights_;
  };

  explicit TokenMemo(int64_t tokens);
  ~TokenMemo();
  TokenMemo(const TokenMemo&) = delete;
  TokenMemo& operator=(const TokenMemo&) = delete;

  // The table for `key` (made on first use); nullptr when the budget is spent.
  Table* table(const std::string& key, int64_t width);

  // Unique in the process (a memo made later at the same address has another).
  uint64_t serial() const { return serial_; }

  // Bytes held by every memo's tables (tests and benchmarks).
  static int64_t total_bytes();
  // Sets the budget of all memos' tables together (0 until the routing
  // cache sets it to its own: no tables).
  static void set_budget(int64_t bytes);

 private:
  int64_t tokens_;
  uint64_t serial_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Table>> tables_;
  int64_t bytes_ = 0;
};

}  // namespace moebench
