// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Generic components every system builds on: the "none" of each family,
// simple placements and the classic cache policies. One .cc file per
// component, named like its registry key.

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/policy.h"
#include "core/policy/component_util.h"

namespace moebench {

struct NoneTag {
  static constexpr const char* kSection = "strategy.component";
};

// ---- placement
class NonePlacement : public Placement {
 public:
  using Params = EmptyParams<NoneTag>;
  explicit NonePlacement(const Params&) {}
  void place(const PlacementContext&, std::vector<SlotRef>&) override;
};

class UniformPlacement : public Placement {
 public:
  struct Params {
    int64_t per_layer = -1;
    static const cfg::Schema<Params>& schema();
  };
  explicit UniformPlacement(const Params& p) : p_(p) {}
  void place(const PlacementContext& ctx, std::vector<SlotRef>& out) override;

 private:
  Params p_;
};

// ---- cache
class NoneCache : public CachePolicy {
 public:
  using Params = EmptyParams<NoneTag>;
  explicit NoneCache(const Params&) {}
  size_t victim(std::span<const SlotRef>, SlotRef, const Context&) override;
};

// Least recently used: every activation and every insertion refreshes an
// expert; the victim is the candidate touched longest ago.
class LruCache : public CachePolicy {
 public:
  using Params = EmptyParams<NoneTag>;
  explicit LruCache(const Params&) {}
  void reset(const CacheSetup& s) override;
  void on_access(int32_t layer, const ActiveExpert& a, const Context&) override;
  void on_insert(int32_t layer, int32_t expert, const Context&) override;
  size_t victim(std::span<const SlotRef> c, SlotRef incoming, const Context&) override;

 private:
  int32_t E_ = 0;
  uint64_t clock_ = 0;
  std::vector<uint64_t> last_;  // [L*E]
};

// Least frequently used: counts activations (per step, or tokens routed);
// the victim has the smallest count (ties: least recently used, then lower id).
class LfuCache : public CachePolicy {
 public:
  struct Params {
    std::string count =
        "steps";  // "steps": +1 per step the expert is activated; "tokens": + its tokens
    bool reset_on_evict = false;  // forget an expert's count when it leaves the cache
    static const cfg::Schema<Params>& schema();
  };
  explicit LfuCache(const Params& p) : p_(p) {}
  void reset(const CacheSetup& s) override;
  void on_access(int32_t layer, const ActiveExpert& a, const Context&) override;
  void on_insert(int32_t layer, int32_t expert, const Context&) override;
  void on_evict(int32_t layer, int32_t expert, const Context&) override;
  size_t victim(std::span<const SlotRef> c, SlotRef incoming, const Context&) override;

 private:
  Params p_;
  int32_t E_ = 0;
  uint64_t clock_ = 0;
  std::vector<int64_t> count_;
  std::vector<uint64_t> last_;
};

// ---- prefetcher, predictor, deferral
class NonePrefetcher : public Prefetcher {
 public:
  using Params = EmptyParams<NoneTag>;
  explicit NonePrefetcher(const Params&) {}
};

// Loads the predictor's top experts of a later layer (see next-layer.cc).
class NextLayerPrefetcher : public Prefetcher {
 public:
  bool predicts() const override { return true; }
  struct Params {
    int64_t size = 1;
    int64_t distance = 1;
    bool decode_only = false;
    static const cfg::Schema<Params>& schema();
  };
  explicit NextLayerPrefetcher(const Params& p) : p_(p) {}
  void after_gate(const Context& ctx, std::vector<PrefetchRequest>& out) override;
  double predict_gpu_ns(const Context& ctx) const override;
  int64_t max_per_layer() const override { return p_.size; }

 private:
  Params p_;
  std::vector<float> scores_;
  std::vector<int32_t> order_;
};

class NonePredictor : public Predictor {
 public:
  using Params = EmptyParams<NoneTag>;
  explicit NonePredictor(const Params&) {}
  void predict(const Context&, int32_t, int64_t, std::span<float> scores) override;
};

class NoneDeferral : public Deferral {
 public:
  using Params = EmptyParams<NoneTag>;
  explicit NoneDeferral(const Params&) {}
  void choose(const Context&, std::vector<int32_t>&) override {}
};

}  // namespace moebench
