// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// predictor = "residual" (DALI): the mean residual between adjacent layers'
// gate inputs, measured offline on a calibration trace, is added before
// applying a later layer's router: gate_{l+1}(x_l + res_l).
#include <algorithm>

#include <fmt/format.h>

#include "core/util/error.h"
#include "core/util/sha256.h"
#include "predictors/components.h"

namespace moebench {

const cfg::Schema<ResidualPredictor::Params>& ResidualPredictor::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.predictor");
    s.integer("max_tokens", &Params::max_tokens,
              "Calibration tokens averaged into the residual vectors (0 = all).", cfg::at_least(0));
    return s;
  }();
  return s;
}

std::vector<float> mean_residuals(const TraceSource& src, int64_t max_tokens) {
  const TraceInfo& in = src.info();
  const int64_t L = in.moe_layers, H = in.h_trace;
  if (H <= 0) {
    throw Error(
        "residual vectors: expected a calibration trace with gate inputs, found one without "
        "(h_trace = 0)");
  }
  std::vector<double> acc(size_t(std::max<int64_t>(L - 1, 0) * H), 0.0);
  int64_t n = 0;
  TokenRecord rec;
  for (int64_t s = 0; s < int64_t(in.sequences.size()) && (max_tokens <= 0 || n < max_tokens);
       ++s) {
    auto rd = src.open(s, kGateInput | kNoRouting);
    while ((max_tokens <= 0 || n < max_tokens) && rd->next(rec)) {
      for (int64_t l = 0; l + 1 < L; ++l) {
        const float* a = &rec.gate_input[l * H];
        const float* b = &rec.gate_input[(l + 1) * H];
        for (int64_t i = 0; i < H; ++i) acc[l * H + i] += double(b[i]) - double(a[i]);
      }
      ++n;
    }
  }
  if (n == 0) throw Error("residual vectors: expected calibration tokens, found none");
  std::vector<float> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) out[i] = float(acc[i] / double(n));
  return out;
}

void ResidualPredictor::prepare(const ModelSpec& m, const CalibrationData* calib,
                                const GateWeights* g) {
  probe_.init(m, g, name());
  hidden_ = m.hidden_size;
  if (!calib)
    throw Error(fmt::format("predictor '{}': expected a calibration workload, found none", name()));
  if (calib->trace().info().h_trace != probe_.h()) {
    throw Error(fmt::format(
        "predictor '{}': expected calibration gate inputs of width {} (the workload's), found {}",
        name(), probe_.h(), calib->trace().info().h_trace));
  }
  res_ = mean_residuals(calib->trace(), p_.max_tokens);
  // What the shifted inputs depend on besides the token: the residuals' bits.
  memo_what_ = "residual|" + sha256_hex(std::string_view(reinterpret_cast<const char*>(res_.data()),
                                                         res_.size() * sizeof(float)));
  x_.resize(probe_.h());
}

void ResidualPredictor::predict(const Context& ctx, int32_t target, int64_t offset,
                                std::span<float> scores) {
  if (offset != 0 || target < ctx.layer || target >= ctx.moe_layers) {
    throw Error(fmt::format(
        "predictor '{}': predicts later layers of the current token, asked for layer {} "
        "at step offset {} from layer {}",
        name(), target, offset, ctx.layer));
  }
  const StepRouting& r = *ctx.routing;
  const int64_t H = probe_.h(), n = r.tokens();
  // Each token's shifted gate input (for the tokens no other case of the
  // workload has routed with these residuals), then all of them through
  // the router at once (add_step: the same bits as one at a time).
  x_.resize(size_t(std::max<int64_t>(n, 1) * H));
  TokenMemo::Table* memo = probe_.memo_table(r, memo_what_, ctx.layer, target);
  probe_.add_step(
      r, memo, target,
      [&](int64_t t) {
        float* x = &x_[size_t(t * H)];
        const float* g = r.gate_input(t, ctx.layer);
        for (int64_t i = 0; i < H; ++i) x[i] = g[i];
        for (int32_t l = ctx.layer; l < target; ++l) {
          const float* d = &res_[size_t(l) * H];
          for (int64_t i = 0; i < H; ++i) x[i] += d[i];
        }
        return static_cast<const float*>(x);
      },
      scores);
}

double ResidualPredictor::gpu_ns(const CostModel& c, int64_t tokens) const {
  return c.gpu_matmul_ns(hidden_, probe_.ready() ? probe_.experts() : 0, tokens);
}

}  // namespace moebench
