// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Every expert kernel this CPU can run against the reference, by normalised
// error on random weights and inputs of many shapes (odd sizes included),
// and the accumulate-with-combine-weight contract.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/testing/child.h"
#include "core/testing/random_vec.h"
#include "core/util/cpu_info.h"
#include "core/util/error.h"
#include "kernels/cpu/dequant.h"
#include "kernels/cpu/expert_ffn.h"
#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/quant_tokens.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vec_math.h"

namespace moebench {
namespace {

using testing::random_vec;

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(from_bf16(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(to_bf16(1.00390625f), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1.0078125 (odd) and 1.015625 (even): up.
  EXPECT_EQ(to_bf16(1.01171875f), 0x3f82);
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(NAN))));
}

// The vector quantisations this CPU can run, by name.
std::vector<std::pair<std::string, float (*)(const float*, int64_t, int8_t*)>> vector_quantisers() {
  const CpuInfo& c = cpu_info();
  std::vector<std::pair<std::string, float (*)(const float*, int64_t, int8_t*)>> v;
  if (c.avx512f && c.avx512bw) v.emplace_back("avx512", quantise_activations_avx512);
  if (c.avx2) v.emplace_back("avx2", quantise_activations_avx2);
  return v;
}

// The int8/int4 kernels' activations: the AVX-512 and AVX2 quantisations
// give the scalar one's int8 values and scale bit for bit, halfway cases
// (away from zero, as lround) and lengths that are not a multiple of the
// vector included.
TEST(QuantiseActivations, VectorCodeGivesTheScalarValues) {
  const auto quantisers = vector_quantisers();
  if (quantisers.empty()) GTEST_SKIP() << "neither AVX-512 (F, BW) nor AVX2 here";
  std::vector<std::vector<float>> rows;
  for (int64_t n : {1, 5, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100, 2048, 7168}) {
    rows.push_back(random_vec(n, uint64_t(n)));
  }
  // max |x| = 127, so the scale is exactly 1 and x / s = x: every k + 0.5
  // is a halfway case, and values one ulp either side of it are not.
  std::vector<float> ties = {127.0f,
                             -127.0f,
                             0.5f,
                             -0.5f,
                             1.5f,
                             -1.5f,
                             2.5f,
                             -2.5f,
                             126.5f,
                             -126.5f,
                             0.0f,
                             -0.0f,
                             std::nextafter(0.5f, 0.0f),
                             std::nextafter(0.5f, 1.0f),
                             std::nextafter(-2.5f, 0.0f),
                             std::nextafter(-2.5f, -3.0f),
                             3.0f};
  rows.push_back(ties);
  rows.push_back(std::vector<float>(37, 0.0f));  // all zero: scale 1, every value 0
  for (const auto& [name, quantise] : quantisers) {
    for (const auto& x : rows) {
      const int64_t n = int64_t(x.size());
      std::vector<int8_t> want(static_cast<size_t>(n)),
          got(static_cast<size_t>(n) + 16, int8_t(99));
      const float sw = quantise_activations(x.data(), n, want.data());
      const float sg = quantise(x.data(), n, got.data());
      EXPECT_EQ(sg, sw) << name << ", n = " << n;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[size_t(i)], want[size_t(i)])
            << name << ", n = " << n << ", value " << x[size_t(i)];
      }
      for (size_t i = size_t(n); i < got.size(); ++i) {
        ASSERT_EQ(got[i], 99) << name << " wrote past the row's end, n = " << n;
      }
    }
    // The halfway cases themselves, as lround gives them.
    std::vector<int8_t> q(ties.size());
    quantise(ties.data(), int64_t(ties.size()), q.data());
    EXPECT_EQ(q[2], 1) << name;
    EXPECT_EQ(q[3], -1) << name;
    EXPECT_EQ(q[6], 3) << name;
    EXPECT_EQ(q[7], -3) << name;
    EXPECT_EQ(q[8], 127) << name;
    EXPECT_EQ(q[12], 0) << name;
    EXPECT_EQ(q[13], 1) << name;
  }
}

