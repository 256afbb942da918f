// RouterProbe and the dense helpers the predictors share.
#include <cstring>

#include <fmt/format.h>

#include "core/util/detmath.h"
#include "core/util/error.h"
#include "predictors/components.h"

namespace moebench {

namespace {
typedef float v16 __attribute__((vector_size(64), aligned(4)));

__attribute__((always_inline)) inline v16 load16(const float* p) {
  v16 v;
  std::memcpy(&v, p, 64);
  return v;
}

// 16 partial sums, lane i summing elements i, i+16, ...; then the lanes in
// a fixed tree order. The remainder (n % 16) is added last, in order.
__attribute__((always_inline)) inline float dot_impl(const float* a, const float* b, int64_t n) {
  v16 acc = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) acc += load16(a + i) * load16(b + i);
  float lanes[16];
  std::memcpy(lanes, &acc, 64);
  for (int w = 8; w >= 1; w >>= 1) {
    for (int j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  }
  float s = lanes[0];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}
}  // namespace

MOEBENCH_CLONES float dot(const float* a, const float* b, int64_t n) { return dot_impl(a, b, n); }

MOEBENCH_CLONES void gemv(const float* W, const float* bias, const float* x, int64_t rows, int64_t n, float* out) {
  for (int64_t r = 0; r < rows; ++r) out[r] = (bias ? bias[r] : 0.0f) + dot_impl(W + r * n, x, n);
}

void RouterProbe::init(const ModelSpec& model, const GateWeights* gates, const std::string& who) {
  if (!gates || gates->h <= 0) {
    throw Error(fmt::format("predictor '{}': expected a workload with gate weights and gate inputs, found none", who));
  }
  if (gates->experts != model.routed_experts) {
    throw Error(fmt::format("predictor '{}': expected gate weights for {} experts (model '{}'), found {}", who,
                            model.routed_experts, model.name, gates->experts));
  }
  gates_ = gates;
  cfg_ = RoutingConfig::from_model(model);
  logits_.resize(gates->experts);
  probs_.resize(gates->experts);
  ids_.resize(cfg_.top_k);
  w_.resize(cfg_.top_k);
}

void RouterProbe::route_one(const float* x, int32_t layer, int32_t* ids, float* weights) {
  const int64_t E = gates_->experts;
  gemv(gates_->w(layer), gates_->b(layer), x, E, gates_->h, logits_.data());
  const float* sel = gates_->selection_bias.empty() ? nullptr : gates_->sel(layer);
  route(cfg_, logits_.data(), sel, ids, weights, probs_.data(), scratch_);
}

void RouterProbe::add_workload(const float* x, int64_t n, int32_t layer, std::span<float> scores) {
  const int64_t k = cfg_.top_k;
  const float tie = n > 0 ? 0.5f / float(n) : 0.0f;
  for (int64_t t = 0; t < n; ++t) {
    route_one(x + t * gates_->h, layer, ids_.data(), w_.data());
    float wsum = 0;
    for (int64_t j = 0; j < k; ++j) wsum += std::abs(w_[j]);
    for (int64_t j = 0; j < k; ++j) {
      scores[ids_[j]] += 1.0f + tie * (wsum > 0 ? std::abs(w_[j]) / wsum : 0.0f);
    }
  }
}

}  // namespace moebench
