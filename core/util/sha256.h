// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// SHA-256, used for content identity: a model spec's hash in trace metadata,
// a case's identity in a suite (hash of its resolved config), file checksums.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace moebench {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::array<uint8_t, 32> digest();  // REQUIRES: called once
  std::string hex_digest();          // REQUIRES: called once

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Lower-case hex SHA-256 of `s`.
std::string sha256_hex(std::string_view s);

}  // namespace moebench