// The packed int8/int4 kernels' tokens: per group the start value is
// -offset x the sum of the group's int8 values, the padding columns zero;
// the same from the scalar, AVX2 and AVX-512 code.
TEST(QuantiseActivations, TokensCarryEachGroupsOffsetSum) {
  const CpuInfo& c = cpu_info();
  std::vector<QTokens::Isa> isas = {QTokens::Isa::kScalar, QTokens::Isa::kAuto};
  if (c.avx2) isas.push_back(QTokens::Isa::kAvx2);
  if (c.avx512f && c.avx512bw) isas.push_back(QTokens::Isa::kAvx512);
  const int64_t tokens = 3, n = 150;  // 3 groups, the last with 22 columns
  const auto x = random_vec(tokens * n, 7);
  for (QTokens::Isa isa : isas) {
    QTokens qt;
    qt.set(x.data(), tokens, n, 8, isa);
    ASSERT_EQ(qt.groups, 3);
    for (int64_t t = 0; t < tokens; ++t) {
      std::vector<int8_t> want(static_cast<size_t>(n));
      EXPECT_EQ(qt.scale[size_t(t)], quantise_activations(x.data() + t * n, n, want.data()));
      for (int64_t g = 0; g < 3; ++g) {
        int sum = 0;
        for (int64_t i = 0; i < 64; ++i) {
          const int64_t col = g * 64 + i;
          const int v = qt.q[size_t(t * 192 + col)];
          EXPECT_EQ(v, col < n ? want[size_t(col)] : 0)
              << "isa " << int(isa) << ", token " << t << ", column " << col;
          sum += v;
        }
        EXPECT_EQ(qt.start[size_t(t * 3 + g)], -8 * sum)
            << "isa " << int(isa) << ", token " << t << ", group " << g;
      }
    }
  }
}

// avx512-bf16-gemm's and the tile kernels' activations: to_bf16's values
// (normal numbers), the columns past n untouched.
TEST(Bf16, RowsToBf16GivesToBf16sValues) {
  const CpuInfo& c = cpu_info();
  if (!(c.avx512f && c.avx512bw && c.avx512vl && c.avx512_bf16))
    GTEST_SKIP() << "no AVX-512 BF16 here";
  const int64_t tokens = 2, n = 37, len = 40;
  auto x = random_vec(tokens * n, 3);
  x[5] = 1.00390625f;  // a tie: to even
  std::vector<uint16_t> out(size_t(tokens * len), 0xabcd);
  vec::rows_to_bf16(x.data(), tokens, n, len, out.data());
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t k = 0; k < len; ++k) {
      const uint16_t want = k < n ? to_bf16(x[size_t(t * n + k)]) : uint16_t(0xabcd);
      EXPECT_EQ(out[size_t(t * len + k)], want) << "token " << t << ", column " << k;
    }
  }
}

TEST(ExpertKernel, EveryKernelMatchesTheReference) {
  const auto ref = make_expert_kernel("reference");
  const std::vector<ExpertShape> shapes = {{64, 32},  {96, 40},   {7, 5},
                                           {130, 71}, {257, 129}, {512, 64}};
  const std::vector<int64_t> token_counts = {1, 2, 3, 4, 5, 9, 17, 29, 40};
  std::map<WeightDtype, int> checked;
  for (const auto& name : expert_kernels_available()) {
    if (name == "reference") continue;
    auto k = make_expert_kernel(name);
    EXPECT_EQ(k->name(), name);
    for (WeightDtype dt : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
      if (!k->supports(dt)) continue;
      for (const auto& s : shapes) {
        ExpertWeights e = ExpertWeights::random(s, dt, uint64_t(s.hidden * 1000 + s.inter));
        if (k->needs_packed()) e.pack();
        for (int64_t T : token_counts) {
          const auto x = random_vec(T * s.hidden, uint64_t(T));
          const auto w = random_vec(T, uint64_t(T) + 7);
          // Accumulates into what is there.
          std::vector<float> want = random_vec(T * s.hidden, 99), got = want;
          ref->run(e, x.data(), T, w.data(), want.data());
          k->run(e, x.data(), T, w.data(), got.data());
          // bf16 activations: a relative error of a few 2^-8 at most; int8
          // activations (one scale per token): about as much. The weights
          // are the same on both sides (the reference dequantises them).
          EXPECT_LT(normalised_error(got.data(), want.data(), T * s.hidden), 2e-2)
              << name << " " << dtype_name(dt) << " " << s.hidden << " x " << s.inter << ", " << T
              << " tokens";
          ++checked[dt];
        }
      }
    }
  }
  // Where the CPU has AVX2 and FMA (avx2-gemm) or AVX-512 VNNI, every case
  // of every dtype ran on at least one kernel; bf16 also where oneDNN runs.
  const int cases = int(std::size(token_counts) * shapes.size());
  const auto avail = expert_kernels_available();
  const auto has = [&](const char* k) {
    return std::find(avail.begin(), avail.end(), k) != avail.end();
  };
  if (has("avx2-gemm") || has("onednn")) {
    EXPECT_GE(checked[WeightDtype::kBf16], cases);
  }
  if (has("avx2-gemm") || has("avx512-vnni")) {
    EXPECT_GE(checked[WeightDtype::kInt8], cases);
    EXPECT_GE(checked[WeightDtype::kInt4], cases);
  }
  const CpuInfo& c = cpu_info();
  EXPECT_EQ(has("avx2-gemm"), c.avx2 && c.fma);
}

