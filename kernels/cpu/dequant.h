// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Quantised weights (int8 or int4, packed by QuantMatrix::pack) turned back
// into bf16 in the packed bf16 layout the AMX tile loops read (amx_ffn.h):
// row block by row block, [column pair][16 rows][2 columns], the columns of
// every quantisation group (kQuantGroup = 64, so 32 pairs a group). Each
// weight is its code times its group's scale in fp32, exactly as
// QuantMatrix::value gives it, rounded to bf16 (to nearest even): the one
// rounding amx-quant adds to the weights. Padding rows and columns come out
// as zero.
#include <cstdint>

#include "kernels/cpu/expert_ffn.h"

namespace moebench {

// Column pairs per row block of the dequantised layout.
inline int64_t dequant_pairs(const QuantMatrix& m) {
  return m.groups * (kQuantGroup / 2);
}

// The row blocks [rb0, rb1) of `m` (packed) into `out`, which holds
// (rb1 - rb0) x dequant_pairs(m) x 32 values.
// REQUIRES: the CPU has avx512f, avx512bw, avx512vl and avx512_bf16.
void dequantise_row_blocks(const QuantMatrix& m, int64_t rb0, int64_t rb1, uint16_t* out);

}  // namespace moebench
