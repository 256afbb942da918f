#pragma once
// Routing traces recorded from a MoeModel run on text, and the accuracy
// effects of Expert Deferral and expert skipping on the same text (issue 15).

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

// Scores the unmodified model, then every deferral 1..k-1 and every
// skipping 1..k-1, on the same slices of `text` (RecordOptions' sequences,
// seq_len, offset; every token is decoded one at a time, so deferral acts
// on all of them, where KTransformers applies it in decode only).
std::vector<AccuracyRow> accuracy_sweep(MoeModel& model, const std::string& text,
                                        const RecordOptions& opt, const std::string& text_name);

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
