#pragma once
// Converts per-token JSON-lines routing logs into trace files. One JSON
// object per line and per (token, layer):
//   {"seq": 0, "token": 5, "layer": 3, "experts": [12, 7], "probs": [0.61, 0.22]}
// "sequence" is accepted for "seq", "weights" for "probs"; an optional
// boolean "prompt" marks prompt tokens (else --prompt-len splits prompt and
// decode). Every (seq, token, layer) must appear exactly once; tokens of a
// sequence must be 0..n-1; layers 0..L-1 of the model's MoE layers.

#include <cstdint>
#include <string>

#include "core/config/experiment.h"

namespace moebench {

struct ConvertOptions {
  std::string input, out, model;
  int64_t prompt_len = -1;  // -1: use per-line "prompt" flags (default: all decode)
};

struct ConvertSummary {
  int64_t lines = 0, sequences = 0, tokens = 0;
};

ConvertSummary convert_jsonl(const ConvertOptions& opt, const ConfigPaths& paths);

}  // namespace moebench