// the models' own expert shapes (DeepSeek-V2-Lite 2048 x 1408,
// Qwen3-30B-A3B 2048 x 768: several of the tile kernels' 512-column chunks,
// whose sums are carried across chunks), token counts on both sides of the
// register tiles (12 and 16 tokens), and a bound from the activations'
// rounding rather than a fixed 2e-2. A kernel rounds its input x and its
// intermediate h = silu(gate x) * (up x) once each, either to bf16
// (relative error at most 2^-9 per value) or to int8 with one scale per
// token (error uniform in +-max|v| / 254, root mean square max|v| / (127
// sqrt(12)), i.e. kappa / (127 sqrt(12)) of the values' rms, kappa their
// peak-to-rms ratio: sqrt(3) for the uniform x here, 5.4-13.9 for h at
// 2048 x 1408 with these random weights, measured over 20 tokens with
// numpy). With random weights the output's normalised error follows the
// activations'. Bounds: bf16 4 sqrt(2) 2^-9 = 1.1e-2 (seen: at most
// 2.7e-3 on an AVX-512 VM); int8 2 (14 + sqrt(3)) / (127 sqrt(12)) =
// 7.2e-2 (seen: 1.8e-2-2.0e-2, the intermediate's rounding). Every case's
// error is recorded (gtest's XML output).
TEST(ExpertKernel, EveryKernelMatchesTheReferenceAtTheModelsShapes) {
  const auto ref = make_expert_kernel("reference");
  const std::vector<ExpertShape> shapes = {{2048, 1408}, {2048, 768}};
  const std::vector<int64_t> token_counts = {1, 4, 13, 17};
  for (WeightDtype dt : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
    for (const auto& s : shapes) {
      ExpertWeights e = ExpertWeights::random(s, dt, uint64_t(s.inter));
      ExpertWeights packed = e;
      packed.pack();
      for (int64_t T : token_counts) {
        const auto x = random_vec(T * s.hidden, uint64_t(T) + 3);
        const std::vector<float> w(size_t(T), 1.0f);
        std::vector<float> want(size_t(T * s.hidden), 0.0f);
        ref->run(e, x.data(), T, w.data(), want.data());
        for (const auto& name : expert_kernels_available()) {
          if (name == "reference") continue;
          auto k = make_expert_kernel(name);
          if (!k->supports(dt)) continue;
          std::vector<float> got(want.size(), 0.0f);
          k->run(k->needs_packed() ? packed : e, x.data(), T, w.data(), got.data());
          const double err = normalised_error(got.data(), want.data(), T * s.hidden);
          // Integer activations where the kernel's dot products are int8 (VNNI, vpmaddubsw); bf16
          // where the kernel rounds to bf16 (the bf16 kernels, and amx-quant's tiles above its
          // switch).
          const bool tiles = name == "amx-quant" ||
                             (name.rfind("avx512-amx-quant", 0) == 0 && T > kAmxQuantSwitchTokens);
          const bool int8_acts = dt != WeightDtype::kBf16 && !tiles;
          const double bound = int8_acts ? 2 * (14 + std::sqrt(3.0)) / (127 * std::sqrt(12.0))
                                         : 4 * std::sqrt(2.0) * std::ldexp(1.0, -9);
          EXPECT_LT(err, bound) << name << " " << dtype_name(dt) << " " << s.hidden << " x "
                                << s.inter << ", " << T << " tokens";
          RecordProperty(fmt::format("{}_{}_{}x{}_{}", name, dtype_name(dt), s.hidden, s.inter, T),
                         fmt::format("{:.2e}", err));
        }
      }
    }
  }
}

