// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/sha256.h"

#include <gtest/gtest.h>

namespace moebench {
namespace {

// FIPS 180-2 test vectors.
TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  std::string data(1000, 'a');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char('a' + i % 26);
  Sha256 h;
  for (size_t i = 0; i < data.size(); i += 7) h.update(std::string_view(data).substr(i, 7));
  EXPECT_EQ(h.hex_digest(), sha256_hex(data));
  // One million 'a' (FIPS 180-2).
  Sha256 m;
  const std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) m.update(chunk);
  EXPECT_EQ(m.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace moebench
