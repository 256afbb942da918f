// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Tokens' activations quantised to int8 for the packed int8/int4 kernels
// (avx512-vnni-gemm, avx2-gemm): one scale per token (quantise_activations),
// and per group of kQuantGroup columns the start value that removes the
// weight codes' offset: -offset x (the sum of the group's quantised values).
#include <cstdint>
#include <vector>

#include "kernels/cpu/expert_ffn_impl.h"

namespace moebench {

struct QTokens {
  int64_t groups = 0;
  std::vector<int8_t> q;       // [tokens][groups * 64], columns zero-padded
  std::vector<int32_t> start;  // [tokens][groups]
  std::vector<float> scale;    // [tokens]

  // Which code quantises: the widest this CPU has (kAuto), or one named
  // (tests compare them; REQUIRES: the CPU has it). All give the same values.
  enum class Isa { kAuto, kAvx512, kAvx2, kScalar };
  // Quantises x [tokens x n] (quant_tokens.cc).
  void set(const float* x, int64_t tokens, int64_t n, int offset, Isa isa = Isa::kAuto);
};

}  // namespace moebench
