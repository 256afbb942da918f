// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Constructors of the expert kernels, one file each (kernels/cpu/expert_ffn.h).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/expert_ffn.h"

namespace moebench {

// A row-major bf16 matrix [rows x cols] in the packed layout of the bf16
// kernels (ExpertWeights::pack): [row block of 16][column pair][16 rows][2],
// zero-padded to whole blocks and to packed_pairs(cols) pairs.
std::vector<uint16_t> pack_rows16(const std::vector<uint16_t>& w, int64_t rows, int64_t cols);

// One token's activations as int8 for the VNNI kernels: q[i] = round(x[i] /
// s) with s = max |x| / 127 (1 for an all-zero row); returns s.
inline float quantise_activations(const float* x, int64_t n, int8_t* q) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::abs(x[i]));
  const float s = amax > 0 ? amax / 127.0f : 1.0f;
  for (int64_t i = 0; i < n; ++i) q[i] = int8_t(std::clamp(int(std::lround(x[i] / s)), -127, 127));
  return s;
}

// The same values and scale as quantise_activations for finite x (bit for
// bit; checked by a test), 16 values per instruction (quant_tokens.cc).
// REQUIRES: the CPU has avx512f and avx512bw.
float quantise_activations_avx512(const float* x, int64_t n, int8_t* q);
// The same with AVX2, 8 values per instruction (quant_tokens.cc).
// REQUIRES: the CPU has avx2.
float quantise_activations_avx2(const float* x, int64_t n, int8_t* q);

// The fp64 reference (every CPU).
std::unique_ptr<ExpertKernel> make_reference_kernel();
std::unique_ptr<ExpertKernel>
make_avx512_bf16_kernel();  // REQUIRES: avx512f, avx512bw, avx512_bf16
std::unique_ptr<ExpertKernel>
make_avx512_vnni_kernel();  // REQUIRES: avx512f, avx512bw, avx512_vnni
std::unique_ptr<ExpertKernel> make_onednn_kernel();
// Whether Debian's oneDNN can create its bf16 matmul on this CPU (2.6 has
// no bf16 implementation without AVX-512): tried once, on first call.
bool onednn_bf16_available();
std::unique_ptr<ExpertKernel> make_avx2_gemm_kernel();  // REQUIRES: avx2, fma
std::unique_ptr<ExpertKernel>
make_avx512_bf16_gemm_kernel();  // REQUIRES: avx512f, avx512bw, avx512vl, avx512_bf16
std::unique_ptr<ExpertKernel>
make_avx512_vnni_gemm_kernel();                        // REQUIRES: avx512f, avx512bw, avx512_vnni
std::unique_ptr<ExpertKernel> make_amx_bf16_kernel();  // REQUIRES: the above and amx_tile, amx_bf16
std::unique_ptr<ExpertKernel>
make_amx_quant_kernel();  // REQUIRES: avx512f, avx512bw, avx512vl, avx512_bf16, amx_tile, amx_bf16
std::unique_ptr<ExpertKernel>
make_amx_int8_kernel();  // REQUIRES: avx512f, avx512bw, avx512vl, amx_tile, amx_int8
// The switching kernels ("hybrid", "avx512-amx-*") are rows of
// kernel_registry.cc naming the two kernels above they switch between.

}  // namespace moebench
