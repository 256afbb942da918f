// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// cache = "arc": the Adaptive Replacement Cache of Megiddo & Modha (FAST '03)
// per MoE layer, as Fate (arXiv 2502.12224) manages each layer's expert
// cache. Mapping of ARC's request onto the core's hooks:
//   on_access: a use. In T1 -> T2; in T2 -> T2's most recent end. A use of
//     an expert remembered in B1 raises p (T1's target size), in B2 lowers
//     it; the expert leaves the ghost list and enters T2 when it is loaded.
//     Any other expert enters T1 when it is loaded (and one that is computed
//     elsewhere, never loaded, changes nothing).
//   on_insert: placement, loads and prefetches enter T1 (T2 after a ghost hit);
//     a prefetch into the prefetch buffer does not, until the core admits it
//     (admits_prefetched: its layer used it) into the cache share.
//   victim: ARC's REPLACE among the candidates of the incoming expert's layer:
//     T1's least recent if |T1| > p (or |T1| = p and the incoming expert
//     came from B2), else T2's least recent; the other list when the chosen
//     one has no candidate (pinned or in flight).
//   on_evict: T1 -> B1, T2 -> B2; then B1 is cut to c - |T1| and both ghost
//     lists to 2c in all, least recent first (c: the most experts the layer's
//     T1 and T2 held at once).
// adapt = "classic": p moves by max(1, |B2| / |B1|) after a B1 hit and
// max(1, |B1| / |B2|) after a B2 hit (the ARC paper). "fate-code": by |T1|
// and |T2| (min with c), the step Fate's public code takes (read, not copied).
#include <algorithm>

#include "baselines/common/components.h"

namespace moebench {

const cfg::Schema<ArcCache::Params>& ArcCache::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.cache");
    s.choice("adapt", &Params::adapt, {"classic", "fate-code"},
             "Step of T1's target size after a ghost hit: the ARC paper's (max(1, |B2|/|B1|)), "
             "or Fate's code's (|T1| after a B1 hit, |T2| after a B2 hit).")
        .boolean("admit_prefetched", &Params::admit_prefetched,
                 "With a prefetch buffer: an expert prefetched into it and used by its layer "
                 "enters the cache (T1) when the layer is done, as every accessed expert does in "
                 "ARC (Fate's code updates the ARC with the layer's routed experts).");
    return s;
  }();
  return s;
}

void ArcCache::reset(const CacheSetup& s) {
  E_ = s.experts;
  const size_t n = size_t(s.layers) * size_t(s.experts);
  list_.assign(n, kNone);
  pending_.assign(n, 0);
  stamp_.assign(n, 0);
  layer_.assign(size_t(s.layers), Layer{});
  clock_ = 1;
}

void ArcCache::move(int32_t l, int32_t e, List to) {
  const size_t i = size_t(l) * E_ + e;
  Layer& L = layer_[size_t(l)];
  --L.n[list_[i]];
  ++L.n[to];
  list_[i] = to;
  stamp_[i] = clock_++;
  L.cap = std::max(L.cap, L.n[kT1] + L.n[kT2]);
}

void ArcCache::drop_oldest(int32_t l, List from) {
  int32_t best = -1;
  for (int32_t e = 0; e < E_; ++e) {
    const size_t i = size_t(l) * E_ + e;
    if (list_[i] == from && (best < 0 || stamp_[i] < stamp_[size_t(l) * E_ + best])) best = e;
  }
  if (best >= 0) move(l, best, kNone);
}

void ArcCache::on_access(int32_t layer, const ActiveExpert& a, const Context&) {
  const size_t i = size_t(layer) * E_ + a.expert;
  Layer& L = layer_[size_t(layer)];
  const double c = double(std::max<int64_t>(1, L.cap));
  switch (list_[i]) {
    case kT1:
    case kT2:
      move(layer, a.expert, kT2);
      break;
    case kB1: {
      const double step = p_.adapt == "classic" ? std::max(1.0, double(L.n[kB2]) / double(L.n[kB1]))
                                                : std::min(double(L.n[kT1]), c);
      L.p = std::min(c, L.p + step);
      move(layer, a.expert, kNone);
      pending_[i] = 1;
      break;
    }
    case kB2: {
      const double step = p_.adapt == "classic" ? std::max(1.0, double(L.n[kB1]) / double(L.n[kB2]))
                                                : std::min(double(L.n[kT2]), c);
      L.p = std::max(0.0, L.p - step);
      move(layer, a.expert, kNone);
      pending_[i] = 2;
      break;
    }
    default:
      pending_[i] =
          0;  // a plain miss: it enters T1 if it is loaded (an earlier ghost hit is spent)
      break;
  }
}

void ArcCache::on_insert(int32_t layer, int32_t expert, const Context& ctx) {
  const size_t i = size_t(layer) * E_ + expert;
  if (list_[i] == kT1 || list_[i] == kT2) return;
  // A prefetch into the buffer beside the cache is not in the cache (yet).
  if (ctx.residency && ctx.residency->buffered(layer, expert)) return;
  // A prefetch of a remembered expert before any use: it leaves the ghost
  // list without moving p (only a use is a ghost hit).
  move(layer, expert, pending_[i] ? kT2 : kT1);
  pending_[i] = 0;
}

void ArcCache::on_evict(int32_t layer, int32_t expert, const Context&) {
  const size_t i = size_t(layer) * E_ + expert;
  if (list_[i] != kT1 && list_[i] != kT2) return;
  move(layer, expert, list_[i] == kT1 ? kB1 : kB2);
  Layer& L = layer_[size_t(layer)];
  while (L.n[kT1] + L.n[kB1] > L.cap && L.n[kB1] > 0) drop_oldest(layer, kB1);
  while (L.n[kT1] + L.n[kT2] + L.n[kB1] + L.n[kB2] > 2 * L.cap) {
    drop_oldest(layer, L.n[kB2] > 0 ? kB2 : kB1);
  }
}

size_t ArcCache::victim(std::span<const SlotRef> c, SlotRef incoming, const Context&) {
  // The candidates of the incoming expert's layer, if any (a global pool offers every layer's).
  bool own = false;
  for (const SlotRef& s : c) own = own || s.layer == incoming.layer;
  const int32_t l = incoming.layer;
  const Layer& L = layer_[size_t(std::max(0, l))];
  const bool from_b2 = l >= 0 && pending_[size_t(l) * E_ + incoming.expert] == 2;
  const int64_t t1 = L.n[kT1];
  const bool classic = p_.adapt == "classic";
  const bool take_t1 = t1 > 0 && (double(t1) > L.p || (classic && from_b2 && double(t1) == L.p));
  size_t best[2] = {c.size(), c.size()};  // least recent candidate in T1 (0) and T2 (1)
  for (size_t k = 0; k < c.size(); ++k) {
    if (own && c[k].layer != l) continue;
    const size_t i = size_t(c[k].layer) * E_ + c[k].expert;
    const int which = list_[i] == kT2 ? 1 : 0;  // an expert in no list counts as T1
    if (best[which] == c.size() ||
        stamp_[i] < stamp_[size_t(c[best[which]].layer) * E_ + c[best[which]].expert]) {
      best[which] = k;
    }
  }
  const int first = take_t1 ? 0 : 1;
  return best[first] != c.size() ? best[first] : best[1 - first];
}

}  // namespace moebench
