// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The GPU expert path (label gpu; skipped where no GPU is visible): its
// output against the CPU reference, and the same output whichever way the
// weights reached their slot (resident, loaded on demand right before the
// compute, prefetched while another expert computed, a slot reused).
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "core/testing/random_vec.h"
#include "core/util/error.h"
#include "kernels/cuda/gpu_experts.h"

namespace moebench::gpu {
namespace {

using testing::random_vec;

#define REQUIRE_GPU() \
  if (!available()) GTEST_SKIP() << describe_device()

std::shared_ptr<uint8_t> blob_of(const ExpertBlob& b, const ExpertWeights& e) {
  auto p = pinned_bytes(b.bytes);
  b.write(e, p.get());
  return p;
}

// One expert on the GPU from slot `slot` after loading it there.
std::vector<float> run_gpu(GpuExperts& g, int slot, const uint8_t* blob,
                           const std::vector<float>& x, const std::vector<float>& w,
                           std::vector<float> out, int64_t T) {
  g.load(slot, blob);
  g.put_activations(x.data(), w.data(), out.data(), T);
  g.compute(slot, T);
  g.get_output(out.data(), T);
  return out;
}

// The bound the CPU kernels are held to (kernels/cpu/expert_ffn_test.cc):
// bf16 activations give a relative error of a few 2^-8 at most.
constexpr double kBound = 2e-2;

TEST(GpuExperts, MatchesTheCpuReferenceForEveryDtype) {
  REQUIRE_GPU();
  const auto ref = make_expert_kernel("reference");
  const std::vector<ExpertShape> shapes = {{64, 32}, {130, 71}, {2048, 1408}};
  for (WeightDtype d : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
    for (const auto& s : shapes) {
      const ExpertWeights e = ExpertWeights::random(s, d, uint64_t(s.hidden + s.inter));
      GpuExperts g({s, d, 2, 64});
      const auto blob = blob_of(g.blob(), e);
      // 1 and 2 tokens take the decode path where the shape allows
      // (2048 x 1408), so do 5 and 8 for int8 and int4; 17 and 64 the GEMM path.
      EXPECT_EQ(uses_decode_path(g.blob(), 2), s.inter % 64 == 0 && s.hidden % 64 == 0);
      EXPECT_FALSE(uses_decode_path(g.blob(), 17));
      for (int64_t T : {1, 2, 5, 8, 17, 64}) {
        const auto x = random_vec(T * s.hidden, uint64_t(T));
        const auto w = random_vec(T, uint64_t(T) + 7);
        std::vector<float> want = random_vec(T * s.hidden, 99);
        const auto got = run_gpu(g, int(T % 2), blob.get(), x, w, want, T);
        ref->run(e, x.data(), T, w.data(), want.data());
        EXPECT_LT(normalised_error(got.data(), want.data(), T * s.hidden), kBound)
            << dtype_name(d) << " " << s.hidden << " x " << s.inter << ", " << T << " tokens";
      }
    }
  }
}

TEST(GpuExperts, OutputDoesNotDependOnHowTheWeightsArrived) {
  REQUIRE_GPU();
  // 3 tokens take the decode path, 12 the GEMM path.
  for (int64_t T : {3, 12})
    for (WeightDtype d : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
      const ExpertShape s{512, 384};
      const ExpertWeights a = ExpertWeights::random(s, d, 1), b = ExpertWeights::random(s, d, 2);
      GpuExperts g({s, d, 3, T});
      const auto ba = blob_of(g.blob(), a), bb = blob_of(g.blob(), b);
      const auto x = random_vec(T * s.hidden, 3), w = random_vec(T, 4);
      const std::vector<float> zero(size_t(T * s.hidden), 0.0f);
      // Resident: loaded, synchronised, computed later.
      g.load(0, ba.get());
      g.synchronize();
      std::vector<float> resident(zero.size());
      g.put_activations(x.data(), w.data(), zero.data(), T);
      g.compute(0, T);
      g.get_output(resident.data(), T);
      // On demand: loaded and computed with no synchronisation between.
      const auto on_demand = run_gpu(g, 1, ba.get(), x, w, zero, T);
      EXPECT_EQ(on_demand, resident) << dtype_name(d) << " on demand, " << T << " tokens";
      // Prefetched: loaded into slot 2 while b computes from slot 1.
      g.load(1, bb.get());
      g.put_activations(x.data(), w.data(), zero.data(), T);
      g.compute(1, T);
      g.load(2, ba.get());
      std::vector<float> of_b(zero.size()), prefetched(zero.size());
      g.get_output(of_b.data(), T);
      g.put_activations(x.data(), w.data(), zero.data(), T);
      g.compute(2, T);
      g.get_output(prefetched.data(), T);
      EXPECT_EQ(prefetched, resident) << dtype_name(d) << " prefetched";
      // A slot reused: b computed from slot 0, then a loaded over it at once
      // (before b's output is read); the load must wait for b's compute (the
      // slot's previous user), or b would read a's weights in part.
      g.load(0, bb.get());
      g.synchronize();
      g.put_activations(x.data(), w.data(), zero.data(), T);
      g.compute(0, T);
      g.load(0, ba.get());
      std::vector<float> b_again(zero.size()), reused(zero.size());
      g.get_output(b_again.data(), T);
      g.put_activations(x.data(), w.data(), zero.data(), T);
      g.compute(0, T);
      g.get_output(reused.data(), T);
      EXPECT_EQ(b_again, of_b) << dtype_name(d) << " b from a reused slot";
      EXPECT_EQ(reused, resident) << dtype_name(d) << " a over b in one slot";
      EXPECT_NE(of_b, resident);  // the two experts differ, so the checks above can fail
      // And the CPU path agrees within the bound.
      std::vector<float> cpu = zero;
      make_expert_kernel("reference")->run(a, x.data(), T, w.data(), cpu.data());
      EXPECT_LT(normalised_error(resident.data(), cpu.data(), T * s.hidden), kBound);
    }
}

TEST(GpuExperts, AFailedCudaCallIsNamedInTheError) {
  REQUIRE_GPU();
  try {
    // 17 MB slots, a million of them: more device memory than any GPU has.
    GpuExperts g({{2048, 1408}, WeightDtype::kBf16, 1000000, 1});
    FAIL() << "allocated 17 TB";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cudaMalloc"), std::string::npos) << m;
    EXPECT_NE(m.find("gpu_experts.cu"), std::string::npos) << m;
  }
  GpuExperts g({{64, 32}, WeightDtype::kBf16, 2, 4});
  EXPECT_THROW(g.compute(2, 1), Error);  // no such slot
  EXPECT_THROW(g.compute(0, 5), Error);  // more tokens than sized for
}

TEST(GpuExperts, MarksOrderLanesAndTheHost) {
  REQUIRE_GPU();
  using Lane = GpuExperts::Lane;
  GpuExperts g({{256, 128}, WeightDtype::kBf16, 2, 4});
  // spin keeps a lane busy for that long on the GPU's clock.
  const int a = g.record(Lane::kCompute);
  g.spin(Lane::kCompute, 2000.0);
  const int b = g.record(Lane::kCompute);
  EXPECT_GE(g.elapsed_ms(a, b), 1.9);
  // A lane that waits for a mark starts after it: a copy lane waits for a
  // 3 ms spin on the compute lane.
  g.spin(Lane::kCompute, 3000.0);
  const int spun = g.record(Lane::kCompute);
  g.wait(Lane::kH2D, spun);
  const int copy_start = g.record(Lane::kH2D);
  g.copy(Lane::kH2D, 1 << 20);
  const int copy_end = g.record(Lane::kH2D);
  EXPECT_GE(g.elapsed_ms(spun, copy_start), 0.0);
  EXPECT_GT(g.elapsed_ms(copy_start, copy_end), 0.0);
  // The host waits for a mark: 5 ms of spin, then host_wait.
  g.spin(Lane::kD2H, 5000.0);
  const int d = g.record(Lane::kD2H);
  const auto t0 = std::chrono::steady_clock::now();
  g.host_wait(d);
  const double waited_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(waited_ms, 3.0);
  // Marks are reused after clear_events, from 0 again.
  g.clear_events();
  EXPECT_EQ(g.record(Lane::kActH2D), 0);
  g.copy(Lane::kActH2D, 4096);
  g.copy(Lane::kD2H, 4096);
  g.synchronize();
}

TEST(GpuExperts, ComputeWithoutTheLoadWaitReadsTheSlotAsItIs) {
  REQUIRE_GPU();
  const ExpertShape s{512, 384};
  const ExpertWeights e = ExpertWeights::random(s, WeightDtype::kBf16, 9);
  GpuExperts g({s, WeightDtype::kBf16, 1, 2});
  const auto blob = blob_of(g.blob(), e);
  const auto x = random_vec(2 * s.hidden, 1), w = random_vec(2, 2);
  const std::vector<float> zero(size_t(2 * s.hidden), 0.0f);
  g.load(0, blob.get());
  g.synchronize();
  std::vector<float> with(zero.size()), without(zero.size());
  g.put_activations(x.data(), w.data(), zero.data(), 2);
  g.compute(0, 2);
  g.get_output(with.data(), 2);
  g.put_activations(x.data(), w.data(), zero.data(), 2);
  g.compute(0, 2, false);
  g.get_output(without.data(), 2);
  EXPECT_EQ(with, without);
}

TEST(GpuProbes, MeasureSomethingPlausible) {
  REQUIRE_GPU();
  const auto c = measure_copies({1 << 20, 64 << 20}, 5);
  ASSERT_EQ(c.size(), 2u);
  for (const auto& p : c) {
    EXPECT_GT(p.h2d_us, 0);
    EXPECT_GT(p.d2h_us, 0);
  }
  EXPECT_LT(c[0].h2d_us, c[1].h2d_us);  // 64x the bytes takes longer
  const LaunchCost l = measure_launch(20);
  EXPECT_GT(l.enqueue_us, 0);
  EXPECT_GT(l.round_trip_us, 0);
  EXPECT_GT(measure_hbm_read_gbps(256 << 20, 5), 100.0);  // any HBM GPU reads far above 100 GB/s
  EXPECT_GT(measure_gemm_tflops(2048, 5), 1.0);
}

}  // namespace
}  // namespace moebench::gpu
