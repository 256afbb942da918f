// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Converts per-(token, layer) JSON-lines routing logs into trace files.
//
// One JSON object per line and per (sequence, token, MoE layer). Canonical
// fields (their default key names in brackets; --field NAME=KEY maps a
// field to the log's own key, e.g. seq=request_id, layer=layer_idx):
//   seq [seq | sequence]    sequence id: any integer, or a string (a request
//                           id; numbered in order of first appearance per file)
//   token [token]           position in the sequence, 0..n-1
//   layer [layer]           MoE layer, 0..L-1
//   experts [experts]       the k chosen expert ids, rank order
//   weights [weights]       the k combine weights (optional)
//   probs [probs]           router probabilities: k values (the chosen
//                           experts', aligned with `experts`) or E values
//                           (every expert's; full width)
//   logits [logits]         E router logits (full width); the model's router
//                           function turns them into probabilities
//   prompt [prompt]         optional boolean: a prompt token
// `experts` may be omitted when full-width probs or logits are given (the
// top-k is then taken from them; not for grouped routing, where the
// selection bias is unknown). Missing weights are the chosen experts'
// probabilities, renormalised as the model does (norm_topk_prob) and scaled
// by routed_scaling_factor. The trace stores full-width probabilities when
// every line has them, else the top-k ones (p = k), else none.
//
// What the numbers mean: `weights` are the combine weights as the model
// applies them (Mixtral: softmax over the E logits, renormalised over the
// chosen k, so they sum to 1 over the k; a vLLM or SGLang log's "topk
// weights" are these); `probs` are the router's probabilities before any
// renormalisation (they sum to 1 over all E experts, so the chosen k's sum
// is below 1). A log that holds only renormalised weights maps them to
// `weights`: the trace then has no router probabilities, and a strategy
// that needs them (HybriMoE's MRS, probability-based predictors) is refused
// at load. Top-k `probs` that sum to 1 on every row are converted as given
// but reported (ConvertSummary::notes): they look like renormalised weights.
//
// Layout: "positions" (default): `token` is the position in the
// sequence, 0..n-1. "per-forward": positions restart at 0 in every forward
// pass of a sequence (a raw vLLM log: the prefill's rows, then one row per
// layer for each decode step, all with token 0): the rows of a sequence are
// taken in file order, a new pass begins where a (token, layer) of the
// current pass comes again, and the position is the tokens of the earlier
// passes plus `token`; without --prompt-len or a prompt field, the first
// pass is the prompt.
//
// Several input files convert into one trace; each file's sequences stay
// apart (sequence ids are per file), in the order the files are given.
//
// The first line is checked for every field at once: an error lists each
// field it lacks, the line's keys, and a command line with --field mappings
// (guessed from the keys where a name matches, KEY where not).
//
// Missing rows (a (seq, token, layer) of the grid 0..n-1 x 0..L-1 that no
// line gives) are an error by default, with their count; --missing drop
// removes tokens with a missing layer, --missing fill copies the same layer
// of the sequence's previous token (an error for a sequence's first token),
// --missing hole keeps every position and marks each missing row a hole
// (every id kHoleId, every weight 0; the trace's metadata counts them):
// statistics and the simulator skip holes and report how many
// (docs/TRACE_FORMAT.md, "Holes"). drop loses every other layer of the
// token and fill fabricates repeats (which raise hit rates); hole neither.
// A run of more than kMaxTokenGap positions with no row at all is refused
// (a position far beyond the rows the file holds is a wrong field mapping,
// not lost rows), so memory is bounded by what the file holds.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/experiment/experiment.h"

namespace moebench {

// The most consecutive token positions of a sequence that may have no row.
inline constexpr int64_t kMaxTokenGap = 4096;

struct ConvertOptions {
  std::string input, out, model;
  std::vector<std::string> inputs;   // several files (input ignored when given)
  std::string layout = "positions";  // "positions" | "per-forward"
  int64_t prompt_len = -1;           // -1: use per-line "prompt" flags (default: all decode)
  std::map<std::string, std::string> fields;  // canonical field -> the log's key
  std::string missing = "error";              // "error" | "drop" | "fill" | "hole"
};

struct ConvertSummary {
  int64_t lines = 0, sequences = 0, tokens = 0;
  int64_t missing_rows = 0;    // grid rows no line gave
  int64_t dropped_tokens = 0;  // --missing drop
  int64_t filled_rows = 0;     // --missing fill
  int64_t hole_rows = 0;       // --missing hole
  int64_t probs_width = 0;     // router probabilities stored per token and layer (0, k or E)
  int64_t forward_passes = 0;  // layout per-forward: passes read
  std::vector<std::string>
      notes;  // what the caller should tell the user (e.g. probs that look renormalised)
};

// Canonical field names, in the order the header comment lists them.
const std::vector<std::string>& convert_field_names();

ConvertSummary convert_jsonl(const ConvertOptions& opt, const ConfigPaths& paths);

}  // namespace moebench
