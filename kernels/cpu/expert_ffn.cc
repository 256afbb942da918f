// The expert FFN interface, the reference kernel and the registry by name.
#include "kernels/cpu/expert_ffn.h"

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

Bf16Expert Bf16Expert::random(ExpertShape s, uint64_t seed) {
  if (s.hidden <= 0 || s.inter <= 0) {
    throw Error(fmt::format("expert shape: expected hidden and inter > 0, found {} x {}", s.hidden,
                            s.inter));
  }
  Bf16Expert e;
  e.shape = s;
  std::mt19937_64 rng(seed);
  auto fill = [&](std::vector<uint16_t>& v, int64_t n, int64_t fan_in) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    const float scale = 1.0f / std::sqrt(float(fan_in));
    v.resize(size_t(n));
    for (auto& x : v) x = to_bf16(d(rng) * scale);
  };
  fill(e.gate, s.inter * s.hidden, s.hidden);
  fill(e.up, s.inter * s.hidden, s.hidden);
  fill(e.down, s.hidden * s.inter, s.inter);
  return e;
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
  void run(const Bf16Expert& e, const float* x, int64_t tokens, const float* w,
           float* out) override {
    const int64_t H = e.shape.hidden, I = e.shape.inter;
    std::vector<double> h(static_cast<size_t>(I));
    for (int64_t t = 0; t < tokens; ++t) {
      const float* xt = x + t * H;
      for (int64_t r = 0; r < I; ++r) {
        double g = 0, u = 0;
        for (int64_t k = 0; k < H; ++k) {
          g += double(from_bf16(e.gate[size_t(r * H + k)])) * double(xt[k]);
          u += double(from_bf16(e.up[size_t(r * H + k)])) * double(xt[k]);
        }
        h[size_t(r)] = silu(g) * u;
      }
      for (int64_t c = 0; c < H; ++c) {
        double y = 0;
        for (int64_t r = 0; r < I; ++r)
          y += double(from_bf16(e.down[size_t(c * I + r)])) * h[size_t(r)];
        out[t * H + c] = float(double(out[t * H + c]) + double(w[t]) * y);
      }
    }
  }
};

}  // namespace

std::vector<std::string> expert_kernels_available() {
  std::vector<std::string> v = {"reference"};
  const CpuInfo& c = cpu_info();
  if (c.avx512f && c.avx512bw && c.avx512_bf16) v.push_back("avx512-bf16");
  v.push_back("onednn");
  return v;
}

std::unique_ptr<ExpertKernel> make_expert_kernel(const std::string& name) {
  const auto avail = expert_kernels_available();
  bool ok = false;
  for (const auto& a : avail) ok = ok || a == name;
  if (!ok) {
    std::string list;
    for (const auto& a : avail) list += (list.empty() ? "" : ", ") + a;
    throw Error(fmt::format("expert kernel: expected one of {} (what this CPU can run), found '{}'",
                            list, name));
  }
  if (name == "reference") return std::make_unique<ReferenceKernel>();
  if (name == "avx512-bf16") return make_avx512_bf16_kernel();
  return make_onednn_kernel();
}

}  // namespace moebench
