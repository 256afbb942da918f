// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Deterministic float math: the same inputs give bit-identical outputs on
// every x86-64 machine, compiler and vector width. Used wherever results
// must be byte-reproducible (trace generation, routing).
//
// Rules that make this hold: only IEEE-754 basic operations (+ - * /, sqrt)
// each rounded on its own (files using these are compiled with
// -ffp-contract=off so no fused multiply-add is formed), no libm
// transcendental functions (their last bits differ between libm versions),
// and reductions in a fixed order.

#include <cmath>
#include <cstdint>
#include <cstring>

// Hot loops are compiled several times for different instruction sets and
// picked at load time. Results are identical across the clones: only
// elementwise IEEE operations, no fused multiply-add (-ffp-contract=off).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(MOEBENCH_NO_CLONES)
#define MOEBENCH_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MOEBENCH_CLONES
#endif

namespace moebench::det {

// exp(x) for float, within ~2 ulp on [-87, 88]; 0 below, +inf-like above.
// Cephes-style range reduction and a degree-6 minimax polynomial. Total:
// -inf and +inf are clamped like any large value, and NaN gives NaN (it is
// computed on 0 and replaced at the end: converting NaN to int, as the
// exponent step would, is undefined behaviour).
inline float exp(float x) {
  const float kHi = 88.3762626647949f, kLo = -87.3365447505531f;
  const bool is_nan = !(x == x);
  const float input = x;
  x = is_nan ? 0.0f : x;
  x = x > kHi ? kHi : x;
  x = x < kLo ? kLo : x;
  // Round to nearest with the 1.5 * 2^23 trick: exact IEEE arithmetic, no
  // libm call, vectorisable (|x * log2(e)| < 2^22 here).
  const float kMagic = 12582912.0f;
  float n = (x * 1.44269504088896341f + kMagic) - kMagic;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * (r * r) + r + 1.0f;
  const int32_t e = static_cast<int32_t>(n) + 127;
  const uint32_t bits = static_cast<uint32_t>(e) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return is_nan ? input : y * scale;
}

inline float sigmoid(float x) {
  return 1.0f / (1.0f + det::exp(-x));
}

// cos/sin in double by Taylor series after reduction to [-pi, pi]; used for
// setup-time constants only (rotation angles).
inline double cos(double x) {
  const double kPi = 3.14159265358979323846, kTwoPi = 2 * kPi;
  x = x - kTwoPi * std::floor((x + kPi) / kTwoPi);
  double term = 1.0, sum = 1.0;
  for (int i = 1; i < 30; ++i) {
    term *= -x * x / double((2 * i - 1) * (2 * i));
    sum += term;
  }
  return sum;
}
inline double sin(double x) {
  const double kPi = 3.14159265358979323846, kTwoPi = 2 * kPi;
  x = x - kTwoPi * std::floor((x + kPi) / kTwoPi);
  double term = x, sum = x;
  for (int i = 1; i < 30; ++i) {
    term *= -x * x / double((2 * i) * (2 * i + 1));
    sum += term;
  }
  return sum;
}

// SplitMix64: seeds and setup-time randomness.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
inline uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t s = a ^ (b * 0x9e3779b97f4a7c15ull);
  return splitmix64(s);
}
// Uniform double in [0, 1) with 53 random bits.
inline double uniform01(uint64_t& state) {
  return double(splitmix64(state) >> 11) * 0x1.0p-53;
}
// Approximately standard normal (Irwin-Hall sum of 12 uniforms - 6): exact
// arithmetic in double, so deterministic; tails beyond +-6 are cut.
inline double normal(uint64_t& state) {
  double s = 0;
  for (int i = 0; i < 12; ++i) s += uniform01(state);
  return s - 6.0;
}

}  // namespace moebench::det
