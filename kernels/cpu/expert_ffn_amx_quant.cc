// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// expert kernel "amx-quant": int8 and int4 weights packed at load (the
// layout avx512-vnni-gemm reads), multiplied on AMX bf16 tiles for many
// tokens per expert. Each task first turns its row blocks back into bf16
// (dequant.h: code times the group's scale, rounded to bf16) in a buffer
// of its thread, in the layout amx-bf16 reads, then runs the same tile
// loops (amx_ffn.h) on it with fp32 sums over the whole row: the group
// scales are applied once per weight per call, not once per group of
// every token's sums as the kernel it replaced, amx-int8 (TDPBSUD on int8
// activations), had to (docs/KERNELS.md).
// Memory traffic is that of the quantised weights; the tile arithmetic is
// bf16's. Activations are rounded to bf16 as in amx-bf16. The dequantised
// buffers hold a task's row blocks (gate/up: 2 x 2 row blocks, down: 8),
// at DeepSeek-V3's shape 0.9 MiB and 0.5 MiB per thread, so they stay in
// the core's L2 across the blocks of 32 tokens. Whole row blocks per task:
// the result does not depend on the thread count.
#include <utility>
#include <vector>

#include "kernels/cpu/amx_ffn.h"
#include "kernels/cpu/dequant.h"
#include "kernels/cpu/expert_ffn_impl.h"

namespace moebench {
namespace {

// The calling thread's buffer for dequantised row blocks, at least n values.
uint16_t* task_buffer(size_t n) {
  thread_local std::vector<uint16_t> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

class AmxQuantKernel final : public ExpertKernel {
 public:
  std::string name() const override { return "amx-quant"; }
  bool supports(WeightDtype d) const override {
    return d == WeightDtype::kInt8 || d == WeightDtype::kInt4;
  }
  bool needs_packed() const override { return true; }

 protected:
  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool* pool) override {
    const amx::FfnShape s{e.shape.hidden, e.shape.inter, dequant_pairs(e.qgate),
                          dequant_pairs(e.qdown)};
    const amx::FfnWeights weights{[&](int64_t b0, int64_t b1) {
                                    const int64_t n = (b1 - b0) * s.kp_x * 32;
                                    uint16_t* g = task_buffer(size_t(2 * n));
                                    dequantise_row_blocks(e.qgate, b0, b1, g);
                                    dequantise_row_blocks(e.qup, b0, b1, g + n);
                                    return std::pair<const uint16_t*, const uint16_t*>{g, g + n};
                                  },
                                  [&](int64_t r0, int64_t r1) {
                                    uint16_t* d = task_buffer(size_t((r1 - r0) * s.kp_h * 32));
                                    dequantise_row_blocks(e.qdown, r0, r1, d);
                                    return static_cast<const uint16_t*>(d);
                                  }};
    amx::ffn_tiles(s, weights, x, tokens, w, out, pool, scratch_);
  }

 private:
  std::vector<uint16_t> scratch_;  // bf16 activations
};

}  // namespace

std::unique_ptr<ExpertKernel> make_amx_quant_kernel() {
  return std::make_unique<AmxQuantKernel>();
}

}  // namespace moebench
