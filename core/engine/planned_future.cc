// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/planned_future.h"

#include <algorithm>

namespace moebench {

PlannedFuture::PlannedFuture(const RunRouting& run, const std::vector<StepPlan>& steps,
                             const RunPosition& at, bool in_turn)
    : run_(run),
      steps_(steps),
      at_(at),
      L_(int32_t(run.layers())),
      E_(int32_t(run.experts())),
      k_(int32_t(run.top_k())),
      in_turn_(in_turn) {
  uses_.assign(size_t(L_) * size_t(E_), {});
  for (int64_t s = 0; s < int64_t(steps_.size()); ++s) {
    for (int32_t l = 0; l < L_; ++l) {
      for (const auto& [seq, pos] : steps_[size_t(s)].tokens) {
        const int32_t* ids = run_.ids(run_.token(seq, pos), l);
        if (ids[0] == kHoleId) continue;  // a hole: no use
        for (int32_t j = 0; j < k_; ++j) {
          auto& u = uses_[size_t(l) * E_ + ids[j]];
          if (u.empty() || u.back() != s) u.push_back(s);
        }
      }
    }
  }
}

int64_t PlannedFuture::next_use(int32_t layer, int32_t expert) const {
  // Admitted one at a time, the current layer's experts not yet reached are
  // still to be used in this step.
  if (layer == at_.admitting_layer && at_.pending_rank[size_t(expert)] >= 0) return 0;
  const auto& u = uses_[size_t(layer) * E_ + expert];
  // The current step still counts for layers after the current one.
  const int64_t from = layer > at_.layer ? at_.step : at_.step + 1;
  const auto it = std::lower_bound(u.begin(), u.end(), from);
  return it == u.end() ? kNever : *it - at_.step;
}

int64_t PlannedFuture::use_position(int64_t offset, int32_t layer, int32_t expert) const {
  if (!in_turn_) return 0;  // a layer's experts are admitted together
  if (offset == 0 && layer == at_.admitting_layer) {
    const int32_t rank = at_.pending_rank[size_t(expert)];
    return rank >= 0 ? rank : kNever;
  }
  // The rank of its first (token, top-k rank) in that step and layer: the
  // order the engine admits the layer's experts in.
  const int64_t s = at_.step + offset;
  if (s < 0 || s >= int64_t(steps_.size()) || layer < 0 || layer >= L_) return kNever;
  int64_t rank = 0;
  std::vector<char> seen(size_t(E_), 0);
  for (const auto& [seq, pos] : steps_[size_t(s)].tokens) {
    const int32_t* ids = run_.ids(run_.token(seq, pos), layer);
    if (ids[0] == kHoleId) continue;
    for (int32_t j = 0; j < k_; ++j) {
      if (ids[j] == expert) return rank;
      if (!seen[size_t(ids[j])]) {
        seen[size_t(ids[j])] = 1;
        ++rank;
      }
    }
  }
  return kNever;
}

std::span<const ActiveExpert> PlannedFuture::active(int64_t offset, int32_t layer) const {
  const int64_t s = at_.step + offset;
  if (s < 0 || s >= int64_t(steps_.size()) || layer < 0 || layer >= L_) return {};
  if (active_step_ != s) {
    active_.assign(size_t(L_), {});
    active_step_ = s;
  }
  auto& out = active_[size_t(layer)];
  if (out.empty()) {
    std::vector<int32_t> work(size_t(E_), 0), best(size_t(E_), k_);
    std::vector<float> wsum(size_t(E_), 0);
    for (const auto& [seq, pos] : steps_[size_t(s)].tokens) {
      const int64_t t = run_.token(seq, pos);
      const int32_t* ids = run_.ids(t, layer);
      if (ids[0] == kHoleId) continue;  // a hole: no expert
      const float* w = run_.weights(t, layer);
      for (int32_t j = 0; j < k_; ++j) {
        ++work[size_t(ids[j])];
        wsum[size_t(ids[j])] += w[j];
        best[size_t(ids[j])] = std::min(best[size_t(ids[j])], j);
      }
    }
    for (int32_t e = 0; e < E_; ++e) {
      if (work[size_t(e)] > 0)
        out.push_back({e, work[size_t(e)], wsum[size_t(e)], best[size_t(e)]});
    }
  }
  return out;
}

}  // namespace moebench
