// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// MoE-Infinity (Xue et al., arXiv 2401.14361; public code read, not copied):
// request-level expert activation tracing. Each request's expert activation
// matrix (EAM: tokens routed to expert e of layer l so far) is matched
// against a collection of past requests' EAMs (the EAMC) to prefetch the
// experts the most similar past request used in later layers (prefetcher
// "activation-matrix"), and the current requests' EAMs rank what the cache
// keeps (cache "activation-aware"). docs/STRATEGIES.md, "MoE-Infinity".

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/engine/policy.h"

namespace moebench {

// The EAMs of the run's requests and the EAMC (tracer.cc).
class ActivationTracer {
 public:
  void reset(int32_t layers, int32_t experts);
  // Adds the calibration workload's requests (each sequence one EAM) to the
  // EAMC as its persistent part (never replaced), at most `capacity`.
  void load_collection(const TraceSource& calibration, int64_t capacity);
  // Counts the routing of ctx.layer of this step into its requests' EAMs
  // (once per step and layer, whoever calls first).
  void observe(const Context& ctx);
  // Requests that end with this step enter the EAMC: a free entry, else the
  // least matched of the entries added during the run (the code's rule).
  void finish_step(const Context& ctx);
  // The EAMC entry most similar to request `seq`'s EAM: the mean over the
  // layers the request has used so far of the cosine similarity of the two
  // rows (each row a distribution over experts); -1 if the EAMC is empty or
  // the request has used nothing. Counts the match (the entry's accesses).
  int64_t match(int64_t seq);
  // Request seq's EAM (L x E counts); empty before its first token.
  const std::vector<float>& eam(int64_t seq) const;
  const std::vector<float>& entry(int64_t i) const { return collection_[size_t(i)]; }
  int64_t entries() const { return int64_t(collection_.size()); }
  int64_t capacity() const { return capacity_; }
  int64_t accesses(int64_t i) const { return access_[size_t(i)]; }

 private:
  int32_t L_ = 0, E_ = 0;
  int64_t capacity_ = 0, persistent_ = 0;
  int64_t seen_step_ = -1, seen_layer_ = -1;
  std::unordered_map<int64_t, std::vector<float>> eams_;
  std::vector<std::vector<float>> collection_;
  std::vector<int64_t> access_;
  std::vector<float> empty_;
};

class ActivationMatrixPrefetcher : public Prefetcher {
 public:
  struct Params {
    int64_t capacity = 1000;  // EAMC entries (the code's trace_capacity)
    int64_t size = -1;        // requests per gate (-1: the model's top-k)
    int64_t lookahead = 0;    // layers ahead considered (0: all later layers)
    static const cfg::Schema<Params>& schema();
  };
  explicit ActivationMatrixPrefetcher(const Params& p) : p_(p) {}
  Needs needs(const ModelSpec&) const override {
    Needs n;
    n.calibration = true;
    return n;
  }
  void after_gate(const Context& ctx, std::vector<PrefetchRequest>& out) override;
  void after_step(const Context& ctx, std::vector<PrefetchRequest>& out) override;
  const ActivationTracer& tracer() const { return tracer_; }

 private:
  void ensure_ready(const Context& ctx);
  Params p_;
  bool ready_ = false;
  ActivationTracer tracer_;
  std::vector<float> score_;  // [L*E]
  std::vector<int64_t> order_;
  std::vector<int64_t> seqs_;
};

// Keeps the experts the current requests use most, the shallow layers'
// first: priority = (sum over the step's requests of the expert's share of
// its layer's row in the request's EAM) x (1 - l / (L + 1)); the victim has
// the lowest priority (ties: least recently used). An expert loaded in this
// step for a later layer and not used yet (a prefetch waiting for its
// layer) is evicted only when nothing else is left, as the code spares its
// current prefetch candidates.
class ActivationAwareCache : public CachePolicy {
 public:
  struct Params {
    bool layer_decay = true;  // weight by 1 - l / (L + 1)
    static const cfg::Schema<Params>& schema();
  };
  explicit ActivationAwareCache(const Params& p) : p_(p) {}
  void reset(const CacheSetup& s) override;
  void on_gate(const Context& ctx) override;
  void on_access(int32_t layer, const ActiveExpert& a, const Context&) override;
  void on_insert(int32_t layer, int32_t expert, const Context&) override;
  void after_step(const Context& ctx, std::vector<Swap>&) override;
  size_t victim(std::span<const SlotRef> c, SlotRef incoming, const Context& ctx) override;
  double priority(int32_t layer, int32_t expert, const Context& ctx) const;

 private:
  bool waiting(const SlotRef& s, const Context& ctx) const;
  // The priority of (layer, expert) over the step's sequences `seqs`, each
  // request's row sum of its EAM taken from sums[i] (NaN: computed there
  // first, so a victim() call sums each row once; the same doubles).
  double share(int32_t layer, int32_t expert, const std::vector<int64_t>& seqs, double* sums) const;
  std::vector<int64_t> seqs_;  // victim()'s: the step's sequences
  std::vector<double> sums_;   // victim()'s: [layer][i] row sum of seqs_[i]'s EAM (NaN: not yet)

  Params p_;
  int32_t L_ = 0, E_ = 0;
  uint64_t clock_ = 0;
  std::vector<uint64_t> last_;
  std::vector<int64_t> inserted_step_;  // [L*E]: the step of its last insertion
  std::vector<uint8_t> used_;           // [L*E]: used since then
  ActivationTracer tracer_;
};

}  // namespace moebench