TEST(ThreadPool, RunsEveryTaskOnceAndRethrows) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, [&](int64_t i) { hits[size_t(i)].fetch_add(1); });
      for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(hits[size_t(i)].load(), 1) << threads << " " << n << " " << i;
    }
    std::atomic<int> ran{0};
    EXPECT_THROW(pool.parallel_for(64,
                                   [&](int64_t i) {
                                     ran.fetch_add(1);
                                     if (i == 5) throw Error("task 5 failed");
                                   }),
                 Error);
    EXPECT_EQ(ran.load(), 64);  // the other tasks still ran
    // The pool stays usable after an error.
    std::atomic<int64_t> sum{0};
    pool.parallel_for(10, [&](int64_t i) { sum.fetch_add(i); });
    EXPECT_EQ(sum.load(), 45);
  }
  std::vector<int64_t> seen;
  parallel_ranges(nullptr, 10, 4, [&](int64_t a, int64_t b) {
    seen.push_back(a);
    seen.push_back(b);
  });
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 4, 4, 8, 8, 10}));
}

// 1,024 threads under an address-space limit once stopped at 962 and left
// the process asleep for ever (a joinable std::thread destroyed in a failed
// constructor). A thread the system refuses is an Error, the ones started are
// joined. Run in a child: the limit would bind the whole test process.
TEST(ThreadPool, AThreadTheSystemRefusesIsAnErrorNotAHang) {
  EXPECT_EQ(
      testing::exit_code_in_child([] {
        // Room for a few 8 MiB thread stacks above what the process maps now.
        if (!testing::limit_address_space_above_now(64ull << 20)) return 3;
        try {
          ThreadPool pool(256);
          return 4;  // every thread started: the limit did not bind
        } catch (const Error& e) {
          const std::string what = e.what();
          return what.find("expected to start 256 threads, found that the system refused") == 0 ? 0
                                                                                                : 5;
        }
      }),
      0);
}

TEST(ThreadPool, BlockTilesVisitEveryBlockAndTileOnce) {
  // The packed kernels' loop: every (row block, token) pair exactly once,
  // in full tiles of 6 tokens and one shorter tile at the end.
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t blocks : {0, 1, 5, 33, 130}) {
      for (int64_t tokens : {1, 4, 7, 13}) {
        std::vector<std::atomic<int>> hits(size_t(blocks * tokens));
        std::atomic<int> bad{0};
        vec::for_block_tiles<6>(&pool, blocks, tokens, [&]<int NT>(int64_t b, int64_t t0) {
          if (NT < 1 || NT > 6 || t0 % 6 != 0 || t0 + NT > tokens ||
              (t0 + 6 <= tokens && NT != 6)) {
            bad.fetch_add(1);
          }
          for (int t = 0; t < NT; ++t) hits[size_t(b * tokens + t0 + t)].fetch_add(1);
        });
        EXPECT_EQ(bad.load(), 0) << threads << " " << blocks << " " << tokens;
        for (int64_t i = 0; i < blocks * tokens; ++i)
          ASSERT_EQ(hits[size_t(i)].load(), 1) << threads << " " << blocks << " " << tokens;
      }
    }
  }
  // Without a pool: one pass on the caller, blocks in order.
  std::vector<int64_t> order;
  vec::for_block_tiles<6>(nullptr, 5, 2, [&]<int NT>(int64_t b, int64_t) { order.push_back(b); });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(ThreadPool, WorkersThatSpinAndWorkersThatSleepBothSeeEveryCall) {
  // Calls back to back (the workers still polling), calls after a pause
  // longer than the poll (the workers asleep on the condition variable),
  // and a pool destroyed while its workers poll: every task once, no call
  // lost or run twice.
  for (int spin_us : {0, 50, ThreadPool::kDefaultSpinUs}) {
    for (int threads : {2, 4}) {
      ThreadPool pool(threads, spin_us);
      EXPECT_EQ(pool.spin_us(), spin_us);
      int64_t expected = 0;
      std::atomic<int64_t> total{0};
      for (int call = 0; call < 300; ++call) {
        const int64_t n = 1 + call % 9;
        pool.parallel_for(n, [&](int64_t i) {
          // Long enough that a worker is still in a task when the caller
          // runs out of tasks to take.
          const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
          while (std::chrono::steady_clock::now() < until) {
          }
          total.fetch_add(i + 1);
        });
        expected += n * (n + 1) / 2;
        ASSERT_EQ(total.load(), expected)
            << spin_us << " us, " << threads << " threads, call " << call;
        if (call % 50 == 49)
          std::this_thread::sleep_for(std::chrono::microseconds(3 * spin_us + 500));
      }
    }
  }
  EXPECT_EQ(ThreadPool(2, -5).spin_us(), 0);  // a negative poll is none
}

