// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// ExpertBlob's layout and, on every machine, the GPU entry points' errors
// where no GPU can be used (the GPU paths: gpu_experts_test.cc, label gpu).
#include <gtest/gtest.h>

#include "core/util/error.h"
#include "kernels/cuda/gpu_experts.h"

namespace moebench::gpu {
namespace {

TEST(ExpertBlob, SectionsAreAlignedDisjointAndHoldTheWeights) {
  for (WeightDtype d : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
    const ExpertShape s{130, 71};
    const ExpertBlob b = ExpertBlob::of(s, d);
    EXPECT_EQ(b.bytes % 256, 0);
    EXPECT_EQ(b.down % 256, 0);
    const ExpertWeights e = ExpertWeights::random(s, d, 5);
    std::vector<uint8_t> buf(size_t(b.bytes), 0xee);
    b.write(e, buf.data());
    if (d == WeightDtype::kBf16) {
      EXPECT_GE(b.down, 2 * 130 * 71 * 2);
      EXPECT_GE(b.bytes, b.down + 130 * 71 * 2);
      const auto* u = reinterpret_cast<const uint16_t*>(buf.data());
      EXPECT_EQ(u[0], e.gate[0]);
      EXPECT_EQ(u[71 * 130], e.up[0]);  // up right after gate
      EXPECT_EQ(u[71 * 130 + 5], e.up[5]);
      EXPECT_EQ(reinterpret_cast<const uint16_t*>(buf.data() + b.down)[7], e.down[7]);
    } else {
      EXPECT_GT(b.gate_up_scale, b.down);
      EXPECT_GT(b.down_scale, b.gate_up_scale);
      EXPECT_EQ(b.gate_up_scale % 256, 0);
      EXPECT_EQ(b.down_scale % 256, 0);
      EXPECT_EQ(buf[size_t(e.qgate.codes.size()) + 3], e.qup.codes[3]);
      EXPECT_EQ(buf[size_t(b.down) + 9], e.qdown.codes[9]);
      const auto* sc = reinterpret_cast<const float*>(buf.data() + b.gate_up_scale);
      EXPECT_EQ(sc[e.qgate.scale.size() + 1], e.qup.scale[1]);
      EXPECT_EQ(reinterpret_cast<const float*>(buf.data() + b.down_scale)[2], e.qdown.scale[2]);
      EXPECT_LE(b.down_scale + int64_t(e.qdown.scale.size()) * 4, b.bytes);
    }
  }
}

TEST(ExpertBlob, RefusesBadShapesAndDtypes) {
  EXPECT_THROW(ExpertBlob::of({0, 4}, WeightDtype::kBf16), Error);
  try {
    ExpertBlob::of({64, 64}, WeightDtype::kFp16);
    FAIL() << "fp16 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected dtype bf16, int8 or int4, found fp16"),
              std::string::npos)
        << e.what();
  }
}

TEST(GpuExperts, WithoutAGpuTheErrorSaysWhatIsMissing) {
  if (available()) GTEST_SKIP() << "a GPU is visible: " << describe_device();
  try {
    GpuExperts g({{64, 32}, WeightDtype::kBf16, 1, 4});
    FAIL() << "constructed without a GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("found"), std::string::npos) << e.what();
  }
  EXPECT_THROW(measure_copies({1024}, 3), Error);
  EXPECT_THROW(pinned_bytes(16), Error);
}

}  // namespace
}  // namespace moebench::gpu
