// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The engine's link: loads on demand and ahead, prefetches, swaps, the prefetch buffer
// (core/engine/engine_impl.h).
#include "core/engine/engine_impl.h"

namespace moebench {
namespace engine_impl {

void Engine::advance_link(double now) {
  sc_.completed.clear();
  link_.advance(now, &sc_.completed);
  for (int64_t id : sc_.completed) {
    const Transfer& t = link_.get(id);
    if (!t.staging && res_.in_flight(t.layer, t.expert) && res_.transfer(t.layer, t.expert) == id) {
      res_.complete(t.layer, t.expert);
    }
    log_.add_copy(t, id);
  }
}

SlotRef Engine::make_room(int32_t layer, int32_t expert, double now,
                          const std::vector<int32_t>& extra_pinned, bool into_buffer) {
  if (res_.has_room_in(layer, into_buffer)) return SlotRef{-2, -2};  // free slot, nothing evicted
  res_.candidates(layer, &sc_.cand);
  // In a walk over the layer's GPU order, an expert already computed in this
  // layer may give up its slot even while its own copy is still counted as
  // in flight: the next copy into that slot waits for the computation.
  for (int32_t e : sc_.computed) {
    if (res_.in_flight(layer, e) && !res_.pinned(layer, e)) sc_.cand.push_back({layer, e});
  }
  if (res_.buffer_slots() > 0) {
    // A share's load evicts from that share only.
    std::erase_if(sc_.cand, [&](const SlotRef& c) {
      return res_.buffered(c.layer, c.expert) != into_buffer;
    });
  }
  // Experts of `layer` the caller keeps are not offered (a stamp per expert
  // instead of pinning and unpinning each one).
  if (!extra_pinned.empty()) {
    if (++sc_.keep_epoch == 0) {
      std::fill(sc_.keep_stamp.begin(), sc_.keep_stamp.end(), 0u);
      sc_.keep_epoch = 1;
    }
    for (int32_t e : extra_pinned) sc_.keep_stamp[e] = sc_.keep_epoch;
    size_t w = 0;
    for (const SlotRef& c : sc_.cand) {
      if (c.layer != layer || sc_.keep_stamp[c.expert] != sc_.keep_epoch) sc_.cand[w++] = c;
    }
    sc_.cand.resize(w);
  }
  if (sc_.cand.empty()) return SlotRef{-1, -1};
  size_t v = 0;
  Context& ctx = hook_ctx_;
  ctx.now_ns = now;
  timed(kFamCache, [&] { v = st_.cache->victim(sc_.cand, SlotRef{layer, expert}, ctx); });
  if (v >= sc_.cand.size()) {
    bad_decision("cache", fmt::format("victim index {} of {} candidates", v, sc_.cand.size()));
  }
  const SlotRef out = sc_.cand[v];
  res_.evict(out.layer, out.expert);
  st_.cache->on_evict(out.layer, out.expert, ctx);
  prefetch_of_[size_t(out.layer) * E_ + out.expert] = -1;
  return out;
}

int64_t Engine::load(int32_t layer, int32_t expert, TaskKind kind, double issue, double earliest,
                     bool staging, int64_t target_step, int32_t target_layer, bool evicts_cached,
                     bool reduced_asked) {
  Transfer t;
  t.layer = layer;
  t.expert = expert;
  t.kind = kind;
  t.issue_ns = issue;
  t.earliest_ns = earliest;
  // A full-precision host-to-device copy, as the strategy's copy variants
  // shape it (core/engine/variants/).
  CopyRequest req;
  req.kind = kind;
  req.reduced_asked = reduced_asked;
  req.evicts_cached = evicts_cached;
  copies_.price(t, req, cost_, lanes_.gpu.free_ns());
  if (t.reduced) ++m_.reduced_copies;
  if (t.writeback) ++m_.writeback_copies;
  t.staging = staging;
  t.step = pos_.step;
  t.target_step = target_step;
  t.target_layer = target_layer;
  // Issuing may move the transfers queued behind it: the residency reads
  // their ends from the link (Residency::read_ends_from).
  const int64_t id = link_.issue(t);
  if (kind == TaskKind::kRecopy) {  // already cached: in flight again, the cache not told
    res_.refresh(layer, expert, id, link_.get(id).end_ns);
  } else if (!staging) {
    res_.set_buffered(layer, expert, kind == TaskKind::kPrefetchLoad && res_.buffer_slots() > 0);
    res_.begin_transfer(layer, expert, id, link_.get(id).end_ns);
    hook_ctx_.now_ns = issue;
    st_.cache->on_insert(layer, expert, hook_ctx_);
  }
  m_.h2d_bytes += t.bytes;
  switch (kind) {
    case TaskKind::kDemandLoad:
      ++m_.demand_loads;
      break;
    case TaskKind::kPrefetchLoad:
      ++m_.prefetch_loads;
      ++m_.prefetch_layer_loads[layer];
      break;
    case TaskKind::kBufferCopy:
      ++m_.buffer_copies;
      break;
    case TaskKind::kRecopy:
      ++m_.recopies;
      break;
    default:
      ++m_.swap_loads;
      break;
  }
  if (staging && kind != TaskKind::kBufferCopy) ++m_.staging_loads;
  return id;
}

bool Engine::lands_too_late(const PrefetchRequest& r, double now) const {
  const double dt = gates_.interval_ns();
  if (!(dt >= 0) || gates_.cur.empty()) return false;  // no estimate yet: issue
  // From the current layer's gate; after the last layer (the step's end,
  // pos_.layer = L_) from now, the next step's first gate about one interval on.
  const bool step_end = pos_.layer >= L_;
  const double ref = step_end ? now : gates_.cur[size_t(pos_.layer)];
  if (!(ref >= 0)) return false;
  const double layers_ahead = double(r.target_step_offset) * double(L_) +
                              double(r.layer - pos_.layer) + (step_end ? 1.0 : 0.0);
  PrefetchLanding p;
  p.gate_ns = ref + layers_ahead * dt;
  p.demand_copy_ns = demand_copy_ns();
  p.lands_ns =
      std::max(now, link_.free_ns()) + copies_.copy_ns(TaskKind::kPrefetchLoad, r.reduced, cost_);
  return late_->too_late(p);
}

void Engine::issue_prefetches(const std::vector<PrefetchRequest>& reqs, double now) {
  const bool drop_late = late_->drops();
  for (const auto& r : reqs) {
    if (r.layer < 0 || r.layer >= L_ || r.expert < 0 || r.expert >= E_ ||
        r.target_step_offset < 0) {
      bad_decision("prefetcher", fmt::format("requested expert {} of layer {} (step offset {})",
                                             r.expert, r.layer, r.target_step_offset));
    }
    if (res_.cached(r.layer, r.expert)) continue;  // already there or on its way
    // The prefetch rule (residency.late_prefetch, core/engine/variants/
    // late_prefetch.h): a copy that lands too late is dropped before it
    // evicts anything.
    if (drop_late && lands_too_late(r, now)) {
      ++m_.prefetch_dropped_late;
      continue;
    }
    // The experts the current layer uses stay; so do the other requests' targets.
    sc_.pinned_now.clear();
    for (const auto& q : reqs) {
      if (q.layer == r.layer && res_.resident(q.layer, q.expert))
        sc_.pinned_now.push_back(q.expert);
    }
    const SlotRef freed =
        make_room(r.layer, r.expert, now, sc_.pinned_now, res_.buffer_slots() > 0);
    if (freed.layer == -1) continue;  // nothing may be evicted: drop the request
    // An expert evicted from the cache share, not one leaving the prefetch buffer.
    load(r.layer, r.expert, TaskKind::kPrefetchLoad, now, now, false,
         pos_.step + r.target_step_offset, r.layer, freed.layer >= 0 && res_.buffer_slots() == 0,
         r.reduced);
    prefetch_of_[size_t(r.layer) * E_ + r.expert] = pos_.step + r.target_step_offset;
  }
}

void Engine::issue_swaps(const std::vector<CachePolicy::Swap>& swaps, double now,
                         const std::string& hook, int32_t layer) {
  for (const auto& s : swaps) {
    const SlotRef in = s.incoming, out = s.outgoing;
    if (in.layer < 0 || in.layer >= L_ || in.expert < 0 || in.expert >= E_) {
      bad_decision("cache",
                   fmt::format("{} swap loads expert {} of layer {}", hook, in.expert, in.layer));
    }
    if (res_.cached(in.layer, in.expert)) continue;
    if (s.on_device &&
        (layer < 0 || in.layer != layer ||
         std::find(dec_.plan.gpu.begin(), dec_.plan.gpu.end(), in.expert) == dec_.plan.gpu.end())) {
      bad_decision(
          "cache",
          fmt::format("{} swap takes expert {} of layer {} from GPU memory (on_device), but "
                      "it did not run on the GPU in this layer{}",
                      hook, in.expert, in.layer,
                      layer < 0 ? fmt::format(" (on_device swaps come after a layer, "
                                              "not from {})",
                                              hook)
                                : fmt::format(" (layer {})", layer)));
    }
    if (out.layer >= 0) {
      if (!res_.resident(out.layer, out.expert) || res_.pinned(out.layer, out.expert)) {
        bad_decision(
            "cache",
            fmt::format("{} swap evicts expert {} of layer {}, which is not resident and unpinned",
                        hook, out.expert, out.layer));
      }
      if (!res_.global_pool() && out.layer != in.layer) {
        bad_decision(
            "cache",
            fmt::format("{} swap moves a slot from layer {} to layer {} in a per-layer pool", hook,
                        out.layer, in.layer));
      }
      if (res_.buffered(out.layer, out.expert)) {
        bad_decision(
            "cache",
            fmt::format("{} swap evicts expert {} of layer {} from the prefetch buffer (a swap "
                        "exchanges experts of the cache share)",
                        hook, out.expert, out.layer));
      }
      Context ctx = context(out.layer, now);
      res_.evict(out.layer, out.expert);
      st_.cache->on_evict(out.layer, out.expert, ctx);
      prefetch_of_[size_t(out.layer) * E_ + out.expert] = -1;
    } else if (!res_.has_room_in(in.layer, false)) {
      bad_decision(
          "cache",
          fmt::format("{} swap loads expert {} of layer {} without evicting, but the {} is full",
                      hook, in.expert, in.layer, res_.buffer_slots() > 0 ? "cache share" : "pool"));
    }
    if (s.on_device) {
      // A copy inside GPU memory (its time, bytes over HBM bandwidth, is not
      // charged: microseconds for an expert), no link transfer.
      res_.place(in.layer, in.expert);
      Context ctx = context(in.layer, now);
      st_.cache->on_insert(in.layer, in.expert, ctx);
      ++m_.device_swaps;
      continue;
    }
    load(in.layer, in.expert, TaskKind::kSwapLoad, now, now, false, -1, -1, out.layer >= 0);
  }
}

// The prefetch buffer is used once: its experts of this layer whose target
// gate has passed leave now. A copy not started yet is cancelled; one
// already on the link is abandoned (the link finishes it, the slot is
// free for the next prefetch). One loaded for a later step (token-wise)
// stays.
void Engine::release_prefetch_buffer(int32_t l, double gpu_end) {
  advance_link(gpu_end);  // copies that landed while the layer computed are resident now
  Context c = context(l, gpu_end);
  const bool admit = st_.cache->admits_prefetched();
  const Context saved = hook_ctx_;
  if (admit) hook_ctx_ = c;  // make_room's victim() reads it
  for (int32_t e : std::vector<int32_t>(res_.holders(l).begin(), res_.holders(l).end())) {
    if (!res_.buffered(l, e) || res_.pinned(l, e) || prefetch_of_[size_t(l) * E_ + e] >= 0)
      continue;
    // A cache that admits what its layer used (CachePolicy::admits_prefetched)
    // takes the expert into the cache share, evicting its victim there when
    // the share is full; with nothing evictable the expert leaves.
    if (admit && res_.resident(l, e) && activated(l, e) &&
        make_room(l, e, gpu_end, {}, /*into_buffer=*/false).layer != -1) {
      res_.set_buffered(l, e, false);
      st_.cache->on_insert(l, e, c);
      ++m_.prefetch_admitted;
      continue;
    }
    if (res_.in_flight(l, e) && link_.cancel(res_.transfer(l, e), gpu_end)) {
      ++m_.prefetch_cancelled;
      m_.h2d_bytes -= link_.get(res_.transfer(l, e)).bytes;  // a cancelled copy moves nothing
    }
    res_.evict(l, e);  // clears its buffered mark
    st_.cache->on_evict(l, e, c);
  }
  if (admit) hook_ctx_ = saved;
}

// A copy variant that copies computed experts again (core/engine/variants/
// recopy.cc): each expert the layer computed on the GPU that stays in the
// cache share is copied again, whole, when the layer's GPU work is done; until
// it lands the expert is in flight (a later use waits for it; it cannot be
// evicted meanwhile).
void Engine::recopy_computed(int32_t l, double gpu_end) {
  if (!copies_.recopies_after(l)) return;
  advance_link(gpu_end);  // copies that landed while the layer computed are resident now
  for (int32_t e : dec_.plan.gpu) {
    if (!res_.resident(l, e) || res_.buffered(l, e)) continue;
    load(l, e, TaskKind::kRecopy, gpu_end, gpu_end, false, pos_.step, l);
  }
}

// Queued prefetches for layers that have now started are useless.
void Engine::cancel_stale_prefetches(int32_t l, double t_gate) {
  if (!st_.residency.cancel_stale_prefetch) return;
  for (int64_t q : std::vector<int64_t>(link_.queue().begin(), link_.queue().end())) {
    const Transfer& t = link_.get(q);
    if (t.kind != TaskKind::kPrefetchLoad || t.target_step != pos_.step || t.target_layer > l)
      continue;
    if (link_.cancel(q, t_gate)) {
      ++m_.prefetch_cancelled;
      m_.h2d_bytes -= t.bytes;  // a cancelled copy moves nothing
      if (res_.in_flight(t.layer, t.expert) && res_.transfer(t.layer, t.expert) == q) {
        Context c = context(t.layer, t_gate);
        res_.evict(t.layer, t.expert);
        st_.cache->on_evict(t.layer, t.expert, c);
      }
    }
  }
}

}  // namespace engine_impl
}  // namespace moebench
