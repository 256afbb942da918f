// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The expert FFN interface, the reference kernel and the registry by name.
#include "kernels/cpu/expert_ffn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "core/util/cpu_info.h"
#include "core/util/error.h"
#include "kernels/cpu/expert_ffn_impl.h"

namespace moebench {

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
    return uint16_t((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);       // round to nearest, ties to even
  return uint16_t(u >> 16);
}

float from_bf16(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

WeightDtype parse_weight_dtype(const std::string& s) {
  for (WeightDtype d : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
    if (s == dtype_name(d)) return d;
  }
  throw Error(fmt::format("expert weights: expected dtype bf16, int8 or int4, found '{}'", s));
}

QuantMatrix QuantMatrix::quantise(const std::vector<float>& v, int64_t rows, int64_t cols,
                                  WeightDtype dtype) {
  if (dtype == WeightDtype::kBf16 || rows <= 0 || cols <= 0 || int64_t(v.size()) != rows * cols) {
    throw Error(fmt::format(
        "quantise: expected int8 or int4 and {} x {} = {} values, found {} and {} values", rows,
        cols, rows * cols, dtype_name(dtype), v.size()));
  }
  QuantMatrix m;
  m.dtype = dtype;
  m.rows = rows;
  m.cols = cols;
  m.groups = (cols + kQuantGroup - 1) / kQuantGroup;
  const bool int4 = dtype == WeightDtype::kInt4;
  m.row_bytes = m.groups * (int4 ? kQuantGroup / 2 : kQuantGroup);
  const int qmax = int4 ? 7 : 127, offset = int4 ? 8 : 128;
  // Padding decodes to zero: the offset itself (in both nibbles for int4).
  m.codes.assign(size_t(rows * m.row_bytes), uint8_t(int4 ? 0x88 : 0x80));
  m.scale.assign(size_t(rows * m.groups), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < m.groups; ++g) {
      const int64_t c0 = g * kQuantGroup, c1 = std::min(cols, c0 + kQuantGroup);
      float amax = 0;
      for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::abs(v[size_t(r * cols + c)]));
      const float sc = amax > 0 ? amax / float(qmax) : 1.0f;
      m.scale[size_t(r * m.groups + g)] = sc;
      for (int64_t c = c0; c < c1; ++c) {
        const int q = std::clamp(int(std::lround(v[size_t(r * cols + c)] / sc)), -qmax, qmax);
        const uint8_t u = uint8_t(q + offset);
        if (!int4) {
          m.codes[size_t(r * m.row_bytes + c)] = u;
        } else {
          const int64_t j = c - c0;  // position in the group
          uint8_t& b = m.codes[size_t(r * m.row_bytes + g * kQuantGroup / 2 + j % 32)];
          b = j < 32 ? uint8_t((b & 0xf0) | u) : uint8_t((b & 0x0f) | (u << 4));
        }
      }
    }
  }
  return m;
}

int QuantMatrix::code(int64_t r, int64_t c) const {
  if (dtype == WeightDtype::kInt8) return int(codes[size_t(r * row_bytes + c)]) - 128;
  const int64_t g = c / kQuantGroup, j = c % kQuantGroup;
  const uint8_t b = codes[size_t(r * row_bytes + g * kQuantGroup / 2 + j % 32)];
  return int(j < 32 ? (b & 0x0f) : (b >> 4)) - 8;
}

ExpertWeights ExpertWeights::random(ExpertShape s, WeightDtype dtype, uint64_t seed) {
  if (s.hidden <= 0 || s.inter <= 0) {
    throw Error(fmt::format("expert shape: expected hidden and inter > 0, found {} x {}", s.hidden,
                            s.inter));
  }
  if (dtype == WeightDtype::kFp16) {
    throw Error(
        "expert weights: expected dtype bf16, int8 or int4 (the CPU kernels have no fp16), found "
        "fp16");
  }
  ExpertWeights e;
  e.shape = s;
  e.dtype = dtype;
  std::mt19937_64 rng(seed);
  auto fill = [&](int64_t rows, int64_t cols, std::vector<uint16_t>& bf, QuantMatrix& q) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    const float scale = 1.0f / std::sqrt(float(cols));
    std::vector<float> v(size_t(rows * cols));
    for (auto& x : v) x = d(rng) * scale;
    if (dtype == WeightDtype::kBf16) {
      bf.resize(v.size());
      for (size_t i = 0; i < v.size(); ++i) bf[i] = to_bf16(v[i]);
    } else {
      q = QuantMatrix::quantise(v, rows, cols, dtype);
    }
  };
  fill(s.inter, s.hidden, e.gate, e.qgate);
  fill(s.inter, s.hidden, e.up, e.qup);
  fill(s.hidden, s.inter, e.down, e.qdown);
  return e;
}

std::vector<uint16_t> pack_rows16(const std::vector<uint16_t>& w, int64_t rows, int64_t cols) {
  const int64_t rb = (rows + 15) / 16, kp = packed_pairs(cols);
  std::vector<uint16_t> p(size_t(rb * kp * 32), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      p[size_t(((r / 16 * kp + c / 2) * 16 + r % 16) * 2 + c % 2)] = w[size_t(r * cols + c)];
    }
  }
  return p;
}

