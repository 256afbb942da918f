#pragma once
// Tokens' activations quantised to int8 for the packed int8/int4 kernels
// (avx512-vnni-gemm): one scale per token (quantise_activations_avx512),
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

  // Quantises x [tokens x n] (quantise_activations_avx512, quant_tokens.cc).
  // REQUIRES: the CPU has avx512f and avx512bw.
  void set(const float* x, int64_t tokens, int64_t n, int offset);
};

}  // namespace moebench
