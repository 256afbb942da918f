// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/residency.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/util/error.h"

namespace moebench {

Residency::Residency(int32_t layers, int32_t experts, int64_t cache_slots, int64_t buffer_slots,
                     bool global_pool)
    : layers_(layers),
      experts_(experts),
      slots_(std::min<int64_t>(experts, cache_slots + buffer_slots)),
      buffer_(slots_ - std::min<int64_t>(experts, cache_slots)),
      global_(global_pool) {
  const size_t n = size_t(layers) * size_t(experts);
  buffered_.assign(n, 0);
  buffered_count_.assign(size_t(layers), 0);
  state_.assign(n, kAbsent);
  pin_.assign(n, 0);
  xfer_.assign(n, -1);
  end_.assign(n, 0.0);
  pos_.assign(n, -1);
  holders_.resize(layers);
}

double Residency::ready_ns(int32_t l, int32_t e) const {
  switch (state(l, e)) {
    case kResident:
      return -std::numeric_limits<double>::infinity();
    case kInFlight:
      return link_ ? link_->get(xfer_[idx(l, e)]).end_ns : end_[idx(l, e)];
    case kAbsent:
      return std::numeric_limits<double>::infinity();
  }
  return 0;
}

int64_t Residency::capacity(int32_t l) const {
  if (global_) return int64_t(layers_) * slots_;
  return share_.empty() ? slots_ : share_[size_t(l)] + buf_[size_t(l)];
}

void Residency::set_cache_shares(const std::vector<int64_t>& shares) {
  if (global_ || used_total_ > 0 || int64_t(shares.size()) != layers_) {
    throw InternalError(fmt::format(
        "residency: per-layer cache shares need a per-layer pool, nothing placed and {} "
        "layers (found {}{})",
        layers_, shares.size(), global_ ? ", a global pool" : ""));
  }
  share_ = shares;
  buf_.assign(shares.size(), 0);
  for (size_t l = 0; l < shares.size(); ++l) {
    buf_[l] = std::min<int64_t>(experts_, shares[l] + buffer_) - shares[l];
  }
}

int64_t Residency::used(int32_t l) const {
  return global_ ? used_total_ : int64_t(holders_[l].size());
}

void Residency::add_holder(int32_t l, int32_t e) {
  if (!has_room(l)) {
    throw InternalError(
        fmt::format("residency: no free slot in layer {} for expert {} ({} of {} used)", l, e,
                    used(l), capacity(l)));
  }
  pos_[idx(l, e)] = int32_t(holders_[l].size());
  holders_[l].push_back(e);
  ++used_total_;
}

void Residency::remove_holder(int32_t l, int32_t e) {
  auto& h = holders_[l];
  const int32_t p = pos_[idx(l, e)];
  const int32_t last = h.back();
  h[p] = last;
  pos_[idx(l, last)] = p;
  h.pop_back();
  pos_[idx(l, e)] = -1;
  --used_total_;
}

void Residency::place(int32_t l, int32_t e) {
  if (state(l, e) != kAbsent) return;
  add_holder(l, e);
  state_[idx(l, e)] = kResident;
}

void Residency::begin_transfer(int32_t l, int32_t e, int64_t xfer, double end_ns) {
  if (state(l, e) != kAbsent) {
    throw InternalError(
        fmt::format("residency: transfer of expert {} of layer {} which is already cached", e, l));
  }
  add_holder(l, e);
  state_[idx(l, e)] = kInFlight;
  xfer_[idx(l, e)] = xfer;
  end_[idx(l, e)] = end_ns;
}

void Residency::refresh(int32_t l, int32_t e, int64_t xfer, double end_ns) {
  if (state(l, e) != kResident) {
    throw InternalError(
        fmt::format("residency: copy again of expert {} of layer {} which is not resident", e, l));
  }
  state_[idx(l, e)] = kInFlight;
  xfer_[idx(l, e)] = xfer;
  end_[idx(l, e)] = end_ns;
}

void Residency::complete(int32_t l, int32_t e) {
  if (state(l, e) == kInFlight) state_[idx(l, e)] = kResident;
}

void Residency::evict(int32_t l, int32_t e) {
  if (state(l, e) == kAbsent) return;
  if (pinned(l, e))
    throw InternalError(fmt::format("residency: eviction of pinned expert {} of layer {}", e, l));
  remove_holder(l, e);
  state_[idx(l, e)] = kAbsent;
  xfer_[idx(l, e)] = -1;
  set_buffered(l, e, false);
}

void Residency::candidates(int32_t layer, std::vector<SlotRef>* out) const {
  out->clear();
  auto scan = [&](int32_t l) {
    for (int32_t e : holders_[l]) {
      if (state(l, e) == kResident && pin_[idx(l, e)] == 0) out->push_back({l, e});
    }
  };
  if (global_) {
    for (int32_t l = 0; l < layers_; ++l) scan(l);
  } else {
    scan(layer);
  }
}

}  // namespace moebench
