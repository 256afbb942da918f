// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The workload of one run, materialised: every token's routing (ids,
// weights, top-p scores) for the whole run, so oracle components can look
// ahead, plus gate inputs streamed step by step when a component needs them.
//
// A step is either the prefill of a batch (all prompt tokens of its
// sequences) or one decode iteration (one token per sequence of the batch).
// StepRouting is the per-step view handed to components; it refuses reads of
// layers whose gate has not run yet unless the caller is an oracle.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/token_memo.h"
#include "core/trace/trace.h"

namespace moebench {

// Routing of every token of a run.
class RunRouting {
 public:
  // Reads every sequence of `src`. `top_p` scores per token and layer are
  // kept (0 = none); gate inputs are not kept here (see GateInputStream).
  RunRouting(const TraceSource& src, int64_t top_p);

  int64_t layers() const { return L_; }
  int64_t experts() const { return E_; }
  int64_t top_k() const { return k_; }
  int64_t top_p() const { return p_; }
  // Memory held, bytes (the routing cache's budget counts it).
  int64_t bytes() const {
    return int64_t(ids_.size() * sizeof(int32_t) + weights_.size() * sizeof(float) +
                   topp_ids_.size() * sizeof(int32_t) + topp_probs_.size() * sizeof(float) +
                   seq_first_.size() * sizeof(int64_t) + info_.size() * sizeof(SequenceInfo));
  }
  // The top-p a component asked for when the trace holds fewer router
  // probabilities per token and layer (top_p() is then what it holds); 0 otherwise.
  int64_t short_of_top_p() const { return short_of_top_p_; }
  int64_t sequences() const { return int64_t(seq_first_.size()); }
  const SequenceInfo& sequence(int64_t s) const { return info_[s]; }
  // Global token index of (sequence, position).
  int64_t token(int64_t seq, int64_t pos) const { return seq_first_[seq] + pos; }
  const int32_t* ids(int64_t token, int64_t layer) const {
    return &ids_[(token * L_ + layer) * k_];
  }
  const float* weights(int64_t token, int64_t layer) const {
    return &weights_[(token * L_ + layer) * k_];
  }
  const int32_t* topp_ids(int64_t token, int64_t layer) const {
    return &topp_ids_[(token * L_ + layer) * p_];
  }
  const float* topp_probs(int64_t token, int64_t layer) const {
    return &topp_probs_[(token * L_ + layer) * p_];
  }
  // The memo of per-token results shared with every case that shares this
  // routing (core/engine/token_memo.h); nullptr for a routing of one case.
  TokenMemo* memo() const { return memo_.get(); }
  // Gives the routing a memo (the routing cache, before sharing it).
  void enable_memo() { memo_ = std::make_unique<TokenMemo>(tokens_); }

 private:
  int64_t L_ = 0, E_ = 0, k_ = 0, p_ = 0, short_of_top_p_ = 0, tokens_ = 0;
  std::unique_ptr<TokenMemo> memo_;
  std::vector<SequenceInfo> info_;
  std::vector<int64_t> seq_first_;
  std::vector<int32_t> ids_;
  std::vector<float> weights_;
  std::vector<int32_t> topp_ids_;
  std::vector<float> topp_probs_;
};

class StepRouting;

// Writes a step's gate inputs when a component first reads them
// (core/engine/gate_stream.h).
class GateFiller {
 public:
  virtual ~GateFiller() = default;
  // The step's tokens' gate inputs, [token][layer][h_trace], into `out`.
  virtual void fill(const StepRouting& step, std::vector<float>& out) = 0;
};

// The tokens of one step and read access to their routing.
class StepRouting {
 public:
  StepRouting(const RunRouting& run, Phase phase) : run_(&run), phase_(phase) {}

  Phase phase() const { return phase_; }
  int64_t tokens() const { return int64_t(tok_.size()); }
  int64_t seq(int64_t t) const { return seq_[t]; }
  int64_t pos(int64_t t) const { return pos_[t]; }
  int64_t run_token(int64_t t) const { return tok_[t]; }
  const RunRouting& run() const { return *run_; }

  // Routing of step token t at MoE layer l (k ids in rank order, weights).
  // REQUIRES: l <= revealed_layer() unless oracle_view().
  const int32_t* ids(int64_t t, int64_t l) const {
    check(l);
    return run_->ids(tok_[t], l);
  }
  const float* weights(int64_t t, int64_t l) const {
    check(l);
    return run_->weights(tok_[t], l);
  }
  const int32_t* topp_ids(int64_t t, int64_t l) const {
    check(l);
    return run_->topp_ids(tok_[t], l);
  }
  const float* topp_probs(int64_t t, int64_t l) const {
    check(l);
    return run_->topp_probs(tok_[t], l);
  }
  // Gate input of step token t at layer l (h_trace floats), or nullptr when
  // no component asked for gate inputs. The first read of a step fills them.
  const float* gate_input(int64_t t, int64_t l) const {
    check(l);
    if (filler_) fill_gates();
    return gate_.empty() ? nullptr : &gate_[(t * run_->layers() + l) * h_];
  }
  int64_t h_trace() const { return h_; }

  int64_t revealed_layer() const { return revealed_; }

  // --- used by the engine ---
  void reset(Phase phase) {
    phase_ = phase;
    clear();
  }
  void clear() {
    tok_.clear();
    seq_.clear();
    pos_.clear();
    gate_.clear();
    filler_ = nullptr;
    revealed_ = -1;
  }
  void add(int64_t seq, int64_t pos) {
    tok_.push_back(run_->token(seq, pos));
    seq_.push_back(seq);
    pos_.push_back(pos);
  }
  void reveal(int64_t layer) { revealed_ = layer; }
  // Every token's gate inputs ([token][layer][h_trace]; empty without them).
  const std::vector<float>& gate_data() const {
    if (filler_) fill_gates();
    return gate_;
  }
  std::vector<float>& gate_storage(int64_t h) {
    h_ = h;
    filler_ = nullptr;
    return gate_;
  }
  // The step's gate inputs come from `f` when first read (h_trace `h`).
  void defer_gate_inputs(GateFiller* f, int64_t h) {
    h_ = h;
    gate_.clear();
    filler_ = f;
  }
  // While set, reads beyond the revealed layer are allowed (oracle components).
  void set_oracle_view(bool on) const { oracle_ = on; }
  // Name of the component being called, for the error message of a bad read.
  void set_reader(const std::string* name) const { reader_ = name; }

 private:
  // Inline: every routing read of the engine's hot loops passes here.
  void check(int64_t l) const {
    if (l > revealed_ && !oracle_) refuse(l);
  }
  [[noreturn]] void refuse(int64_t l) const;
  void fill_gates() const;

  const RunRouting* run_;
  Phase phase_;
  std::vector<int64_t> tok_, seq_, pos_;
  mutable std::vector<float> gate_;
  mutable GateFiller* filler_ = nullptr;  // set: gate_ not filled yet
  int64_t h_ = 0;
  int64_t revealed_ = -1;
  mutable bool oracle_ = false;
  mutable const std::string* reader_ = nullptr;
};

}  // namespace moebench
