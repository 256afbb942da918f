// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// n values uniform in [-1, 1) from a seeded generator: the inputs and
// weights the kernel tests feed to every implementation and its reference.

#include <cstdint>
#include <random>
#include <vector>

namespace moebench::testing {

inline std::vector<float> random_vec(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace moebench::testing
