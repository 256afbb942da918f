// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/routing_data.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "core/trace/routing.h"
#include "core/util/cancel.h"
#include "core/util/error.h"

namespace moebench {

RunRouting::RunRouting(const TraceSource& src, int64_t top_p) {
  const TraceInfo& in = src.info();
  L_ = in.moe_layers;
  E_ = in.experts();
  k_ = in.top_k();
  p_ = std::min(top_p, E_);
  if (p_ > 0 && in.probs == ProbsStorage::kNone) {
    throw Error(
        fmt::format("workload: expected router probabilities (a component needs the top-{} "
                    "scores), found a trace without them",
                    p_));
  }
  if (p_ > 0 && in.probs == ProbsStorage::kTopP && in.top_p < p_) {
    // Beyond the stored top-p the dense probabilities are zeros, not the
    // router's values: keep only what the trace holds, and say so.
    short_of_top_p_ = p_;
    p_ = in.top_p;
  }
  info_ = in.sequences;
  const int64_t T = in.total_tokens();
  tokens_ = T;
  ids_.resize(T * L_ * k_);
  weights_.resize(T * L_ * k_);
  topp_ids_.resize(T * L_ * p_);
  topp_probs_.resize(T * L_ * p_);
  int64_t t = 0;
  TokenRecord rec;
  std::vector<int32_t> order(std::max<int64_t>(p_, 1));
  for (int64_t s = 0; s < int64_t(info_.size()); ++s) {
    seq_first_.push_back(t);
    auto r = src.open(s, p_ > 0 ? kProbs : kIdsWeights);
    while (r->next(rec)) {
      if ((t & 63) == 0) throw_if_cancelled();  // generating a long workload: SIGTERM stops it
      std::copy(rec.ids.begin(), rec.ids.end(), ids_.begin() + t * L_ * k_);
      std::copy(rec.weights.begin(), rec.weights.end(), weights_.begin() + t * L_ * k_);
      if (p_ > 0) {
        for (int64_t l = 0; l < L_; ++l) {
          if (rec.ids[l * k_] == kHoleId) {  // a hole: no scores either
            std::fill_n(topp_ids_.begin() + (t * L_ + l) * p_, p_, kHoleId);
            std::fill_n(topp_probs_.begin() + (t * L_ + l) * p_, p_, 0.0f);
            continue;
          }
          const float* pr = &rec.probs[l * E_];
          top_k_indices(pr, E_, p_, nullptr, order.data());
          for (int64_t j = 0; j < p_; ++j) {
            topp_ids_[(t * L_ + l) * p_ + j] = order[j];
            topp_probs_[(t * L_ + l) * p_ + j] = pr[order[j]];
          }
        }
      }
      ++t;
    }
  }
}

void StepRouting::fill_gates() const {
  GateFiller* f = filler_;
  filler_ = nullptr;
  f->fill(*this, gate_);
}

void StepRouting::refuse(int64_t l) const {
  throw InternalError(
      fmt::format("component '{}' read the routing of MoE layer {} before its gate ran "
                  "(revealed up to layer {}); only oracle components may look ahead",
                  reader_ ? *reader_ : std::string("?"), l, revealed_));
}

}  // namespace moebench
