// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// MoE-Infinity's request-level activation tracing: the EAM of each request
// and the EAMC of past requests (baselines/moe_infinity/components.h).
#include <algorithm>
#include <cmath>
#include <memory>

#include "baselines/moe_infinity/components.h"

namespace moebench {

void ActivationTracer::reset(int32_t layers, int32_t experts) {
  L_ = layers;
  E_ = experts;
  capacity_ = persistent_ = 0;
  seen_step_ = seen_layer_ = -1;
  eams_.clear();
  collection_.clear();
  access_.clear();
}

void ActivationTracer::load_collection(const TraceSource& calibration, int64_t capacity) {
  capacity_ = capacity;
  const TraceInfo& info = calibration.info();
  const int64_t k = info.routing.top_k;
  const int64_t n = std::min<int64_t>(capacity, int64_t(info.sequences.size()));
  TokenRecord rec;
  for (int64_t s = 0; s < n; ++s) {
    std::vector<float> m(size_t(L_) * size_t(E_), 0.0f);
    std::unique_ptr<SequenceReader> rd = calibration.open(s, kIdsWeights);
    while (rd->next(rec)) {
      for (int64_t l = 0; l < L_; ++l) {
        for (int64_t j = 0; j < k; ++j) {
          const int32_t e = rec.ids[size_t(l * k + j)];
          if (e >= 0 && e < E_) m[size_t(l * E_ + e)] += 1.0f;
        }
      }
    }
    collection_.push_back(std::move(m));
    access_.push_back(0);
  }
  persistent_ = int64_t(collection_.size());
}

void ActivationTracer::observe(const Context& ctx) {
  if (ctx.step == seen_step_ && ctx.layer <= seen_layer_) return;
  seen_step_ = ctx.step;
  seen_layer_ = ctx.layer;
  const StepRouting& r = *ctx.routing;
  const int64_t k = ctx.top_k;
  for (int64_t t = 0; t < r.tokens(); ++t) {
    std::vector<float>& m = eams_[r.seq(t)];
    if (m.empty()) m.assign(size_t(L_) * size_t(E_), 0.0f);
    const int32_t* ids = r.ids(t, ctx.layer);
    for (int64_t j = 0; j < k; ++j) {
      if (ids[j] >= 0 && ids[j] < E_) m[size_t(ctx.layer) * E_ + ids[j]] += 1.0f;
    }
  }
}

void ActivationTracer::finish_step(const Context& ctx) {
  const StepRouting& r = *ctx.routing;
  for (int64_t t = 0; t < r.tokens(); ++t) {
    const int64_t s = r.seq(t);
    if (r.pos(t) != r.run().sequence(s).tokens() - 1) continue;
    auto it = eams_.find(s);
    if (it == eams_.end()) continue;
    if (int64_t(collection_.size()) < capacity_) {
      collection_.push_back(std::move(it->second));
      access_.push_back(1);
    } else if (persistent_ < int64_t(collection_.size())) {
      // The least matched entry added during the run (persistent ones stay).
      int64_t best = persistent_;
      for (int64_t i = persistent_ + 1; i < int64_t(collection_.size()); ++i) {
        if (access_[size_t(i)] < access_[size_t(best)]) best = i;
      }
      collection_[size_t(best)] = std::move(it->second);
      access_[size_t(best)] = 1;
    }
    eams_.erase(it);
  }
}

const std::vector<float>& ActivationTracer::eam(int64_t seq) const {
  auto it = eams_.find(seq);
  return it == eams_.end() ? empty_ : it->second;
}

int64_t ActivationTracer::match(int64_t seq) {
  const std::vector<float>& a = eam(seq);
  if (a.empty() || collection_.empty()) return -1;
  int64_t best = -1;
  double best_sim = 0;
  for (int64_t i = 0; i < int64_t(collection_.size()); ++i) {
    const std::vector<float>& b = collection_[size_t(i)];
    double sum = 0;
    int64_t rows = 0;
    for (int64_t l = 0; l < L_; ++l) {
      const float* x = &a[size_t(l) * E_];
      const float* y = &b[size_t(l) * E_];
      double xy = 0, xx = 0, yy = 0;
      for (int64_t e = 0; e < E_; ++e) {
        xy += double(x[e]) * y[e];
        xx += double(x[e]) * x[e];
        yy += double(y[e]) * y[e];
      }
      if (xx == 0) continue;  // a layer the request has not used yet
      ++rows;
      sum += yy > 0 ? xy / std::sqrt(xx * yy) : 0.0;
    }
    if (rows == 0) return -1;
    const double sim = sum / double(rows);
    if (best < 0 || sim > best_sim) {
      best = i;
      best_sim = sim;
    }
  }
  ++access_[size_t(best)];
  return best;
}

}  // namespace moebench
