// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// ExpertBlob: one expert's weights as one contiguous blob (kernels/cuda/gpu_experts.h).
// Plain C++: built with and without CUDA.

#include <cstring>

#include <fmt/format.h>

#include "core/util/error.h"
#include "kernels/cuda/gpu_experts.h"

namespace moebench::gpu {

namespace {
int64_t align256(int64_t x) {
  return (x + 255) / 256 * 256;
}
}  // namespace

ExpertBlob ExpertBlob::of(ExpertShape s, WeightDtype d) {
  if (s.hidden <= 0 || s.inter <= 0) {
    throw Error(fmt::format("GPU expert shape: expected hidden and inter > 0, found {} x {}",
                            s.hidden, s.inter));
  }
  ExpertBlob b;
  b.shape = s;
  b.dtype = d;
  if (d == WeightDtype::kBf16) {
    b.gate_up = 0;
    b.down = align256(2 * s.inter * s.hidden * 2);
    b.bytes = align256(b.down + s.hidden * s.inter * 2);
    return b;
  }
  if (d != WeightDtype::kInt8 && d != WeightDtype::kInt4) {
    throw Error(
        fmt::format("GPU experts: expected dtype bf16, int8 or int4, found {}", to_string(d)));
  }
  const int64_t gh = (s.hidden + kQuantGroup - 1) / kQuantGroup;
  const int64_t gi = (s.inter + kQuantGroup - 1) / kQuantGroup;
  const int64_t per_group = d == WeightDtype::kInt8 ? kQuantGroup : kQuantGroup / 2;
  b.gate_up = 0;
  b.down = align256(2 * s.inter * gh * per_group);
  b.gate_up_scale = align256(b.down + s.hidden * gi * per_group);
  b.down_scale = align256(b.gate_up_scale + 2 * s.inter * gh * 4);
  b.bytes = align256(b.down_scale + s.hidden * gi * 4);
  return b;
}

void ExpertBlob::write(const ExpertWeights& e, uint8_t* dst) const {
  if (e.shape.hidden != shape.hidden || e.shape.inter != shape.inter || e.dtype != dtype) {
    throw InternalError("ExpertBlob::write: weights of another shape or dtype");
  }
  std::memset(dst, 0, size_t(bytes));
  auto put = [&](int64_t off, const void* src, size_t n) {
    if (n > 0) std::memcpy(dst + off, src, n);
  };
  if (dtype == WeightDtype::kBf16) {
    if (e.gate.empty())
      throw InternalError("ExpertBlob::write: the row-major weights were released");
    const size_t m = e.gate.size() * 2;
    put(gate_up, e.gate.data(), m);
    put(gate_up + int64_t(m), e.up.data(), m);
    put(down, e.down.data(), e.down.size() * 2);
    return;
  }
  if (e.qgate.codes.empty())
    throw InternalError("ExpertBlob::write: the row-major codes were released");
  put(gate_up, e.qgate.codes.data(), e.qgate.codes.size());
  put(gate_up + int64_t(e.qgate.codes.size()), e.qup.codes.data(), e.qup.codes.size());
  put(down, e.qdown.codes.data(), e.qdown.codes.size());
  put(gate_up_scale, e.qgate.scale.data(), e.qgate.scale.size() * 4);
  put(gate_up_scale + int64_t(e.qgate.scale.size()) * 4, e.qup.scale.data(),
      e.qup.scale.size() * 4);
  put(down_scale, e.qdown.scale.data(), e.qdown.scale.size() * 4);
}

}  // namespace moebench::gpu
