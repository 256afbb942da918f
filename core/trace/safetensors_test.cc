// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/trace/safetensors.h"

#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "core/testing/temp_dir.h"
#include "core/util/error.h"

namespace moebench::st {
namespace {

TEST(Half, RoundTripsEveryHalfExactly) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(uint16_t(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f), uint16_t(h)) << h;
  }
}

TEST(Half, BulkConversionGivesTheScalarBitsForEveryHalf) {
  // Every binary16 value, at an odd byte offset (unaligned), with a tail
  // shorter than a vector; the NaN flag is set exactly when a NaN is present.
  std::vector<uint8_t> bytes(1 + 2 * 0x10000 + 2 * 5);
  for (uint32_t h = 0; h < 0x10000 + 5; ++h) {
    const uint16_t v = uint16_t(h < 0x10000 ? h : 0x3c00 + h);
    std::memcpy(&bytes[1 + 2 * h], &v, 2);
  }
  const int64_t n = 0x10000 + 5;
  std::vector<float> out(n);
  EXPECT_TRUE(half_to_float_n(bytes.data() + 1, n, out.data()));
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, &bytes[1 + 2 * i], 2);
    const float want = half_to_float(h);
    uint32_t a, b;
    std::memcpy(&a, &want, 4);
    std::memcpy(&b, &out[i], 4);
    ASSERT_EQ(a, b) << "half 0x" << std::hex << h;
  }
  // Without NaNs (0x0000..0x7c00 is zero..inf): no flag, in the vector body or the tail.
  EXPECT_FALSE(half_to_float_n(bytes.data() + 1, 0x7c01, out.data()));
  EXPECT_TRUE(half_to_float_n(bytes.data() + 1, 0x7c02, out.data()));  // the tail holds 0x7c01
  EXPECT_TRUE(half_to_float_n(bytes.data() + 1 + 2 * 0x7c00, 16, out.data()));  // vector body
}

TEST(Half, BulkEncodingGivesTheScalarBits) {
  // Every half, the midpoints between neighbours and one float ulp either
  // side (the rounding boundaries), the overflow edge, NaNs and infinities
  // of both signs, and a stride through all 2^32 float bit patterns.
  std::vector<float> in;
  auto bits_to_float = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  auto float_bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float lo = half_to_float(uint16_t(h)), hi = half_to_float(uint16_t(h + 1));
    const float mid = lo + (hi - lo) / 2;  // exact: halves have 11 significant bits
    for (float f :
         {lo, mid, bits_to_float(float_bits(mid) - 1), bits_to_float(float_bits(mid) + 1)}) {
      in.push_back(f);
      in.push_back(-f);
    }
  }
  for (uint64_t u = 0; u < (1ull << 32); u += 65521) in.push_back(bits_to_float(uint32_t(u)));
  for (float f :
       {65504.0f, 65519.99f, 65520.0f, 65536.0f, 1e30f, std::numeric_limits<float>::infinity(),
        std::nanf(""), std::numeric_limits<float>::denorm_min(), 0.0f}) {
    in.push_back(f);
    in.push_back(-f);
  }
  in.push_back(bits_to_float(0x7f800001u));  // signalling NaN
  in.push_back(bits_to_float(0xffffffffu));
  std::vector<uint16_t> out(in.size());
  float_to_half_n(in.data(), int64_t(in.size()), out.data());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(out[i], float_to_half(in[i])) << "float bits 0x" << std::hex << float_bits(in[i]);
  }
}

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // halfway to 65536, ties to even = inf
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (zero)
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
}

std::string header_error(const std::string& json, uint64_t data_size) {
  std::vector<TensorInfo> t;
  std::map<std::string, std::string> m;
  try {
    parse_header(json, data_size, "f.st", &t, &m);
  } catch (const Error& e) {
    return e.what();
  }
  return "<ok>";
}

