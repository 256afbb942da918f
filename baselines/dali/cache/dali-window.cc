// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// cache = "dali-window": DALI's workload-aware cache replacement (Algorithm 2).
#include <algorithm>

#include "baselines/dali/components.h"

namespace moebench {

const cfg::Schema<DaliWindowCache::Params>& DaliWindowCache::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.cache");
    s.integer("w_size", &Params::w_size, "Window length in steps (tokens of a batch).",
              cfg::at_least(1))
        .integer("u_size", &Params::u_size,
                 "Experts swapped per window end (Mixtral: 1, Qwen/DeepSeek: 8).", cfg::at_least(0))
        .boolean("prefetched_first", &Params::prefetched_first,
                 "Evict experts that came in by prefetch before the window's members, so "
                 "prefetches do not displace the cache Algorithm 2 keeps (with "
                 "residency.prefetch_buffer: a separate buffer).")
        .enumeration(
            "swap", &Params::swap,
            {{"algorithm2", SwapRule::kAlgorithm2}, {"conditional", SwapRule::kConditional}},
            "When and what the window swaps: \"algorithm2\" (DALI Algorithm 2: at steps 0, w, "
            "2w, ... of a batch, the prefill being step 0, the u_size best outsiders replace the "
            "u_size worst members unconditionally) or \"conditional\" (after every w_size-th "
            "step, prefill counted, only where the outsider scored more than the member and "
            "above zero).");
    return s;
  }();
  return s;
}

void DaliWindowCache::reset(const CacheSetup& s) {
  setup_ = s;
  score_.assign(size_t(s.layers) * size_t(s.experts), 0);
  steps_.assign(size_t(s.layers), 0);
  origin_.assign(size_t(s.layers) * size_t(s.experts), 0);
  running_ = false;
}

void DaliWindowCache::on_insert(int32_t l, int32_t e, const Context&) {
  uint8_t& o = origin_[size_t(l) * setup_.experts + e];
  o = !running_ || o == 2 ? 0 : 1;  // placed or swapped in: a window member
}

void DaliWindowCache::on_evict(int32_t l, int32_t e, const Context&) {
  origin_[size_t(l) * setup_.experts + e] = 0;
}

void DaliWindowCache::on_gate(const Context& ctx) {
  running_ = true;
  for (const auto& a : ctx.active)
    score_[size_t(ctx.layer) * setup_.experts + a.expert] += a.tokens;
}

size_t DaliWindowCache::victim(std::span<const SlotRef> c, SlotRef, const Context&) {
  size_t best = 0;
  // Prefetched experts first (when prefetched_first), then the lowest score.
  auto key = [&](size_t i) {
    const size_t at = size_t(c[i].layer) * setup_.experts + c[i].expert;
    const int member = p_.prefetched_first && origin_[at] == 1 ? 0 : 1;
    return std::make_tuple(member, score_[at], c[i].layer, c[i].expert);
  };
  for (size_t i = 1; i < c.size(); ++i) {
    if (key(i) < key(best)) best = i;
  }
  return best;
}

void DaliWindowCache::after_layer(const Context& ctx, std::vector<Swap>& out) {
  const int32_t l = ctx.layer;
  const bool algorithm2 = p_.swap == SwapRule::kAlgorithm2;
  if (algorithm2) {
    // Algorithm 2's step index i within the batch: 0 for the prefill, d + 1 after decode step d.
    const int64_t i = ctx.phase == Phase::kPrefill ? 0 : ctx.decode_step + 1;
    if (i % p_.w_size != 0) return;
  } else if (++steps_[l] % p_.w_size != 0) {
    return;
  }
  const int32_t E = setup_.experts;
  int64_t* s = &score_[size_t(l) * E];
  std::vector<int32_t> in, res;
  for (int32_t e = 0; e < E; ++e) {
    uint8_t& o = origin_[size_t(l) * E + e];
    if (o == 2 && !ctx.residency->cached(l, e))
      o = 0;  // a proposed swap the core did not carry out
    if (!ctx.residency->cached(l, e)) {
      if (algorithm2 || s[e] > 0) in.push_back(e);
    } else if (ctx.residency->resident(l, e) && !ctx.residency->pinned(l, e) &&
               !(p_.prefetched_first && origin_[size_t(l) * E + e] == 1)) {
      res.push_back(e);  // window members only: the buffer's prefetched experts are not the cache's
    }
  }
  // Highest-scoring outsiders, lowest-scoring residents (ties: lower id); under
  // Algorithm 2 the TopK of the outsiders' scores includes unused (score 0) experts.
  std::stable_sort(in.begin(), in.end(), [&](int32_t a, int32_t b) { return s[a] > s[b]; });
  std::stable_sort(res.begin(), res.end(), [&](int32_t a, int32_t b) { return s[a] < s[b]; });
  const size_t u = std::min({size_t(p_.u_size), in.size(), res.size()});
  for (size_t i = 0; i < u; ++i) {
    if (algorithm2 || s[in[i]] > s[res[i]]) {
      out.push_back({SlotRef{l, res[i]}, SlotRef{l, in[i]}});
      origin_[size_t(l) * E + in[i]] = 2;  // enters as a window member
    }
  }
  std::fill(s, s + E, 0);
}

}  // namespace moebench
