// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The blocking shared by the own expert kernels: rows of NS row sets (gate
// and up: NS = 2; down: NS = 1) are taken RB at a time from each set, and
// tokens up to four at a time, so that NS x RB weight rows share each load
// of a token's activations and each weight load serves four tokens.
//
// Dot provides `template <int NR, int NT> void block(const int* set,
// const int64_t* row, int64_t t0, float* sums)`: sums[i * NT + j] = row
// row[i] of set set[i] times token t0 + j. f(row, token, set, value)
// consumes the sums, a block's set 0 first.
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace moebench::row_blocks {

// The sum of a vector's 16 lanes, stored to memory first: GCC 12's
// _mm512_reduce_add_ps trips -Wuninitialized inside its own header.
inline float sum16(const float* lanes) {
  float s = 0;
  for (int i = 0; i < 16; ++i) s += lanes[i];
  return s;
}

template <int NS, int RB, class Dot, class F>
void for_rows(Dot& dot, int64_t r0, int64_t r1, int64_t tokens, F&& f) {
  constexpr int NR = NS * RB;
  float sums[NR * 4];
  int set[NR];
  int64_t row[NR];
  int64_t r = r0;
  for (; r + RB <= r1; r += RB) {
    for (int i = 0; i < NR; ++i) {
      set[i] = i / RB;
      row[i] = r + i % RB;
    }
    int64_t t = 0;
    for (; t + 4 <= tokens; t += 4) {
      dot.template block<NR, 4>(set, row, t, sums);
      for (int i = 0; i < NR; ++i) {
        for (int j = 0; j < 4; ++j) f(row[i], t + j, set[i], sums[i * 4 + j]);
      }
    }
    auto tail = [&](auto nt) {
      constexpr int NT = decltype(nt)::value;
      dot.template block<NR, NT>(set, row, t, sums);
      for (int i = 0; i < NR; ++i) {
        for (int j = 0; j < NT; ++j) f(row[i], t + j, set[i], sums[i * NT + j]);
      }
    };
    const int64_t left = tokens - t;
    if (left == 1) tail(std::integral_constant<int, 1>{});
    if (left == 2) tail(std::integral_constant<int, 2>{});
    if (left == 3) tail(std::integral_constant<int, 3>{});
  }
  if constexpr (RB > 1) {
    if (r < r1) for_rows<NS, 1>(dot, r, r1, tokens, f);  // the last rows, one at a time
  }
}

// Gate and up fused (Dot's set 0 the gate rows, set 1 the up rows):
// store(r, t, silu(gate_r . x_t) * (up_r . x_t)) for the intermediate rows
// r0 <= r < r1 and every token t; `gate` ([tokens x inter], sized by the
// caller) keeps the gate sums until the up sums arrive. Row ranges of
// different calls may run on different threads at once.
template <class Dot, class Store>
void gate_up_silu(Dot& dot, int64_t r0, int64_t r1, int64_t inter, int64_t tokens, float* gate,
                  Store&& store) {
  for_rows<2, 2>(dot, r0, r1, tokens, [&](int64_t r, int64_t t, int which, float v) {
    if (which == 0) {
      gate[t * inter + r] = v;
    } else {
      const float g = gate[t * inter + r];
      store(r, t, g / (1.0f + std::exp(-g)) * v);
    }
  });
}

// Rows per task of the dynamic queue (kernels/cpu/thread_pool.h): multiples
// of the row blocks above, small enough that two threads share even a
// narrow matrix, large enough that a task's hand-off is cheap beside it.
inline constexpr int64_t kGateUpGrain = 32;
inline constexpr int64_t kDownGrain = 64;

}  // namespace moebench::row_blocks
