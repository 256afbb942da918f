// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Which experts' weights are in GPU memory. Owned by the core; components
// read it through ResidencyView and change it only by returning decisions.
//
// Capacity is counted in expert slots (every routed expert of a model has
// the same size): `slots` per MoE layer, or one global pool of
// layers x slots shared by all layers. A slot is taken when a transfer into
// it is issued (the expert is then in flight) and freed on eviction. Pinned
// experts (being computed, or used by the token in flight when the strategy
// asks for that) are never offered to a cache policy as victims.

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "core/engine/lanes.h"

namespace moebench {

struct SlotRef {
  int32_t layer = -1;
  int32_t expert = -1;
};

class ResidencyView {
 public:
  virtual ~ResidencyView() = default;
  // Weights are on the GPU and usable now.
  virtual bool resident(int32_t layer, int32_t expert) const = 0;
  // A transfer into the GPU is queued or running.
  virtual bool in_flight(int32_t layer, int32_t expert) const = 0;
  // resident() || in_flight(): holds a slot.
  virtual bool cached(int32_t layer, int32_t expert) const = 0;
  // When the expert becomes usable: -inf if resident, its transfer's current
  // end if in flight, +inf otherwise.
  virtual double ready_ns(int32_t layer, int32_t expert) const = 0;
  // Experts holding a slot in `layer` (resident or in flight), any order.
  virtual std::span<const int32_t> holders(int32_t layer) const = 0;
  virtual int64_t capacity(
      int32_t layer) const = 0;                   // per-layer pool: its slots; global: the pool's
  virtual int64_t used(int32_t layer) const = 0;  // per-layer: that layer's; global: all
  virtual bool global_pool() const = 0;
  virtual bool pinned(int32_t layer, int32_t expert) const = 0;
  // Whether (layer, expert) holds a slot of the prefetch buffer (beside the
  // cache share) rather than of the cache share.
  virtual bool buffered(int32_t /*layer*/, int32_t /*expert*/) const { return false; }
};

// The GPU's expert slots of one run: per layer, the cache share and beside it
// the prefetch buffer (residency.prefetch_buffer: slots only prefetches fill,
// each expert leaving once its target gate has passed), or one global pool.
class Residency final : public ResidencyView {
 public:
  // `cache_slots` per layer (the cache share) and `buffer_slots` beside them;
  // together at most `experts` per layer. A global pool has no buffer.
  Residency(int32_t layers, int32_t experts, int64_t cache_slots, int64_t buffer_slots,
            bool global_pool);
  Residency(int32_t layers, int32_t experts, int64_t slots_per_layer, bool global_pool)
      : Residency(layers, experts, slots_per_layer, 0, global_pool) {}

  bool resident(int32_t l, int32_t e) const override { return state(l, e) == kResident; }
  bool in_flight(int32_t l, int32_t e) const override { return state(l, e) == kInFlight; }
  bool cached(int32_t l, int32_t e) const override { return state(l, e) != kAbsent; }
  double ready_ns(int32_t l, int32_t e) const override;
  std::span<const int32_t> holders(int32_t l) const override { return holders_[l]; }
  int64_t capacity(int32_t l) const override;
  int64_t used(int32_t l) const override;
  bool global_pool() const override { return global_; }
  bool pinned(int32_t l, int32_t e) const override { return pin_[idx(l, e)] > 0; }