TEST(ExpertKernel, ThreadsDoNotChangeTheResult) {
  // Each thread takes whole rows, so any number of threads gives the same
  // bits as one.
  ThreadPool two(2), three(3);
  for (const auto& name : expert_kernels_available()) {
    if (name == "reference" || name == "onednn") continue;
    auto k = make_expert_kernel(name);
    for (WeightDtype dt : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
      if (!k->supports(dt)) continue;
      for (ExpertShape s : {ExpertShape{257, 129}, ExpertShape{512, 96}}) {
        ExpertWeights e = ExpertWeights::random(s, dt, 3);
        if (k->needs_packed()) e.pack();
        for (int64_t T : {1, 5, 37}) {
          const auto x = random_vec(T * s.hidden, 11), w = random_vec(T, 12);
          std::vector<float> one(size_t(T * s.hidden), 0.0f), a = one, b = one;
          k->run(e, x.data(), T, w.data(), one.data());
          k->run(e, x.data(), T, w.data(), a.data(), &two);
          k->run(e, x.data(), T, w.data(), b.data(), &three);
          EXPECT_EQ(one, a) << name << " " << dtype_name(dt) << " " << T;
          EXPECT_EQ(one, b) << name << " " << dtype_name(dt) << " " << T;
        }
      }
    }
  }
}

// Threads of this process (Linux: the entries of /proc/self/task).
int64_t process_threads() {
  int64_t n = 0;
  for ([[maybe_unused]] const auto& d : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// oneDNN runs on OpenMP threads; the kernel gives it the pool's thread count
// (1 without a pool, the caller only) and restores the caller's OpenMP
// setting. Observed as threads of this process (ctest runs each test in its
// own): with no pool no OpenMP worker starts (before, oneDNN took every
// OpenMP thread whatever the pool); with a pool of 2, one does, beside the
// pool's own worker.
TEST(ExpertKernel, OneDnnTakesThePoolsThreadCount) {
  if (!onednn_bf16_available())
    GTEST_SKIP() << "oneDNN has no bf16 matmul on this CPU (2.6 needs AVX-512)";
  auto k = make_expert_kernel("onednn");
  const int saved = omp_get_max_threads();
  const ExpertShape s{1024, 512};
  const ExpertWeights e = ExpertWeights::random(s, WeightDtype::kBf16, 5);
  const int64_t T = 64;
  const auto x = random_vec(T * s.hidden, 13), w = random_vec(T, 14);
  std::vector<float> one(size_t(T * s.hidden), 0.0f), two_out = one;
  const int64_t before = process_threads();
  k->run(e, x.data(), T, w.data(), one.data());
  EXPECT_EQ(omp_get_max_threads(), saved);
  EXPECT_EQ(process_threads(), before) << "oneDNN started OpenMP workers for a task without a pool";
  ThreadPool two(2);
  const int64_t with_pool = process_threads();
  k->run(e, x.data(), T, w.data(), two_out.data(), &two);
  EXPECT_EQ(omp_get_max_threads(), saved);
  EXPECT_EQ(process_threads(), with_pool + 1) << "expected one OpenMP worker for a pool of 2";
  double diff = 0, norm = 0;
  for (size_t i = 0; i < one.size(); ++i) {
    diff += double(one[i] - two_out[i]) * double(one[i] - two_out[i]);
    norm += double(one[i]) * double(one[i]);
  }
  EXPECT_LT(std::sqrt(diff / norm), 1e-5);  // the same result on 1 and 2 threads
}

TEST(ExpertKernel, QuantisedWeightsRoundTrip) {
  // Codes and scales reproduce the values within half a step of the group,
  // padding decodes to zero, and the int4 nibble order is the documented one.
  std::vector<float> v(3 * 130);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  for (auto& x : v) x = d(rng);
  for (WeightDtype dt : {WeightDtype::kInt8, WeightDtype::kInt4}) {
    const QuantMatrix m = QuantMatrix::quantise(v, 3, 130, dt);
    EXPECT_EQ(m.groups, 3);
    EXPECT_EQ(m.row_bytes, dt == WeightDtype::kInt8 ? 192 : 96);
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t c = 0; c < 130; ++c) {
        const float step = m.scale[size_t(r * m.groups + c / kQuantGroup)];
        EXPECT_LE(std::abs(m.value(r, c) - v[size_t(r * 130 + c)]), 0.5f * step + 1e-6f)
            << dtype_name(dt) << " " << r << "," << c;
      }
      for (int64_t c = 130; c < m.groups * kQuantGroup; ++c) EXPECT_EQ(m.code(r, c), 0);
    }
  }
  // int4: weight 1 of a group sits in byte 1's low nibble, weight 33 in its high one.
  std::vector<float> one(64, 0.0f);
  one[1] = 7.0f;
  one[33] = -7.0f;
  const QuantMatrix q = QuantMatrix::quantise(one, 1, 64, WeightDtype::kInt4);
  EXPECT_EQ(q.codes[1], uint8_t((1 << 4) | 15));  // -7 + 8 = 1 high, 7 + 8 = 15 low
  EXPECT_FLOAT_EQ(q.scale[0], 1.0f);
}

