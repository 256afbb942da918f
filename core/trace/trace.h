// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Routing traces: which experts each token activates in each MoE layer.
//
// A TraceSource yields, per sequence and in token order, a TokenRecord for
// every token: the top-k expert ids and combine weights of every MoE layer,
// optionally the router scores of all experts and the gate input vector (in
// the trace's own H_trace space, independent of the model's hidden size).
// File-backed sources (trace files) and generator-backed sources (the
// synthetic generator) are interchangeable: the engine cannot tell them
// apart, which is what lets every strategy of a suite see the same routing.
//
// Trace files are safetensors containers (docs/TRACE_FORMAT.md):
//   topk_ids        I32 [T, L, k]   rank order (highest score first)
//   topk_weights    F32 [T, L, k]   combine weights as the model applies them
//   router_probs    F16 [T, L, E]   optional; softmax probabilities or sigmoid scores
//   router_topp_ids / router_topp_probs  I32/F16 [T, L, p]  optional alternative: top-p only
//   gate_input      F16 [T, L, H]   optional
//   gate_weight     F32 [L, E, H]   optional (with gate_input): logits = W h + gate_bias
//   gate_bias       F32 [L, E]
//   selection_bias  F32 [L, E]      added to scores for selection only (DS-V3 routing)
//   seq_prompt_len  I32 [S], seq_decode_len I32 [S]   tokens are stored sequence by sequence
//   __metadata__    format, format_version, model, model_hash, moe_layers, routed_experts,
//                   top_k, h_trace, routing, n_group, topk_group, norm_topk_prob,
//                   routed_scaling_factor, source

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/config/model_spec.h"

namespace moebench {

inline constexpr const char* kTraceFormat = "moebench-trace";
inline constexpr int kTraceFormatVersion = 1;
// The expert id of every rank of a hole row (TraceInfo::hole_rows).
inline constexpr int32_t kHoleId = -1;
// Largest sizes a trace's metadata may state (real models: <= 94 MoE layers,
// <= 384 routed experts, hidden size <= 16384); a larger value is an error.
inline constexpr int64_t kMaxTraceLayers = 1024;
inline constexpr int64_t kMaxTraceExperts = 4096;
inline constexpr int64_t kMaxTraceHidden = 65536;

// A step's phase: a sequence's prompt tokens, or one generated token each.
enum class Phase { kPrefill, kDecode };
inline const char* to_string(Phase p) {
  return p == Phase::kPrefill ? "prefill" : "decode";
}

struct SequenceInfo {
  int64_t prompt_len = 0;
  int64_t decode_len = 0;
  int64_t tokens() const { return prompt_len + decode_len; }
};

enum class ProbsStorage { kNone, kFull, kTopP };

// How the router turns logits into a top-k choice (mirrors ModelSpec).
struct RoutingConfig {
  RoutingFunction function = RoutingFunction::kSoftmaxTopK;
  int64_t experts = 0;
  int64_t top_k = 0;
  int64_t n_group = 1;
  int64_t topk_group = 1;
  bool norm_topk_prob = false;
  double routed_scaling_factor = 1.0;

  // Inline: the trace readers (moebench_core) use it without the routing
  // library (moebench_routing, which rests on moebench_core).
  static RoutingConfig from_model(const ModelSpec& m) {
    RoutingConfig c;
    c.function = m.routing;
    c.experts = m.routed_experts;
    c.top_k = m.top_k;
    c.n_group = m.n_group;
    c.topk_group = m.topk_group;
    c.norm_topk_prob = m.norm_topk_prob;
    c.routed_scaling_factor = m.routed_scaling_factor;
    return c;
  }
};

struct TraceInfo {
  std::string model_name;
  std::string model_hash;
  int64_t moe_layers = 0;
  int64_t h_trace = 0;  // 0 = no gate inputs
  RoutingConfig routing;
  ProbsStorage probs = ProbsStorage::kNone;
  int64_t top_p = 0;  // with kTopP
  bool has_gate_weights = false;
  std::vector<SequenceInfo> sequences;
  std::string source;  // JSON text: generator and parameters, or converter and input
  // (token, layer) rows whose routing is unknown ("holes": a logger dropped
  // them; `trace convert --missing hole`): every id kHoleId and every weight
  // 0. Statistics and the simulator skip them and say how many
  // (docs/TRACE_FORMAT.md, "Holes"). A trace with holes has no gate inputs.
  int64_t hole_rows = 0;

