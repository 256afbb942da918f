// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// prefetcher = "mrs-next": the public HybriMoE code's prefetch.
#include <algorithm>

#include "baselines/hybrimoe/components.h"

namespace moebench {

void MrsNextPrefetcher::after_gate(const Context& ctx, std::vector<PrefetchRequest>& out) {
  if (!ready_) {
    scores_.reset(ctx.moe_layers, ctx.experts);
    ready_ = true;
  }
  scores_.update(ctx);
  if (ctx.phase != Phase::kDecode || p_.prefetch_size <= 0 || ctx.layer + 1 >= ctx.moe_layers)
    return;
  bool any_gpu = false;
  for (const auto& a : ctx.active) any_gpu = any_gpu || ctx.residency->cached(ctx.layer, a.expert);
  if (!any_gpu || !ctx.cost->has_gpu()) return;
  const int32_t next = ctx.layer + 1;
  // The code takes the top prefetch_size experts of layer l+1 by MRS score
  // over all experts and loads those not already on the GPU: a resident
  // top-scored expert uses up its place in the count (at a large cache the
  // top experts are mostly resident and little is prefetched).
  order_.resize(size_t(ctx.experts));
  for (int32_t e = 0; e < ctx.experts; ++e) order_[size_t(e)] = e;
  const size_t n = std::min<size_t>(size_t(p_.prefetch_size), order_.size());
  std::partial_sort(order_.begin(), order_.begin() + std::ptrdiff_t(n), order_.end(),
                    [&](int32_t a, int32_t b) {
                      const float x = scores_.score(next, a), y = scores_.score(next, b);
                      return x != y ? x > y : a < b;
                    });
  for (size_t i = 0; i < n; ++i) {
    if (!ctx.residency->cached(next, order_[i])) out.push_back({next, order_[i], 0});
  }
}

}  // namespace moebench
