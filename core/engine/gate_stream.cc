// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/gate_stream.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/util/error.h"

namespace moebench {

GateStream::GateStream(const TraceSource& src, int64_t sequences, int64_t layers,
                       const std::string& strategy)
    : src_(src), layers_(layers), h_(src.info().h_trace) {
  if (h_ <= 0 || !src.gate_weights()) {
    throw Error(
        fmt::format("strategy '{}': expected a workload with gate inputs and gate weights (a "
                    "predictor uses them), found a trace without them",
                    strategy));
  }
  readers_.resize(size_t(sequences));
  next_pos_.assign(size_t(sequences), 0);
}

void GateStream::fill(const StepRouting& step, std::vector<float>& out) {
  const int64_t row = layers_ * h_;
  out.resize(size_t(step.tokens() * row));
  for (int64_t t = 0; t < step.tokens(); ++t) {
    const int64_t seq = step.seq(t), pos = step.pos(t);
    auto& reader = readers_[size_t(seq)];
    if (!reader) reader = src_.open(seq, kGateInput | kNoRouting);
    if (next_pos_[size_t(seq)] > pos)
      throw InternalError("gate inputs asked for out of position order");
    while (next_pos_[size_t(seq)] <= pos) {
      if (!reader->next(rec_)) throw InternalError("gate input stream ended early");
      ++next_pos_[size_t(seq)];
    }
    std::copy(rec_.gate_input.begin(), rec_.gate_input.end(), out.begin() + t * row);
  }
}

}  // namespace moebench
