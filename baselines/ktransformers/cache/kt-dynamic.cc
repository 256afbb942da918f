// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// cache = "kt-dynamic": KTransformers' dynamic expert update. Its SGLang MoE
// wrapper (read, not copied): when a step of at least the prefill threshold
// falls back to the GPU for the whole layer, the layer's GPU experts are
// replaced by the step's top experts by activation count (as many as the
// layer had), their weights copied from the temporary full-layer buffer to
// the layer's GPU slots, and the CPU/GPU masks updated; no PCIe transfer.
// Here: after a layer whose plan ran nothing on the CPU (the fallback, or a
// step whose experts were all resident, which brings none in), the
// activated experts ranked by tokens (ties:
// the lower id), experts resident now but not activated after them; each
// resident expert not among the top n leaves for one that is (on_device).
#include <algorithm>

#include "baselines/ktransformers/components.h"

namespace moebench {

void KtDynamicUpdateCache::after_layer(const Context& ctx, std::vector<Swap>& out) {
  // Only after a layer that ran whole on the GPU (the full-GPU fallback): a
  // step whose activated experts were all resident anyway brings none in.
  if (!ctx.plan || !ctx.plan->cpu.empty() || ctx.plan->gpu.empty()) return;
  const int32_t l = ctx.layer;
  const auto holders = ctx.residency->holders(l);
  const size_t n = holders.size();  // the layer's GPU experts now
  if (n == 0) return;
  tokens_.assign(size_t(ctx.experts), -1);  // -1: not activated
  for (const ActiveExpert& a : ctx.active) tokens_[size_t(a.expert)] = a.tokens;
  order_.clear();
  for (const ActiveExpert& a : ctx.active) order_.push_back(a.expert);
  for (int32_t e : holders) {
    if (tokens_[size_t(e)] < 0) order_.push_back(e);  // resident, not activated: after them
  }
  std::stable_sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
    return tokens_[size_t(a)] != tokens_[size_t(b)] ? tokens_[size_t(a)] > tokens_[size_t(b)]
                                                    : a < b;
  });
  order_.resize(std::min(n, order_.size()));
  keep_.assign(size_t(ctx.experts), 0);
  for (int32_t e : order_) keep_[size_t(e)] = 1;
  // Leaving: resident experts not among the top n that may be evicted now
  // (not in flight, not pinned); coming: top experts not cached that ran on
  // the GPU in this layer (the only ones in GPU memory).
  std::vector<int32_t> leaving;
  for (int32_t e : holders) {
    if (!keep_[size_t(e)] && ctx.residency->resident(l, e) && !ctx.residency->pinned(l, e))
      leaving.push_back(e);
  }
  std::sort(leaving.begin(), leaving.end());
  size_t i = 0;
  for (int32_t e : order_) {
    if (i == leaving.size()) break;
    if (ctx.residency->cached(l, e) ||
        std::find(ctx.plan->gpu.begin(), ctx.plan->gpu.end(), e) == ctx.plan->gpu.end())
      continue;
    out.push_back({SlotRef{l, leaving[i++]}, SlotRef{l, e}, /*on_device=*/true});
  }
}

size_t KtDynamicUpdateCache::victim(std::span<const SlotRef>, SlotRef, const Context&) {
  return 0;
}

}  // namespace moebench