TEST(ExpertKernel, RejectsWeightsItCannotRun) {
  const ExpertWeights e = ExpertWeights::random({64, 32}, WeightDtype::kInt4, 1);
  std::vector<float> x(64, 0.5f), w(1, 1.0f), out(64, 0.0f);
  // A bf16-only kernel (oneDNN, or avx512-bf16) refuses int4 by name; a CPU
  // with neither has no kernel to refuse it.
  for (const char* name : {"onednn", "avx512-bf16"}) {
    const auto avail = expert_kernels_available();
    if (std::find(avail.begin(), avail.end(), name) == avail.end()) continue;
    auto k = make_expert_kernel(name);
    try {
      k->run(e, x.data(), 1, w.data(), out.data());
      FAIL() << name << ": expected an error";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find("expected weights in bf16, found int4"),
                std::string::npos)
          << err.what();
    }
  }
  // A kernel that reads packed weights refuses unpacked ones, by name.
  for (const auto& name : expert_kernels_available()) {
    auto pk = make_expert_kernel(name);
    if (!pk->needs_packed()) continue;
    const WeightDtype dt =
        pk->supports(WeightDtype::kBf16) ? WeightDtype::kBf16 : WeightDtype::kInt8;
    const ExpertWeights unpacked = ExpertWeights::random({64, 32}, dt, 1);
    try {
      pk->run(unpacked, x.data(), 1, w.data(), out.data());
      FAIL() << name << ": expected an error";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what())
                    .find("expert kernel " + name + ": expected weights packed at load"),
                std::string::npos)
          << err.what();
    }
  }
  EXPECT_THROW(parse_weight_dtype("fp8"), Error);
  EXPECT_EQ(parse_weight_dtype("int4"), WeightDtype::kInt4);
}

