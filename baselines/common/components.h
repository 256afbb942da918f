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

// Adaptive Replacement Cache (Megiddo & Modha, FAST '03), one per MoE layer
// (Fate's expert cache, see arc.cc): T1 holds experts used once since they
// entered, T2 those used again; B1 and B2 remember the experts evicted from
// each; a use of a remembered expert moves the target size p of T1. The
// victim is taken in the incoming expert's layer, so that a global pool's
// per-layer shares (placement) stay as placed.
class ArcCache : public CachePolicy {
 public:
  struct Params {
    std::string adapt = "classic";  // "classic" or "fate-code" (the step of p)
    bool admit_prefetched = true;   // a used expert of the prefetch buffer enters T1
    static const cfg::Schema<Params>& schema();
  };
  explicit ArcCache(const Params& p) : p_(p) {}
  bool admits_prefetched() const override { return p_.admit_prefetched; }
  void reset(const CacheSetup& s) override;
  void on_access(int32_t layer, const ActiveExpert& a, const Context&) override;
  void on_insert(int32_t layer, int32_t expert, const Context&) override;
  void on_evict(int32_t layer, int32_t expert, const Context&) override;
  size_t victim(std::span<const SlotRef> c, SlotRef incoming, const Context&) override;

  // For tests: which list (l, e) is in (0 none, 1 T1, 2 T2, 3 B1, 4 B2), and a layer's p.
  int list_of(int32_t l, int32_t e) const { return list_[size_t(l) * E_ + e]; }
  double target_t1(int32_t l) const { return layer_[size_t(l)].p; }

 private:
  enum List : uint8_t { kNone = 0, kT1 = 1, kT2 = 2, kB1 = 3, kB2 = 4 };
  struct Layer {
    double p = 0;
    int64_t n[5] = {0, 0, 0, 0, 0};  // members of each list
    int64_t cap = 0;                 // the most experts T1 + T2 held at once: the cache size c
  };
  void move(int32_t l, int32_t e, List to);
  void drop_oldest(int32_t l, List from);
  Params p_;
  int32_t E_ = 0;
  uint64_t clock_ = 0;
  std::vector<uint8_t> list_;     // [L*E]
  std::vector<uint8_t> pending_;  // [L*E]: 0 none, 1 used after B1, 2 used after B2 (enters T2)
  std::vector<uint64_t> stamp_;   // [L*E]: when it entered its list (or was last used in it)
  std::vector<Layer> layer_;
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
  bool asks_later_layers() const override { return true; }
  struct Params {
    int64_t size = 1;
    int64_t distance = 1;
    bool decode_only = false;
    // The least-predicted experts whose predicted workloads add up to at
    // most this share of the layer's are copied at reduced precision
    // (Fate's INT2 for 30% of the votes); 0: none.
    double reduced_share = 0.0;
    static const cfg::Schema<Params>& schema();
  };
  explicit NextLayerPrefetcher(const Params& p) : p_(p) {}
  bool requests_reduced() const override { return p_.reduced_share > 0.0; }
  void after_gate(const Context& ctx, std::vector<PrefetchRequest>& out) override;
  double predict_gpu_ns(const Context& ctx) const override;
  int64_t max_per_layer() const override { return p_.size; }

 private:
  Params p_;
  std::vector<float> scores_;
  std::vector<int32_t> order_;
  std::vector<int32_t> low_;  // every predicted expert, least predicted first
  std::vector<char> reduced_;
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
