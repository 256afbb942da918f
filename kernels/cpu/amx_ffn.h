// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// An expert's FFN on AMX bf16 tiles, shared by amx-bf16 (weights packed in
// bf16 at load) and amx-quant (int8 / int4 weights dequantised to the same
// bf16 layout by each task first). Callers run it only where cpu_info()
// reports AMX-TILE and AMX-BF16 granted by the OS.
//
// Weights: row blocks of 16 rows in the packed bf16 layout ([column
// pair][16 rows][2 columns], kp pairs per row block, kp a multiple of 16;
// columns past the real width zero), consecutive row blocks one after
// another; the 16 pairs from a multiple of 16 are one AMX B tile as they
// lie. Activations: converted to bf16 rows of kp pairs plus 64 bytes (so
// that the 16 rows of a tile do not share L1 sets when kp * 4 bytes is a
// multiple of 4 KiB, as at Mixtral's and DeepSeek's widths), tokens padded
// to a multiple of 16 with zero rows (their sums are computed and dropped).
//
// One TDPBF16PS multiplies a tile of 16 tokens x 32 activations (A) by one
// B tile into 16 x 16 fp32 sums (C). Eight tile registers hold two A, two
// B and four C tiles: gate and up of one row block (down: two row blocks)
// for two blocks of 16 tokens, so every tile load feeds two products. Loop
// order, for the caches: a task takes a group of row blocks and, for every
// block of 32 tokens, runs them over the input width in chunks of 512
// columns (every row block of the group per chunk, so the chunk's
// activations come from L1), so the group's weights stay in the core's L2
// across token blocks. Each task loads the
// tile configuration and releases the tiles at its end, so pool threads
// that run other kernels in between lose nothing. Whole row blocks per
// task: the result does not depend on the thread count.
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace moebench {
class ThreadPool;
}

namespace moebench::amx {

// Row blocks per task: gate/up (one row block of each per unit) and down
// (two row blocks per pair); sized so a group's weights fit a 2 MiB L2
// next to a token block's activations at DeepSeek-V3's shape (docs/KERNELS.md).
inline constexpr int64_t kGateUpGroup = 2;
inline constexpr int64_t kDownGroup = 4;  // pairs of row blocks

struct FfnShape {
  int64_t hidden = 0, inter = 0;
  int64_t kp_x = 0;  // column pairs of a gate / up row block (covers hidden)
  int64_t kp_h = 0;  // column pairs of a down row block (covers inter)
};

// Where a task finds its weights: gate_up(b0, b1) gives the gate and up
// row blocks [b0, b1), down(r0, r1) the down row blocks [r0, r1), each in
// the layout above; called once per task, on the task's thread, and the
// pointers are read until the task ends.
struct FfnWeights {
  std::function<std::pair<const uint16_t*, const uint16_t*>(int64_t, int64_t)> gate_up;
  std::function<const uint16_t*(int64_t, int64_t)> down;
};

// out[t] += w[t] * down(silu(gate x_t) * (up x_t)) for t < tokens, on the
// pool's threads (or the caller's without one). `scratch` holds the bf16
// activations between calls (reused, resized as needed).
void ffn_tiles(const FfnShape& s, const FfnWeights& weights, const float* x, int64_t tokens,
               const float* w, float* out, ThreadPool* pool, std::vector<uint16_t>& scratch);

}  // namespace moebench::amx