void QuantMatrix::pack() {
  const bool int4 = dtype == WeightDtype::kInt4;
  const int offset = int4 ? 8 : 128;
  const int64_t rb = (rows + 15) / 16, quad_bytes = int4 ? 32 : 64;
  pcodes.assign(size_t(rb * groups * 16 * quad_bytes), int4 ? uint8_t(0x88) : uint8_t(0x80));
  pscale.assign(size_t(rb * groups * 16), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      pscale[size_t((r / 16 * groups + g) * 16 + r % 16)] = scale[size_t(r * groups + g)];
      for (int64_t q = 0; q < 16; ++q) {
        // int4: quads 2p and 2p + 1 share 64 bytes (low and high nibbles),
        // which start where quad 2p would.
        uint8_t* quad =
            &pcodes[size_t(((r / 16 * groups + g) * 16 + (int4 ? q - q % 2 : q)) * quad_bytes)];
        for (int64_t i = 0; i < 4; ++i) {
          const int64_t c = g * kQuantGroup + 4 * q + i;
          const uint8_t u = uint8_t((c < cols ? code(r, c) : 0) + offset);
          const int64_t j = r % 16 * 4 + i;  // the code's place in the quad
          if (!int4) {
            quad[j] = u;
          } else {
            uint8_t& b = quad[j];
            b = q % 2 == 0 ? uint8_t((b & 0xf0) | u) : uint8_t((b & 0x0f) | (u << 4));
          }
        }
      }
    }
  }
}

void ExpertWeights::pack() {
  if (dtype == WeightDtype::kBf16) {
    pgate = pack_rows16(gate, shape.inter, shape.hidden);
    pup = pack_rows16(up, shape.inter, shape.hidden);
    pdown = pack_rows16(down, shape.hidden, shape.inter);
  } else {
    qgate.pack();
    qup.pack();
    qdown.pack();
  }
}

void ExpertWeights::release_unpacked() {
  if (!packed()) throw InternalError("ExpertWeights::release_unpacked before pack()");
  for (auto* v : {&gate, &up, &down}) std::vector<uint16_t>().swap(*v);
  for (auto* m : {&qgate, &qup, &qdown}) {
    std::vector<uint8_t>().swap(m->codes);
    std::vector<float>().swap(m->scale);
  }
}

int64_t ExpertWeights::weight_bytes() const {
  if (dtype == WeightDtype::kBf16) {
    // The row-major arrays, or the packed ones where only those are kept.
    const size_t n = gate.size() + up.size() + down.size();
    return int64_t(n > 0 ? n : pgate.size() + pup.size() + pdown.size()) * 2;
  }
  int64_t b = 0;
  for (const QuantMatrix* m : {&qgate, &qup, &qdown}) {
    b += m->codes.empty() ? int64_t(m->pcodes.size()) + int64_t(m->pscale.size()) * 4
                          : int64_t(m->codes.size()) + int64_t(m->scale.size()) * 4;
  }
  return b;
}

float ExpertWeights::gate_at(int64_t r, int64_t c) const {
  return dtype == WeightDtype::kBf16 ? from_bf16(gate[size_t(r * shape.hidden + c)])
                                     : qgate.value(r, c);
}
float ExpertWeights::up_at(int64_t r, int64_t c) const {
  return dtype == WeightDtype::kBf16 ? from_bf16(up[size_t(r * shape.hidden + c)])
                                     : qup.value(r, c);
}
float ExpertWeights::down_at(int64_t r, int64_t c) const {
  return dtype == WeightDtype::kBf16 ? from_bf16(down[size_t(r * shape.inter + c)])
                                     : qdown.value(r, c);
}

void require_packed(const ExpertKernel& k, const ExpertWeights& e) {
  if (k.needs_packed() && !e.packed()) {
    throw Error(fmt::format(
        "expert kernel {}: expected weights packed at load (ExpertWeights::pack), found them "
        "unpacked",
        k.name()));
  }
}

void require_dtype(const ExpertKernel& k, WeightDtype d) {
  if (k.supports(d)) return;
  std::string ok;
  for (WeightDtype x : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
    if (k.supports(x)) ok += (ok.empty() ? "" : ", ") + std::string(dtype_name(x));
  }
  throw Error(fmt::format("expert kernel '{}': expected weights in {}, found {}", k.name(), ok,
                          dtype_name(d)));
}

double normalised_error(const float* a, const float* b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  if (den == 0) return num == 0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

namespace {

double silu(double v) {
  return v / (1.0 + std::exp(-v));
}

class ReferenceKernel final : public ExpertKernel {
 public:
  std::string name() const override { return "reference"; }
  bool supports(WeightDtype d) const override { return d != WeightDtype::kFp16; }
  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool*) override {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    std::vector<double> h(static_cast<size_t>(I));
    for (int64_t t = 0; t < tokens; ++t) {
      const float* xt = x + t * H;
      for (int64_t r = 0; r < I; ++r) {
        double g = 0, u = 0;
        for (int64_t k = 0; k < H; ++k) {
          g += double(e.gate_at(r, k)) * double(xt[k]);
          u += double(e.up_at(r, k)) * double(xt[k]);
        }
        h[size_t(r)] = silu(g) * u;
      }
      for (int64_t c = 0; c < H; ++c) {
        double y = 0;
        for (int64_t r = 0; r < I; ++r) y += double(e.down_at(c, r)) * h[size_t(r)];
        out[t * H + c] = float(double(out[t * H + c]) + double(w[t]) * y);
      }
    }
  }
};

}  // namespace

std::unique_ptr<ExpertKernel> make_reference_kernel() {
  return std::make_unique<ReferenceKernel>();
}

}  // namespace moebench