  int64_t experts() const { return routing.experts; }
  int64_t top_k() const { return routing.top_k; }
  int64_t total_tokens() const;
  // Index of the first token of sequence `s` in file order.
  int64_t first_token(int64_t s) const;
};

// The router of every MoE layer in the trace's H_trace space:
//   logits = weight[l] * h + bias[l];  selection uses scores + selection_bias[l].
struct GateWeights {
  int64_t layers = 0, experts = 0, h = 0;
  std::vector<float> weight;          // [L][E][H]
  std::vector<float> bias;            // [L][E]
  std::vector<float> selection_bias;  // [L][E]
  const float* w(int64_t l) const { return weight.data() + l * experts * h; }
  const float* b(int64_t l) const { return bias.data() + l * experts; }
  const float* sel(int64_t l) const { return selection_bias.data() + l * experts; }
};

// One token through every MoE layer. Buffers are reused between calls.
struct TokenRecord {
  int64_t seq = 0;
  int64_t pos = 0;             // position in its sequence (prompt first)
  std::vector<int32_t> ids;    // [L][k], rank order
  std::vector<float> weights;  // [L][k]
  std::vector<float> probs;  // [L][E] dense (zeros outside top-p); empty if not requested/available
  std::vector<float> gate_input;  // [L][H]; empty if not requested/available
};

enum TraceFields : unsigned {
  kIdsWeights = 0,
  kProbs = 1,
  kGateInput = 2,
  kAllFields = 3,
  // A hint: the caller reads only the optional parts it named, so a source
  // may leave ids and weights empty where computing them costs time (the
  // synthetic generator skips its router). Other sources may ignore it.
  kNoRouting = 4,
};

class SequenceReader {
 public:
  virtual ~SequenceReader() = default;
  // Fills `out` with the next token; false after the last one.
  virtual bool next(TokenRecord& out) = 0;
};

class TraceSource {
 public:
  virtual ~TraceSource() = default;
  virtual const TraceInfo& info() const = 0;
  // Streams sequence `seq` from its first token. `fields` selects the
  // optional parts (kProbs, kGateInput); unavailable parts stay empty
  // (kNoRouting: ids and weights may be left empty too).
  virtual std::unique_ptr<SequenceReader> open(int64_t seq, unsigned fields) const = 0;
  // nullptr when the source has no gate weights.
  virtual const GateWeights* gate_weights() const = 0;
  // "" while what the source reads is as it was when opened; otherwise why
  // a result computed from it is not valid (a trace file written to,
  // truncated or replaced meanwhile), naming the file.
  virtual std::string changed_since_open() const { return ""; }
  // A file's identity when it was opened (core/util/paths.h, file_stamp);
  // "" for a source that is not a file.
  virtual std::string file_stamp() const { return ""; }
  // A digest of everything that decides what the source yields: two sources
  // with the same non-empty key yield the same tokens, bit for bit (the
  // routing cache shares one materialisation between them,
  // core/engine/routing_cache.h). "" (the default): never shared.
  virtual std::string content_key() const { return ""; }
};

struct TraceWriteOptions {
  ProbsStorage probs = ProbsStorage::kFull;
  int64_t top_p = 0;        // with kTopP
  bool gate_inputs = true;  // also stores gate weights when the source has them
};

// Writes every sequence of `src` to a trace file (atomically).
void write_trace(const TraceSource& src, const std::filesystem::path& out,
                 const TraceWriteOptions& opt);

// Opens and validates a trace file (header, shapes, id ranges, finite
// non-negative weights). Large tensors stay memory-mapped; NaNs in them are
// reported when the token is read. Throws moebench::Error naming the file.
std::unique_ptr<TraceSource> open_trace_file(const std::filesystem::path& path);

}  // namespace moebench
