// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/trace/trace_workload.h"

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/util/error.h"

namespace moebench {

namespace {

// Whether `hash` is the model's routing hash, or the whole-spec hash older
// traces carry, of the model with its weights stored in any dtype: a trace
// recorded at bf16 routes the int4 model's tokens the same way.
bool same_routing_model(const std::string& hash, const ModelSpec& m) {
  if (hash == m.routing_hash() || hash == m.hash()) return true;
  const WeightDtype all[] = {WeightDtype::kBf16, WeightDtype::kFp16, WeightDtype::kInt8,
                             WeightDtype::kInt4};
  ModelSpec v = m;
  for (WeightDtype e : all) {
    for (WeightDtype d : all) {
      v.expert_dtype = e;
      v.dense_dtype = d;
      if (hash == v.hash()) return true;
    }
  }
  return false;
}

}  // namespace

void check_trace_model(const TraceInfo& in, const ModelSpec& m, const std::string& where,
                       bool warn_name) {
  if (in.moe_layers != m.moe_layers() || in.experts() != m.routed_experts ||
      in.top_k() != m.top_k) {
    throw Error(fmt::format(
        "{}: expected a trace of model '{}' ({} MoE layers, {} experts, top-{}), found '{}' "
        "({} layers, {} experts, top-{})",
        where, m.name, m.moe_layers(), m.routed_experts, m.top_k, in.model_name, in.moe_layers,
        in.experts(), in.top_k()));
  }
  if (!warn_name) return;
  // Same shape, other router: what a component recomputes from gate inputs
  // would follow the trace's router, not the model's.
  const RoutingConfig want = RoutingConfig::from_model(m);
  std::vector<std::string> differ;
  if (in.routing.function != want.function) {
    differ.push_back(fmt::format("routing {} (model: {})", to_string(in.routing.function),
                                 to_string(want.function)));
  }
  if (want.function != RoutingFunction::kSoftmaxTopK &&
      (in.routing.n_group != want.n_group || in.routing.topk_group != want.topk_group)) {
    differ.push_back(fmt::format("groups {}/{} (model: {}/{})", in.routing.topk_group,
                                 in.routing.n_group, want.topk_group, want.n_group));
  }
  if (in.routing.norm_topk_prob != want.norm_topk_prob) {
    differ.push_back(fmt::format("norm_topk_prob {} (model: {})", in.routing.norm_topk_prob,
                                 want.norm_topk_prob));
  }
  if (std::abs(in.routing.routed_scaling_factor - want.routed_scaling_factor) >
      1e-6 * want.routed_scaling_factor) {
    differ.push_back(fmt::format("routed_scaling_factor {} (model: {})",
                                 in.routing.routed_scaling_factor, want.routed_scaling_factor));
  }
  if (!differ.empty()) {
    std::fprintf(
        stderr,
        "warning: %s: the trace's router differs from model '%s': %s; its recorded routing is used "
        "as it is\n",
        where.c_str(), m.name.c_str(), fmt::format("{}", fmt::join(differ, ", ")).c_str());
  }
  // The hash of the routing-relevant spec (written since routing_hash), or
  // of the whole spec (older traces): how the experts are stored (int4 or
  // bf16) does not change which experts were routed.
  if (!in.model_name.empty() && in.model_name == m.name && !in.model_hash.empty() &&
      !same_routing_model(in.model_hash, m)) {
    std::fprintf(stderr,
                 "warning: %s: the trace's model_hash (%.12s) is not model '%s' as this case "
                 "configures it (%.12s): "
                 "it was recorded with other settings of the model's shape or router, or its "
                 "metadata was edited; its routing is used as it is\n",
                 where.c_str(), in.model_hash.c_str(), m.name.c_str(), m.routing_hash().c_str());
  }
  if (in.hole_rows > 0) {
    const int64_t rows = in.total_tokens() * in.moe_layers;
    std::fprintf(stderr,
                 "warning: %s: %lld of the trace's %lld (token, layer) rows are holes (rows its "
                 "log dropped): no "
                 "expert runs for them and no access is counted, so hit rates are over the other "
                 "rows; each run "
                 "reports the holes it met (routing_holes)\n",
                 where.c_str(), static_cast<long long>(in.hole_rows), static_cast<long long>(rows));
  }
  if (!in.model_name.empty() && in.model_name != m.name) {
    std::fprintf(stderr,
                 "warning: %s: the trace was recorded for model '%s', the case runs model '%s' "
                 "(same shape: %lld "
                 "MoE layers, %lld experts, top-%lld); its routing is used as it is\n",
                 where.c_str(), in.model_name.c_str(), m.name.c_str(),
                 static_cast<long long>(in.moe_layers), static_cast<long long>(in.experts()),
                 static_cast<long long>(in.top_k()));
  }
}

std::optional<TraceSelection::Problem> TraceSelection::check(const TraceInfo& in,
                                                             const std::string& where) const {
  const int64_t have = int64_t(in.sequences.size());
  if (sequences != kAll && sequences > have) {
    return Problem{"sequences", fmt::format("at most the {} sequences of trace '{}'", have, where),
                   std::to_string(sequences)};
  }
  for (int64_t s = 0; s < std::min(sequences, have); ++s) {
    const SequenceInfo& q = in.sequences[size_t(s)];
    if (std::min(q.prompt_len, prompt_cap) < q.prompt_len &&
        std::min(q.decode_len, decode_cap) > 0) {
      return Problem{
          "prompt_len",
          fmt::format(
              "a cap that keeps every recorded prompt whole while generated tokens are kept "
              "(trace '{}', sequence {} has a {}-token prompt; its generated tokens were routed "
              "with the whole prompt as context); set decode_len = 0 for a prefill-only study or "
              "raise prompt_len",
              where, s, q.prompt_len),
          std::to_string(prompt_cap)};
    }
  }
  return std::nullopt;
}

std::vector<SequenceInfo> TraceSelection::apply(const TraceInfo& in,
                                                const std::string& where) const {
  if (const auto p = check(in, where)) {
    throw Error(fmt::format("workload.{}: expected {}, found {}", p->key, p->expected, p->found));
  }
  const int64_t n = std::min(sequences, int64_t(in.sequences.size()));
  std::vector<SequenceInfo> out(size_t(std::max<int64_t>(n, 0)));
  for (int64_t s = 0; s < n; ++s) {
    out[size_t(s)].prompt_len = std::min(in.sequences[size_t(s)].prompt_len, prompt_cap);
    out[size_t(s)].decode_len = std::min(in.sequences[size_t(s)].decode_len, decode_cap);
  }
  return out;
}

namespace {

class SelectedSource : public TraceSource {
 public:
  SelectedSource(std::unique_ptr<TraceSource> base, std::vector<SequenceInfo> seqs)
      : base_(std::move(base)), info_(base_->info()) {
    info_.sequences = std::move(seqs);
  }
  const TraceInfo& info() const override { return info_; }
  const GateWeights* gate_weights() const override { return base_->gate_weights(); }
  std::string changed_since_open() const override { return base_->changed_since_open(); }
  std::string file_stamp() const override { return base_->file_stamp(); }
  std::unique_ptr<SequenceReader> open(int64_t seq, unsigned fields) const override {
    class Reader : public SequenceReader {
     public:
      Reader(std::unique_ptr<SequenceReader> r, int64_t n) : r_(std::move(r)), left_(n) {}
      bool next(TokenRecord& out) override {
        if (left_ <= 0) return false;
        --left_;
        return r_->next(out);
      }

     private:
      std::unique_ptr<SequenceReader> r_;
      int64_t left_;
    };
    // Prompt tokens come first; a shortened prompt keeps no decode tokens (apply() checks).
    return std::make_unique<Reader>(base_->open(seq, fields),
                                    info_.sequences.at(size_t(seq)).tokens());
  }

 private:
  std::unique_ptr<TraceSource> base_;
  TraceInfo info_;
};

}  // namespace

std::unique_ptr<TraceSource> select_trace(std::unique_ptr<TraceSource> base,
                                          const TraceSelection& sel, const std::string& where) {
  std::vector<SequenceInfo> seqs = sel.apply(base->info(), where);
  bool same = seqs.size() == base->info().sequences.size();
  for (size_t s = 0; same && s < seqs.size(); ++s) {
    same = seqs[s].prompt_len == base->info().sequences[s].prompt_len &&
           seqs[s].decode_len == base->info().sequences[s].decode_len;
  }
  if (same) return base;
  return std::make_unique<SelectedSource>(std::move(base), std::move(seqs));
}

}  // namespace moebench
