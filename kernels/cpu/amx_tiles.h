// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The AMX tile configuration the tile kernels and the probe share: palette
// 1, tiles 0-7 each 16 rows of 64 bytes. Callers run only where
// cpu_info() reports AMX granted by the OS.
#include <immintrin.h>

#include <cstdint>

namespace moebench::amx {

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

// Configures the calling thread's tiles for the scope's life and releases
// them at its end (pool threads that run other kernels in between lose
// nothing).
struct TileScope {
  __attribute__((target("amx-tile"))) TileScope() {
    static const TileConfig cfg;
    _tile_loadconfig(&cfg);
  }
  __attribute__((target("amx-tile"))) ~TileScope() { _tile_release(); }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

}  // namespace moebench::amx