  bool has_room(int32_t l) const { return used(l) < capacity(l); }
  int64_t slots_per_layer() const { return slots_; }
  // The prefetch buffer's slots per layer (0: none) and the cache share's, as
  // configured (with per-layer shares: the nominal share; see cache_share).
  int64_t buffer_slots() const { return buffer_; }
  int64_t cache_slots() const { return slots_ - buffer_; }
  // Per-layer cache shares of a per-layer pool (a placement's layer_shares):
  // layer l holds shares[l] experts in its cache share and beside them a
  // prefetch buffer of min(E - shares[l], buffer_slots()) slots. Only before
  // anything is placed. Empty: cache_slots() each.
  void set_cache_shares(const std::vector<int64_t>& shares);
  int64_t cache_share(int32_t l) const {
    return share_.empty() ? cache_slots() : share_[size_t(l)];
  }
  int64_t buffer_share(int32_t l) const { return buf_.empty() ? buffer_ : buf_[size_t(l)]; }
  // Whether (l, e) came in through the prefetch buffer (set with its load,
  // cleared when it leaves).
  bool buffered(int32_t l, int32_t e) const override { return buffered_[idx(l, e)] != 0; }
  void set_buffered(int32_t l, int32_t e, bool b) {
    uint8_t& f = buffered_[idx(l, e)];
    if (f != uint8_t(b)) buffered_count_[l] += b ? 1 : -1;
    f = b ? 1 : 0;
  }
  // Experts of layer l marked as in the prefetch buffer.
  int64_t buffered_in(int32_t l) const { return buffered_count_[l]; }
  // Whether a load into the prefetch buffer (buffer = true) or into the cache
  // share (false) finds a free slot of that share (loads into the
  // cache share once took the buffer's free slots, so a prefetch buffer that
  // prefetches nothing enlarged the cache). Without a buffer: has_room().
  bool has_room_in(int32_t l, bool buffer) const {
    if (buffer_ == 0) return has_room(l);
    return buffer ? buffered_count_[l] < buffer_share(l)
                  : used(l) - buffered_count_[l] < cache_share(l);
  }

  // --- mutations (engine only) ---
  void place(int32_t l, int32_t e);  // resident now (initial placement)
  void begin_transfer(int32_t l, int32_t e, int64_t xfer, double end_ns);
  // In-flight experts' ends are read from the link's queue from now on (its
  // times move as transfers are issued before or cancelled ahead of them);
  // without a link, the end given to begin_transfer / refresh.
  void read_ends_from(const Link* link) { link_ = link; }
  void complete(int32_t l, int32_t e);  // in flight -> resident
  // A resident expert's weights copied again (residency.recopy_from_layer):
  // in flight until the copy ends, keeping its slot.
  void refresh(int32_t l, int32_t e, int64_t xfer, double end_ns);
  void evict(int32_t l, int32_t e);
  int64_t transfer(int32_t l, int32_t e) const { return xfer_[idx(l, e)]; }
  void pin(int32_t l, int32_t e) { ++pin_[idx(l, e)]; }
  void unpin(int32_t l, int32_t e) { --pin_[idx(l, e)]; }

  // Eviction candidates for making room in `layer`: resident (not in
  // flight), unpinned experts of that layer's pool (all layers for a global pool).
  void candidates(int32_t layer, std::vector<SlotRef>* out) const;

 private:
  enum State : uint8_t { kAbsent = 0, kInFlight = 1, kResident = 2 };
  size_t idx(int32_t l, int32_t e) const { return size_t(l) * size_t(experts_) + size_t(e); }
  State state(int32_t l, int32_t e) const { return State(state_[idx(l, e)]); }
  void add_holder(int32_t l, int32_t e);
  void remove_holder(int32_t l, int32_t e);

  int32_t layers_, experts_;
  int64_t slots_;
  int64_t buffer_ = 0;
  bool global_;
  int64_t used_total_ = 0;
  std::vector<uint8_t> state_;
  std::vector<int32_t> pin_;
  std::vector<int64_t> xfer_;
  std::vector<double> end_;
  const Link* link_ = nullptr;
  std::vector<std::vector<int32_t>> holders_;
  std::vector<int32_t> pos_;  // position of (l, e) in holders_[l]
  std::vector<uint8_t> buffered_;
  std::vector<int64_t> buffered_count_;  // per layer
  std::vector<int64_t> share_, buf_;     // per-layer cache shares and buffers (empty: uniform)
};

}  // namespace moebench
