// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// A TraceSource over tokens held in memory: converters build one and write
// it out; tests build small hand-made workloads with it.

#include <vector>

#include "core/trace/trace.h"

namespace moebench {

class MemoryTraceSource : public TraceSource {
 public:
  explicit MemoryTraceSource(TraceInfo info) : info_(std::move(info)) {
    tokens_.resize(info_.sequences.size());
  }
  // Appends the next token of sequence `seq` (its pos is set here).
  void add(int64_t seq, TokenRecord rec) {
    rec.seq = seq;
    rec.pos = int64_t(tokens_[seq].size());
    tokens_[seq].push_back(std::move(rec));
  }
  void set_gate_weights(GateWeights g) {
    gates_ = std::move(g);
    info_.has_gate_weights = true;
  }
  TraceInfo& mutable_info() { return info_; }

  const TraceInfo& info() const override { return info_; }
  const GateWeights* gate_weights() const override {
    return info_.has_gate_weights ? &gates_ : nullptr;
  }
  std::unique_ptr<SequenceReader> open(int64_t seq, unsigned fields) const override {
    class Reader : public SequenceReader {
     public:
      Reader(const std::vector<TokenRecord>& t, unsigned f) : t_(t), f_(f) {}
      bool next(TokenRecord& out) override {
        if (i_ >= t_.size()) return false;
        // Only the fields asked for are copied (a token's probabilities are
        // layers x experts floats: most readers do not ask for them).
        static_assert(sizeof(TokenRecord) == 2 * sizeof(int64_t) + 4 * sizeof(std::vector<float>),
                      "a new TokenRecord field: copy it here too");
        const TokenRecord& in = t_[i_++];
        out.seq = in.seq;
        out.pos = in.pos;
        out.ids = in.ids;
        out.weights = in.weights;
        if (f_ & kProbs) {
          out.probs = in.probs;
        } else {
          out.probs.clear();
        }
        if (f_ & kGateInput) {
          out.gate_input = in.gate_input;
        } else {
          out.gate_input.clear();
        }
        return true;
      }

     private:
      const std::vector<TokenRecord>& t_;
      unsigned f_;
      size_t i_ = 0;
    };
    return std::make_unique<Reader>(tokens_.at(seq), fields);
  }

 private:
  TraceInfo info_;
  GateWeights gates_;
  std::vector<std::vector<TokenRecord>> tokens_;
};

}  // namespace moebench
