// Every expert kernel this CPU can run against the reference, by normalised
// error on random weights and inputs of many shapes (odd sizes included),
// and the accumulate-with-combine-weight contract.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "core/util/error.h"
#include "kernels/cpu/expert_ffn.h"

namespace moebench {
namespace {

std::vector<float> random_vec(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(from_bf16(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(to_bf16(1.00390625f), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1.0078125 (odd) and 1.015625 (even): up.
  EXPECT_EQ(to_bf16(1.01171875f), 0x3f82);
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(NAN))));
}

TEST(ExpertKernel, EveryKernelMatchesTheReference) {
  const auto ref = make_expert_kernel("reference");
  const std::vector<ExpertShape> shapes = {{64, 32},  {96, 40},   {7, 5},
                                           {130, 71}, {257, 129}, {512, 64}};
  const std::vector<int64_t> token_counts = {1, 2, 3, 4, 5, 9, 17};
  int checked = 0;
  for (const auto& name : expert_kernels_available()) {
    if (name == "reference") continue;
    auto k = make_expert_kernel(name);
    EXPECT_EQ(k->name(), name);
    for (const auto& s : shapes) {
      const Bf16Expert e = Bf16Expert::random(s, uint64_t(s.hidden * 1000 + s.inter));
      for (int64_t T : token_counts) {
        const auto x = random_vec(T * s.hidden, uint64_t(T));
        const auto w = random_vec(T, uint64_t(T) + 7);
        // Accumulates into what is there.
        std::vector<float> want = random_vec(T * s.hidden, 99), got = want;
        ref->run(e, x.data(), T, w.data(), want.data());
        k->run(e, x.data(), T, w.data(), got.data());
        // bf16 activations: a relative error of a few 2^-8 at most.
        EXPECT_LT(normalised_error(got.data(), want.data(), T * s.hidden), 2e-2)
            << name << " " << s.hidden << " x " << s.inter << ", " << T << " tokens";
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, int(std::size(token_counts) * 6));  // at least oneDNN ran on every case
}

TEST(ExpertKernel, ReferenceFollowsTheFormula) {
  // hidden 2, inter 1: gate = [1, 0], up = [0, 2], down = [[3], [-1]];
  // x = [2, 1]: g = 2, u = 2, h = silu(2) * 2; out += 0.5 * [3h, -h].
  Bf16Expert e;
  e.shape = {2, 1};
  e.gate = {to_bf16(1), to_bf16(0)};
  e.up = {to_bf16(0), to_bf16(2)};
  e.down = {to_bf16(3), to_bf16(-1)};
  const float x[2] = {2, 1}, w[1] = {0.5f};
  float out[2] = {1, 1};
  make_expert_kernel("reference")->run(e, x, 1, w, out);
  const double h = 2.0 / (1.0 + std::exp(-2.0)) * 2.0;
  EXPECT_NEAR(out[0], 1 + 0.5 * 3 * h, 1e-5);
  EXPECT_NEAR(out[1], 1 - 0.5 * h, 1e-5);
}

TEST(ExpertKernel, UnknownNameListsTheAvailableOnes) {
  try {
    make_expert_kernel("amx-int3");
    FAIL() << "expected an error";
  } catch (const Error& err) {
    const std::string m = err.what();
    EXPECT_NE(m.find("reference"), std::string::npos) << m;
    EXPECT_NE(m.find("'amx-int3'"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace moebench
