#pragma once
// Tokens' activations quantised to int8 for the packed int8/int4 kernels
// (avx512-vnni-gemm): one scale per token (quantise_activations),
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

  // Quantises x [tokens x n].
  void set(const float* x, int64_t tokens, int64_t n, int offset) {
    groups = (n + kQuantGroup - 1) / kQuantGroup;
    const int64_t w = groups * kQuantGroup;
    q.assign(size_t(tokens * w), 0);
    start.assign(size_t(tokens * groups), 0);
    scale.assign(size_t(tokens), 1.0f);
    for (int64_t t = 0; t < tokens; ++t) {
      int8_t* qt = &q[size_t(t * w)];
      scale[size_t(t)] = quantise_activations(x + t * n, n, qt);
      for (int64_t g = 0; g < groups; ++g) {
        int sum = 0;
        for (int64_t i = 0; i < kQuantGroup; ++i) sum += qt[g * kQuantGroup + i];
        start[size_t(t * groups + g)] = -offset * sum;
      }
    }
  }
};

}  // namespace moebench