TEST(ExpertKernel, ReferenceFollowsTheFormula) {
  // hidden 2, inter 1: gate = [1, 0], up = [0, 2], down = [[3], [-1]];
  // x = [2, 1]: g = 2, u = 2, h = silu(2) * 2; out += 0.5 * [3h, -h].
  ExpertWeights e;
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

// A switching kernel gives each token count up to `last_below` to `below`
// and larger ones to `above`: bit for bit what that kernel computes.
void expect_switch_hands_off(ExpertKernel& sw, const ExpertWeights& e,
                             std::initializer_list<int64_t> counts, int64_t last_below,
                             const std::string& below, const std::string& above) {
  const int64_t H = e.shape.hidden;
  for (int64_t T : counts) {
    const auto x = random_vec(T * H, 5), w = random_vec(T, 6);
    std::vector<float> a(size_t(T * H), 0.0f), b = a;
    sw.run(e, x.data(), T, w.data(), a.data());
    make_expert_kernel(T <= last_below ? below : above)->run(e, x.data(), T, w.data(), b.data());
    EXPECT_EQ(a, b) << sw.name() << " at " << T << " tokens";
  }
}

TEST(ExpertKernel, HybridSwitchesAtItsTokenCount) {
  const auto avail = expert_kernels_available();
  if (std::find(avail.begin(), avail.end(), "hybrid") == avail.end())
    GTEST_SKIP() << "no AVX-512 BF16 here";
  // hybrid:2 gives 1-2 tokens to avx512-bf16 and 3 to oneDNN: bit for bit
  // what each of them computes.
  const ExpertWeights e = ExpertWeights::random({130, 71}, WeightDtype::kBf16, 9);
  auto hybrid = make_expert_kernel("hybrid:2");
  EXPECT_EQ(hybrid->name(), "hybrid:2");
  expect_switch_hands_off(*hybrid, e, {1, 2, 3}, 2, "avx512-bf16", "onednn");
  EXPECT_THROW(make_expert_kernel("hybrid:x"), Error);
  EXPECT_THROW(make_expert_kernel("hybrid:-1"), Error);
  EXPECT_THROW(
      make_expert_kernel("hybrid:2")
          ->run(ExpertWeights::random({64, 32}, WeightDtype::kInt8, 1), random_vec(64, 1).data(), 1,
                random_vec(1, 2).data(), std::vector<float>(64).data()),
      Error);
}

TEST(ExpertKernel, AmxSwitchGivesFewTokensToTheVectorKernel) {
  const auto avail = expert_kernels_available();
  if (std::find(avail.begin(), avail.end(), "amx-bf16") == avail.end())
    GTEST_SKIP() << "no AMX here (or the OS does not grant the tile state)";
  // avx512-amx-bf16:3 gives 1-3 tokens to avx512-bf16-gemm and 4 to the
  // tiles: bit for bit what each of them computes.
  ExpertWeights e = ExpertWeights::random({130, 71}, WeightDtype::kBf16, 9);
  e.pack();
  auto sw = make_expert_kernel("avx512-amx-bf16:3");
  EXPECT_EQ(sw->name(), "avx512-amx-bf16:3");
  EXPECT_TRUE(sw->needs_packed());
  expect_switch_hands_off(*sw, e, {1, 3, 4, 33}, 3, "avx512-bf16-gemm", "amx-bf16");
  EXPECT_THROW(make_expert_kernel("avx512-amx-bf16:x"), Error);
  EXPECT_EQ(make_expert_kernel("avx512-amx-bf16")->name(), "avx512-amx-bf16");
}

TEST(ExpertKernel, AmxQuantSwitchGivesFewTokensToTheVnniKernel) {
  const auto avail = expert_kernels_available();
  if (std::find(avail.begin(), avail.end(), "amx-quant") == avail.end())
    GTEST_SKIP() << "no AMX-BF16 here (or the OS does not grant the tile state)";
  for (WeightDtype dt : {WeightDtype::kInt8, WeightDtype::kInt4}) {
    ExpertWeights e = ExpertWeights::random({130, 71}, dt, 9);
    e.pack();
    auto sw = make_expert_kernel("avx512-amx-quant:3");
    EXPECT_TRUE(sw->supports(dt));
    EXPECT_FALSE(sw->supports(WeightDtype::kBf16));
    expect_switch_hands_off(*sw, e, {1, 3, 4, 33}, 3, "avx512-vnni-gemm", "amx-quant");
  }
}

// amx-int8 (TDPBSUD on the packed codes, int4 unpacked per task)
// performs avx512-vnni-gemm's operations in the same order on the same
// quantised activations (int32 sums per group are exact, whatever order the
// tiles add them in), so its output equals that kernel's bit for bit: odd
// widths (one partial group, a partial last row block, a lone last down row
// block), the models' shapes (many groups), token counts on both sides of
// the 16-token tiles and the 32-token blocks, 1 and 3 threads, and output
// that already holds values (the kernels add to it).
TEST(ExpertKernel, AmxInt8EqualsTheVnniGemmKernelBitForBit) {
  const auto avail = expert_kernels_available();
  if (std::find(avail.begin(), avail.end(), "amx-int8") == avail.end())
    GTEST_SKIP() << "no AMX-INT8 here (or the OS does not grant the tile state)";
  const auto tiles = make_expert_kernel("amx-int8");
  const auto vnni = make_expert_kernel("avx512-vnni-gemm");
  EXPECT_TRUE(tiles->needs_packed());
  EXPECT_FALSE(tiles->supports(WeightDtype::kBf16));
  ThreadPool pool(3);
  const std::vector<ExpertShape> shapes = {{130, 71}, {64, 16}, {257, 129}, {2048, 1408}};
  for (WeightDtype dt : {WeightDtype::kInt8, WeightDtype::kInt4}) {
    for (const auto& s : shapes) {
      ExpertWeights e = ExpertWeights::random(s, dt, uint64_t(s.hidden + s.inter));
      e.pack();
      const bool big = s.hidden > 1000;
      for (int64_t T : big ? std::vector<int64_t>{1, 17, 40}
                           : std::vector<int64_t>{1, 5, 16, 17, 31, 32, 33, 70}) {
        const auto x = random_vec(T * s.hidden, uint64_t(T) + 11);
        const auto w = random_vec(T, uint64_t(T) + 12);
        const auto init = random_vec(T * s.hidden, uint64_t(T) + 13);
        std::vector<float> want = init, got = init, got_pool = init;
        vnni->run(e, x.data(), T, w.data(), want.data());
        tiles->run(e, x.data(), T, w.data(), got.data());
        tiles->run(e, x.data(), T, w.data(), got_pool.data(), &pool);
        int64_t differ = 0, differ_pool = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          differ += std::memcmp(&want[i], &got[i], sizeof(float)) != 0;
          differ_pool += std::memcmp(&want[i], &got_pool[i], sizeof(float)) != 0;
        }
        EXPECT_EQ(differ, 0) << dtype_name(dt) << " " << s.hidden << " x " << s.inter << ", " << T
                             << " tokens";
        EXPECT_EQ(differ_pool, 0) << dtype_name(dt) << " " << s.hidden << " x " << s.inter << ", "
                                  << T << " tokens, 3 threads";
      }
    }
  }
}

