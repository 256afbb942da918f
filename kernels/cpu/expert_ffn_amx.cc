// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// expert kernel "amx-bf16": bf16 weights packed at load (the layout
// avx512-bf16-gemm reads: blocks of 16 rows, columns in pairs, padded to
// whole 32-column blocks), multiplied on AMX tiles for many tokens per
// expert by the tile loops of amx_ffn.h, which read the packed weights in
// place. The kernel is for many tokens (they are padded to a multiple of
// 16); avx512-amx-bf16 gives few-token steps to avx512-bf16-gemm.
#include <utility>
#include <vector>

#include "kernels/cpu/amx_ffn.h"
#include "kernels/cpu/expert_ffn_impl.h"

namespace moebench {
namespace {

class AmxBf16Kernel final : public ExpertKernel {
 public:
  std::string name() const override { return "amx-bf16"; }
  bool supports(WeightDtype d) const override { return d == WeightDtype::kBf16; }
  bool needs_packed() const override { return true; }

 protected:
  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool* pool) override {
    const amx::FfnShape s{e.shape.hidden, e.shape.inter, packed_pairs(e.shape.hidden),
                          packed_pairs(e.shape.inter)};
    const amx::FfnWeights weights{
        [&](int64_t b0, int64_t) {
          return std::pair{e.pgate.data() + b0 * s.kp_x * 32, e.pup.data() + b0 * s.kp_x * 32};
        },
        [&](int64_t r0, int64_t) { return e.pdown.data() + r0 * s.kp_h * 32; }};
    amx::ffn_tiles(s, weights, x, tokens, w, out, pool, scratch_);
  }

 private:
  std::vector<uint16_t> scratch_;  // bf16 activations
};

}  // namespace

std::unique_ptr<ExpertKernel> make_amx_bf16_kernel() {
  return std::make_unique<AmxBf16Kernel>();
}

}  // namespace moebench
