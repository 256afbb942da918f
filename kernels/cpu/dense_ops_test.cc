// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The non-expert kernels (kernels/cpu/dense_ops.h): every implementation
// this CPU can run against plain double-precision loops over the same bf16
// values, on odd shapes (partial row blocks, token tiles, vector tails),
// and the same result with and without a thread pool.
#include "kernels/cpu/dense_ops.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "core/testing/random_vec.h"
#include "kernels/cpu/expert_ffn.h"
#include "kernels/cpu/thread_pool.h"

namespace moebench {
namespace {

using testing::random_vec;

std::vector<DenseIsa> isas_here() {
  std::vector<DenseIsa> v{DenseIsa::kReference};
  const DenseIsa best = best_dense_isa();
  if (best == DenseIsa::kAvx2 || best == DenseIsa::kAvx512Bf16) v.push_back(DenseIsa::kAvx2);
  if (best == DenseIsa::kAvx512Bf16) v.push_back(DenseIsa::kAvx512Bf16);
  return v;
}

// ||got - want|| / ||want||.
double normalised_error(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

TEST(Linear, EveryImplementationMatchesTheLoops) {
  ThreadPool pool(2);
  for (DenseIsa isa : isas_here()) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{37, 100}, {16, 64}, {5, 7}, {130, 33}}) {
      const Linear w = Linear::random(rows, cols, 5, isa);
      for (int64_t tokens : {1, 4, 5, 13, 25}) {
        const auto x = random_vec(tokens * cols, uint64_t(tokens));
        std::vector<double> want(size_t(tokens * rows));
        for (int64_t t = 0; t < tokens; ++t) {
          for (int64_t r = 0; r < rows; ++r) {
            double s = 0;
            for (int64_t c = 0; c < cols; ++c) s += double(w.at(r, c)) * x[size_t(t * cols + c)];
            want[size_t(t * rows + r)] = s;
          }
        }
        std::vector<float> got(want.size(), NAN), alone(want.size(), NAN);
        w.apply(x.data(), tokens, got.data(), &pool);
        w.apply(x.data(), tokens, alone.data(), nullptr);
        // AVX-512 BF16 rounds the activations to bf16 (relative 2^-9 each).
        const double bound = isa == DenseIsa::kAvx512Bf16 ? 1e-2 : 1e-5;
        EXPECT_LT(normalised_error(got, want), bound)
            << to_string(isa) << " " << rows << "x" << cols << " tokens " << tokens;
        EXPECT_EQ(got, alone) << to_string(isa) << ": the thread count changed the result";
      }
    }
  }
}

TEST(Linear, SameWeightsWhateverTheLayout) {
  const Linear a = Linear::random(21, 45, 9, DenseIsa::kReference);
  const Linear b = Linear::random(21, 45, 9, DenseIsa::kAvx512Bf16);  // packed (not run here)
  for (int64_t r = 0; r < 21; ++r) {
    for (int64_t c = 0; c < 45; ++c) ASSERT_EQ(a.at(r, c), b.at(r, c)) << r << "," << c;
  }
}

TEST(RmsNorm, UnitRootMeanSquare) {
  auto x = random_vec(3 * 50, 2);
  rms_norm(x.data(), 3, 50);
  for (int t = 0; t < 3; ++t) {
    double ss = 0;
    for (int i = 0; i < 50; ++i) ss += double(x[size_t(t * 50 + i)]) * x[size_t(t * 50 + i)];
    EXPECT_NEAR(ss / 50, 1.0, 1e-4);
  }
}

TEST(SoftmaxTopK, LargestFirstTiesToTheLowerIndex) {
  const std::vector<float> logits{0.5f, 2.0f, 2.0f, -1.0f, 3.0f, 0.0f};
  std::vector<int32_t> top(3);
  softmax_top_k(logits.data(), 1, 6, 3, top.data());
  EXPECT_EQ(top, (std::vector<int32_t>{4, 1, 2}));
}

// Attention against the definition, for a grouped-query shape (two query
// heads per kv head, separate K and V caches) and the absorbed-latent shape
// (one kv head whose value is the first value_dim entries of its key row),
// three queries of two sequences at different positions.
TEST(Attention, GroupedAndLatentShapesMatchTheDefinition) {
  ThreadPool pool(2);
  struct Case {
    AttentionShape s;
    bool latent;
  };
  const std::vector<Case> cases{
      {{4, 2, 24, 24, 2 * 24, 2 * 24, 0.2f}, false},
      {{3, 1, 40, 33, 40, 40, 0.15f}, true},
  };
  const std::vector<int64_t> pos{4, 5, 0},
      row0{0, 0, 10};  // tokens 0, 1: sequence A; 2: sequence B
  const int64_t T = 3, rows = 16;
  for (const Case& c : cases) {
    const AttentionShape& s = c.s;
    std::vector<uint16_t> k(size_t(rows * s.k_stride)), v(size_t(rows * s.v_stride));
    const auto kf = random_vec(int64_t(k.size()), 1), vf = random_vec(int64_t(v.size()), 2);
    to_bf16_row(kf.data(), int64_t(k.size()), k.data());
    to_bf16_row(vf.data(), int64_t(v.size()), v.data());
    const uint16_t* vp = c.latent ? k.data() : v.data();
    const auto q = random_vec(T * s.heads * s.key_dim, 3);
    std::vector<double> want(size_t(T * s.heads * s.value_dim), 0.0);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t h = 0; h < s.heads; ++h) {
        const int64_t g = h / (s.heads / s.kv_heads);
        std::vector<double> p;
        double mx = -1e300;
        for (int64_t j = 0; j <= pos[size_t(t)]; ++j) {
          double d = 0;
          for (int64_t i = 0; i < s.key_dim; ++i) {
            d += double(q[size_t((t * s.heads + h) * s.key_dim + i)]) *
                 from_bf16(k[size_t((row0[size_t(t)] + j) * s.k_stride + g * s.key_dim + i)]);
          }
          p.push_back(s.scale * d);
          mx = std::max(mx, p.back());
        }
        double sum = 0;
        for (double& x : p) sum += x = std::exp(x - mx);
        for (size_t j = 0; j < p.size(); ++j) {
          for (int64_t i = 0; i < s.value_dim; ++i) {
            want[size_t((t * s.heads + h) * s.value_dim + i)] +=
                p[j] / sum *
                from_bf16(
                    vp[size_t((row0[size_t(t)] + int64_t(j)) * s.v_stride + g * s.value_dim + i)]);
          }
        }
      }
    }
    for (DenseIsa isa : isas_here()) {
      std::vector<float> got(want.size(), NAN), alone(want.size(), NAN);
      attention(s, q.data(), T, pos.data(), row0.data(), k.data(), vp, got.data(), &pool, isa);
      attention(s, q.data(), T, pos.data(), row0.data(), k.data(), vp, alone.data(), nullptr, isa);
      EXPECT_LT(normalised_error(got, want), 1e-5)
          << to_string(isa) << (c.latent ? " latent" : " grouped");
      EXPECT_EQ(got, alone) << to_string(isa);
    }
  }
}

}  // namespace
}  // namespace moebench