TEST(ExpertKernel, AmxInt8SwitchGivesFewTokensToTheVnniKernel) {
  const auto avail = expert_kernels_available();
  if (std::find(avail.begin(), avail.end(), "amx-int8") == avail.end())
    GTEST_SKIP() << "no AMX-INT8 here (or the OS does not grant the tile state)";
  for (WeightDtype dt : {WeightDtype::kInt8, WeightDtype::kInt4}) {
    ExpertWeights e = ExpertWeights::random({130, 71}, dt, 9);
    e.pack();
    auto sw = make_expert_kernel("avx512-amx-int8:3");
    EXPECT_TRUE(sw->supports(dt));
    EXPECT_FALSE(sw->supports(WeightDtype::kBf16));
    expect_switch_hands_off(*sw, e, {1, 3, 4, 33}, 3, "avx512-vnni-gemm", "amx-int8");
  }
  EXPECT_EQ(make_expert_kernel("avx512-amx-int8")->name(), "avx512-amx-int8");
  EXPECT_THROW(make_expert_kernel("avx512-amx-int8:x"), Error);
}

// The dequantised layout amx-quant's tiles read: every weight of every row
// block equal to to_bf16(QuantMatrix::value) at its place, padding zero.
TEST(Dequant, RowBlocksAreTheValuesInThePackedBf16Layout) {
  const CpuInfo& c = cpu_info();
  if (!(c.avx512f && c.avx512bw && c.avx512vl && c.avx512_bf16))
    GTEST_SKIP() << "no AVX-512 BF16 here";
  for (WeightDtype dt : {WeightDtype::kInt8, WeightDtype::kInt4}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{37, 130}, {16, 64}, {5, 7}, {48, 200}}) {
      std::vector<float> v = random_vec(rows * cols, uint64_t(rows * cols));
      QuantMatrix m = QuantMatrix::quantise(v, rows, cols, dt);
      m.pack();
      const int64_t blocks = (rows + 15) / 16, pairs = dequant_pairs(m);
      ASSERT_EQ(pairs, (cols + 63) / 64 * 32);
      // From row block 1 on (and all of them), to check the offsets.
      for (int64_t rb0 : {int64_t(0), std::min<int64_t>(1, blocks - 1)}) {
        std::vector<uint16_t> out(size_t((blocks - rb0) * pairs * 32), 0xffff);
        dequantise_row_blocks(m, rb0, blocks, out.data());
        int64_t wrong = 0;
        for (int64_t rb = rb0; rb < blocks; ++rb) {
          for (int64_t p = 0; p < pairs; ++p) {
            for (int64_t i = 0; i < 16; ++i) {
              for (int64_t k = 0; k < 2; ++k) {
                const int64_t r = rb * 16 + i, col = 2 * p + k;
                const uint16_t want = r < rows && col < cols ? to_bf16(m.value(r, col)) : 0;
                const uint16_t got = out[size_t(((rb - rb0) * pairs + p) * 32 + i * 2 + k)];
                // +0 and -0 are the same weight.
                if (got != want && !(from_bf16(got) == 0.0f && from_bf16(want) == 0.0f)) ++wrong;
              }
            }
          }
        }
        EXPECT_EQ(wrong, 0) << dtype_name(dt) << " " << rows << " x " << cols << " from row block "
                            << rb0;
      }
    }
  }
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