TEST(Header, ValidatesEverySize) {
  const std::string ok =
      R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"b":{"dtype":"I16","shape":[4],"data_offsets":[24,32]},"__metadata__":{"k":"v"}})";
  EXPECT_EQ(header_error(ok, 32), "<ok>");
  EXPECT_EQ(header_error("[1]", 0), "f.st: header: expected a JSON object, found array");
  EXPECT_EQ(header_error(R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", 4),
            "f.st: tensor 'a': expected a safetensors dtype (F32, F16, I32, ...), found 'F33'");
  EXPECT_EQ(header_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4),
            "f.st: tensor 'a': expected data_offsets spanning 8 bytes (2 x F32), found [0, 4]");
  EXPECT_EQ(header_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
            "f.st: tensor 'a': expected data inside the file's 4 data bytes, found data_offsets "
            "ending at 8 "
            "(truncated file?)");
  EXPECT_EQ(
      header_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
      "f.st: tensor 'a': expected data starting at byte 0 (tensors must be contiguous), found "
      "data_offsets starting at 4");
  EXPECT_EQ(
      header_error(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          8),
      "f.st: tensor 'b': expected data starting at byte 8 (tensors must be contiguous), found "
      "data_offsets starting at 4");
  EXPECT_EQ(header_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12),
            "f.st: data section: expected 4 bytes as the header describes, found 12 bytes");
  EXPECT_EQ(header_error(R"({"__metadata__":{"k":1}})", 0),
            "f.st: __metadata__.k: expected a string, found number");
  EXPECT_EQ(header_error(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
            "f.st: tensor 'a' shape: expected non-negative integers, found -1");
  EXPECT_EQ(header_error(
                R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", 0),
            "f.st: tensor 'a' shape: expected a size that fits in 64 bits, found "
            "[4611686018427387904,4]");
  // A repeated key would silently replace the first; at any depth.
  EXPECT_EQ(header_error(R"({"__metadata__":{"k":"v","k":"w"}})", 0),
            "f.st: header: expected each key once per JSON object, found key 'k' twice");
  EXPECT_EQ(
      header_error(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
          4),
      "f.st: header: expected each key once per JSON object, found key 'a' twice");
  // The same key in two different objects is fine.
  EXPECT_EQ(
      header_error(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"__metadata__":{"a":"x","dtype":"y"}})",
          4),
      "<ok>");
}

TEST(File, WriterReaderRoundTripAndTruncation) {
  testing::TempDir dir;
  const auto p = dir / "t.safetensors";
  {
    Writer w(p, {{"x", DType::kF32, {3}}, {"y", DType::kI32, {2}}}, {{"m", "1"}});
    const float x[3] = {1, 2, 3};
    const int32_t y[2] = {7, 8};
    w.write_at("y", 0, y, 8);  // any order
    w.write_at("x", 4, x + 1, 8);
    w.write_at("x", 0, x, 4);
    w.commit();
  }
  auto f = File::open(p);
  EXPECT_EQ(f->metadata().at("m"), "1");
  ASSERT_NE(f->find("x"), nullptr);
  float x[3];
  std::memcpy(x, f->data(*f->find("x")), 12);
  EXPECT_EQ(x[2], 3.0f);
  EXPECT_EQ((8 + 0) % 1, 0);
  // Truncate the data by one byte: rejected before anything is read.
  const auto size = std::filesystem::file_size(p);
  std::filesystem::resize_file(p, size - 1);
  try {
    File::open(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated file?"), std::string::npos) << e.what();
  }
  std::filesystem::resize_file(p, 4);
  EXPECT_THROW(File::open(p), Error);
}

// Random mutations of a valid header and of whole files: the parser must
// accept or reject with moebench::Error, never crash or read out of bounds
// (run under ASan in ci/sanitize).
TEST(HeaderFuzz, MutatedHeadersNeverCrash) {
  const std::string base =
      R"({"topk_ids":{"dtype":"I32","shape":[4,2,2],"data_offsets":[0,64]},"w":{"dtype":"F16","shape":[4,2,2],"data_offsets":[64,96]},"__metadata__":{"format":"moebench-trace","top_k":"2"}})";
  std::mt19937_64 rng(42);
  const std::string alphabet = "{}[]\",:0123456789-eE.abcdFIU ";
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s = base;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t pos = rng() % s.size();
      switch (rng() % 4) {
        case 0:
          s[pos] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          s.erase(pos, 1 + rng() % 8);
          break;
        case 2:
          s.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 3:
          s.insert(pos, std::to_string(rng()));
          break;
      }
    }
    std::vector<TensorInfo> t;
    std::map<std::string, std::string> m;
    try {
      parse_header(s, 96 + (rng() % 3 == 0 ? rng() % 64 : 0), "fuzz", &t, &m);
      ++accepted;
    } catch (const Error&) {
    }
  }
  EXPECT_GT(accepted, 0);  // some mutations (e.g. in metadata strings) stay valid
}

TEST(HeaderFuzz, MutatedFilesNeverCrash) {
  testing::TempDir dir;
  const auto p = dir / "ok.safetensors";
  {
    Writer w(p, {{"a", DType::kF32, {8}}, {"b", DType::kI32, {4}}}, {});
    std::vector<uint8_t> z(48, 1);
    w.write_at("a", 0, z.data(), 32);
    w.write_at("b", 0, z.data(), 16);
    w.commit();
  }
  const std::string good = read_file(p);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string s = good;
    if (rng() % 2) s.resize(rng() % s.size());
    const int flips = int(rng() % 3);
    for (int f = 0; f < flips && !s.empty(); ++f)
      s[rng() % std::min<size_t>(s.size(), 80)] = char(rng());
    const auto q = dir / "m.safetensors";
    write_file_atomic(q, s);
    try {
      File::open(q);
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace moebench::st
