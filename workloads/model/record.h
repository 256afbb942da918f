// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Routing traces recorded from a MoeModel run on text, and the accuracy
// effects of Expert Deferral and expert skipping on the same text.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/trace/memory_source.h"
#include "workloads/model/moe_model.h"

namespace moebench {

struct RecordOptions {
  int64_t sequences = 8;    // consecutive slices of the text, one sequence each
  int64_t seq_len = 128;    // bytes (tokens) per sequence (train.py trains on 128)
  int64_t prompt_len = 32;  // of which the prompt (the rest: decode tokens)
  int64_t offset = 0;       // first byte of the text used
};

// Runs the model over `sequences` consecutive slices of `text` (bytes are
// tokens) and returns the trace: rank-ordered top-k ids and weights, the
// full router probabilities and the routers' inputs of every MoE layer, the
// routers as gate weights. Throws moebench::Error when the text is too
// short, naming what was needed and found.
std::unique_ptr<MemoryTraceSource> record_trace(MoeModel& model, const std::string& text,
                                                const RecordOptions& opt,
                                                const std::string& text_name);

struct AccuracyRow {
  std::string mode;       // "baseline", "defer", "skip"
  int n = 0;              // experts deferred or skipped
  int64_t tokens = 0;     // next-token predictions scored
  double nll = 0;         // mean negative log-likelihood of the true next byte (nats)
  double perplexity = 0;  // exp(nll)
  double agreement = 0;   // share of tokens whose argmax equals the unmodified model's
  double kl = 0;          // mean KL(unmodified || modified) of the next-byte distributions (nats)
};

// Where deferral and skipping act: on the decode tokens only, after a
// prompt run unmodified (KTransformers applies Expert Deferral in decode;
// prefill runs every expert at once), or on every token.
enum class DeferScope { kDecode, kAll };
const char* to_string(DeferScope s);

// Scores the unmodified model, then every deferral 1..k-1 and every
// skipping 1..k-1, on the same slices of `text` (RecordOptions' sequences,
// seq_len, offset). Decode scope: each slice's first prompt_len bytes are
// the prompt, run once, unmodified, and the predictions of the remaining
// seq_len - prompt_len bytes are scored (the first of them comes from the
// prompt's last token, so it is the same in every variant). All scope:
// every token is modified and the predictions of bytes 1..seq_len-1 are
// scored.
std::vector<AccuracyRow> accuracy_sweep(MoeModel& model, const std::string& text,
                                        const RecordOptions& opt, const std::string& text_name,
                                        DeferScope scope = DeferScope::kDecode);

// A generation task: the model reads `context` bytes before a word (the
// prompt, run unmodified) and generates greedily, one byte at a time with
// deferral or skipping, until a byte that is not a letter; the item is
// right when the generated word is the text's. Items are every word of the
// text from `offset` on (next-word prediction), or with `verse_final` only
// the last word of each verse of a KJV text (a cloze in the manner of
// LAMBADA; the small models get about 1% of those right, too few to
// compare variants).
struct ClozeOptions {
  int64_t items = 400;    // words, consecutive from `offset`
  int64_t context = 96;   // bytes of prompt before the word
  int64_t max_word = 20;  // longer words are not used as items
  int64_t offset = 0;     // first byte of the text searched (and read as context)
  bool verse_final = false;
};

struct ClozeItem {
  int64_t context_begin = 0, word_begin = 0;
  std::string word;
};

// The items after `offset`: words of 1..max_word letters (verse-final:
// 2..max_word) with `context` bytes of text before them from `offset` on.
// Throws moebench::Error when the text holds fewer than opt.items.
std::vector<ClozeItem> cloze_items(const std::string& text, const ClozeOptions& opt,
                                   const std::string& text_name);

struct ClozeRow {
  std::string mode;  // "baseline", "defer", "skip"
  int n = 0;
  int64_t items = 0;
  double accuracy = 0;   // share of items whose generated word is the verse's
  double agreement = 0;  // share of items whose generated word is the unmodified model's
};

std::vector<ClozeRow> cloze_sweep(MoeModel& model, const std::string& text, const ClozeOptions& opt,
                                  const std::string& text_name);

struct ReferenceCheck {
  int64_t tokens = 0;
  double logits_error = 0;         // ||C++ - PyTorch|| / ||PyTorch|| over every logit
  int64_t routing_mismatches = 0;  // (token, layer, rank) whose expert id differs
  int64_t routing_slots = 0;
  double max_weight_error = 0;  // largest |combine weight difference|
};

// Runs the model on the tokens of a reference file that train.py wrote
// (tokens I32 [T], logits F32 [T, V], topk_ids I32 [L, T, k], topk_weights
// F32 [L, T, k]) and compares. Throws moebench::Error naming the file and
// tensor when one is missing or its shape does not fit the model.
ReferenceCheck check_reference(MoeModel& model, const std::filesystem::path& reference);

}  // namespace moebench
