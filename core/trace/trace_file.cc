// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Trace files: writer (from any TraceSource) and memory-mapped reader.

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "core/trace/safetensors.h"
#include "core/trace/trace.h"
#include "core/util/error.h"
#include "core/util/strings.h"

namespace moebench {

int64_t TraceInfo::total_tokens() const {
  int64_t t = 0;
  for (const auto& s : sequences) t += s.tokens();
  return t;
}

int64_t TraceInfo::first_token(int64_t s) const {
  int64_t t = 0;
  for (int64_t i = 0; i < s; ++i) t += sequences[i].tokens();
  return t;
}

namespace {

std::string routing_name(RoutingFunction r) {
  return to_string(r);
}

bool routing_from_name(const std::string& s, RoutingFunction* out) {
  for (RoutingFunction r : {RoutingFunction::kSoftmaxTopK, RoutingFunction::kSoftmaxGroupLimited,
                            RoutingFunction::kSigmoidGroupedBias}) {
    if (s == to_string(r)) {
      *out = r;
      return true;
    }
  }
  return false;
}

// ------------------------------------------------------------------ writer

constexpr int64_t kChunkTokens = 64;

struct Buffers {
  std::vector<int32_t> ids;
  std::vector<float> weights;
  std::vector<uint16_t> probs;
  std::vector<int32_t> topp_ids;
  std::vector<uint16_t> topp_probs;
  std::vector<uint16_t> gate;
  int64_t first = 0, count = 0;
};

}  // namespace

void write_trace(const TraceSource& src, const std::filesystem::path& out,
                 const TraceWriteOptions& opt) {
  const TraceInfo& in = src.info();
  const int64_t T = in.total_tokens(), L = in.moe_layers, k = in.top_k(), E = in.experts();
  const int64_t S = static_cast<int64_t>(in.sequences.size());
  const bool want_probs = opt.probs != ProbsStorage::kNone;
  if (want_probs && in.probs == ProbsStorage::kNone) {
    throw Error(
        fmt::format("{}: expected a source with router probabilities to write them, found "
                    "none (write without probabilities)",
                    out.string()));
  }
  const int64_t P = opt.probs == ProbsStorage::kTopP ? std::min(opt.top_p, E) : 0;
  if (opt.probs == ProbsStorage::kTopP && P <= 0) {
    throw Error("trace write: expected top_p >= 1 with top-p probability storage, found 0");
  }
  const bool gates = opt.gate_inputs && in.h_trace > 0;
  const int64_t H = gates ? in.h_trace : 0;
  const GateWeights* gw = gates ? src.gate_weights() : nullptr;

  std::vector<st::Writer::Spec> specs;
  specs.push_back({"topk_ids", st::DType::kI32, {T, L, k}});
  specs.push_back({"topk_weights", st::DType::kF32, {T, L, k}});
  specs.push_back({"seq_prompt_len", st::DType::kI32, {S}});
  specs.push_back({"seq_decode_len", st::DType::kI32, {S}});
  if (opt.probs == ProbsStorage::kTopP)
    specs.push_back({"router_topp_ids", st::DType::kI32, {T, L, P}});
  if (gw) {
    specs.push_back({"gate_weight", st::DType::kF32, {L, E, H}});
    specs.push_back({"gate_bias", st::DType::kF32, {L, E}});
    specs.push_back({"selection_bias", st::DType::kF32, {L, E}});
  }
  if (opt.probs == ProbsStorage::kFull)
    specs.push_back({"router_probs", st::DType::kF16, {T, L, E}});
  if (opt.probs == ProbsStorage::kTopP)
    specs.push_back({"router_topp_probs", st::DType::kF16, {T, L, P}});
  if (gates) specs.push_back({"gate_input", st::DType::kF16, {T, L, H}});

  std::map<std::string, std::string> meta;
  meta["format"] = kTraceFormat;
  meta["format_version"] = std::to_string(kTraceFormatVersion);
  meta["model"] = in.model_name;
  meta["model_hash"] = in.model_hash;
  meta["moe_layers"] = std::to_string(L);
  meta["routed_experts"] = std::to_string(E);
  meta["top_k"] = std::to_string(k);
  meta["h_trace"] = std::to_string(H);
  meta["routing"] = routing_name(in.routing.function);
  meta["n_group"] = std::to_string(in.routing.n_group);
  meta["topk_group"] = std::to_string(in.routing.topk_group);
  meta["norm_topk_prob"] = in.routing.norm_topk_prob ? "true" : "false";
  meta["routed_scaling_factor"] = fmt::format("{}", in.routing.routed_scaling_factor);
  meta["source"] = in.source;
  if (in.hole_rows > 0) {
    if (H > 0) {
      throw Error(fmt::format(
          "{}: expected no gate inputs in a trace with holes (their rows have none), found "
          "h_trace {} and {} hole rows (write without gate inputs)",
          out.string(), H, in.hole_rows));
    }
    meta["holes"] = std::to_string(in.hole_rows);
  }

  st::Writer w(out, specs, meta);
  {
    std::vector<int32_t> pl(S), dl(S);
    for (int64_t s = 0; s < S; ++s) {
      pl[s] = static_cast<int32_t>(in.sequences[s].prompt_len);
      dl[s] = static_cast<int32_t>(in.sequences[s].decode_len);
    }
    w.write_at("seq_prompt_len", 0, pl.data(), pl.size() * 4);
    w.write_at("seq_decode_len", 0, dl.data(), dl.size() * 4);
  }
  if (gw) {
    w.write_at("gate_weight", 0, gw->weight.data(), gw->weight.size() * 4);
    w.write_at("gate_bias", 0, gw->bias.data(), gw->bias.size() * 4);
    w.write_at("selection_bias", 0, gw->selection_bias.data(), gw->selection_bias.size() * 4);
  }

  Buffers b;
  auto flush = [&] {
    if (b.count == 0) return;
    const uint64_t lk = uint64_t(L * k);
    w.write_at("topk_ids", b.first * lk * 4, b.ids.data(), b.ids.size() * 4);
    w.write_at("topk_weights", b.first * lk * 4, b.weights.data(), b.weights.size() * 4);
    if (opt.probs == ProbsStorage::kFull) {
      w.write_at("router_probs", b.first * L * E * 2, b.probs.data(), b.probs.size() * 2);
    }
    if (opt.probs == ProbsStorage::kTopP) {
      w.write_at("router_topp_ids", b.first * L * P * 4, b.topp_ids.data(), b.topp_ids.size() * 4);
      w.write_at("router_topp_probs", b.first * L * P * 2, b.topp_probs.data(),
                 b.topp_probs.size() * 2);
    }
    if (gates) w.write_at("gate_input", b.first * L * H * 2, b.gate.data(), b.gate.size() * 2);
    b.first += b.count;
    b.count = 0;
    b.ids.clear();
    b.weights.clear();
    b.probs.clear();
    b.topp_ids.clear();
    b.topp_probs.clear();
    b.gate.clear();
  };

  const unsigned fields = (want_probs ? kProbs : 0u) | (gates ? kGateInput : 0u);
  TokenRecord rec;
  std::vector<int32_t> order(E);
  for (int64_t s = 0; s < S; ++s) {
    auto reader = src.open(s, fields);
    int64_t n = 0;
    while (reader->next(rec)) {
      ++n;
      b.ids.insert(b.ids.end(), rec.ids.begin(), rec.ids.end());
      b.weights.insert(b.weights.end(), rec.weights.begin(), rec.weights.end());
      if (opt.probs == ProbsStorage::kFull) {
        const size_t at = b.probs.size();
        b.probs.resize(at + rec.probs.size());
        st::float_to_half_n(rec.probs.data(), int64_t(rec.probs.size()), b.probs.data() + at);
      } else if (opt.probs == ProbsStorage::kTopP) {
        for (int64_t l = 0; l < L; ++l) {
          const float* p = rec.probs.data() + l * E;
          std::iota(order.begin(), order.end(), 0);
          std::stable_sort(order.begin(), order.end(),
                           [p](int32_t a, int32_t c) { return p[a] > p[c]; });
          for (int64_t j = 0; j < P; ++j) {
            b.topp_ids.push_back(order[j]);
            b.topp_probs.push_back(st::float_to_half(p[order[j]]));
          }
        }
      }
      if (gates) {
        const size_t at = b.gate.size();
        b.gate.resize(at + rec.gate_input.size());
        st::float_to_half_n(rec.gate_input.data(), int64_t(rec.gate_input.size()),
                            b.gate.data() + at);
      }
      if (++b.count == kChunkTokens) flush();
    }
    if (n != in.sequences[s].tokens()) {
      throw InternalError(fmt::format("trace source yielded {} tokens for sequence {}, expected {}",
                                      n, s, in.sequences[s].tokens()));
    }
  }
  flush();
  w.commit();
}

// ------------------------------------------------------------------ reader

namespace {

// Values read out of the mapping at a time when a whole tensor is scanned.
constexpr int64_t kScanChunk = 1 << 16;

class FileTraceSource;

class FileSequenceReader : public SequenceReader {
 public:
  FileSequenceReader(const FileTraceSource* src, int64_t seq, unsigned fields);
  bool next(TokenRecord& out) override;

 private:
  const FileTraceSource* src_;
  int64_t seq_, pos_ = 0, first_ = 0, len_ = 0;
  unsigned fields_;
  std::vector<uint8_t> raw_;  // a token's half-precision rows, read out of the mapping
};

class FileTraceSource : public TraceSource {
 public:
  explicit FileTraceSource(std::unique_ptr<st::File> f) : file_(std::move(f)) { load(); }
  const TraceInfo& info() const override { return info_; }
  std::unique_ptr<SequenceReader> open(int64_t seq, unsigned fields) const override {
    if (seq < 0 || seq >= int64_t(info_.sequences.size())) {
      throw Error(fmt::format("{}: expected a sequence index in [0, {}), found {}", file_->path(),
                              info_.sequences.size(), seq));
    }
    return std::make_unique<FileSequenceReader>(this, seq, fields);
  }
  const GateWeights* gate_weights() const override {
    return info_.has_gate_weights ? &gates_ : nullptr;
  }
  std::string file_stamp() const override { return file_->stamp(); }
  std::string changed_since_open() const override {
    const std::string what = file_->changed();
    return what.empty() ? what
                        : fmt::format(
                              "{}: expected the trace file to stay as it was while the "
                              "case read it, found that {}; the case's result is not "
                              "valid (run the suite again once the file is stable)",
                              file_->path(), what);
  }

  const st::File& file() const { return *file_; }
  const st::TensorInfo* ids_ = nullptr;
  const st::TensorInfo* weights_ = nullptr;
  const st::TensorInfo* probs_ = nullptr;
  const st::TensorInfo* topp_ids_ = nullptr;
  const st::TensorInfo* topp_probs_ = nullptr;
  const st::TensorInfo* gate_ = nullptr;

 private:
  [[noreturn]] void bad(const std::string& what, const std::string& expected,
                        const std::string& found) const {
    throw Error(fmt::format("{}: {}: expected {}, found {}", file_->path(), what, expected, found));
  }
  std::string meta(const std::string& key) const {
    auto it = file_->metadata().find(key);
    if (it == file_->metadata().end()) bad("__metadata__." + key, "a value", "none");
    return it->second;
  }
  // Every size in the metadata has a sane maximum (kMaxTrace*): later passes
  // allocate products of them (trace stats: layers x experts x experts), and a
  // 26 KB file once asked for routed_experts = 1e9 and grew past 13 GB.
  int64_t meta_int(const std::string& key, int64_t lo, int64_t hi) const {
    const std::string v = meta(key);
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno == ERANGE || x < lo || x > hi) {
      bad("__metadata__." + key, fmt::format("an integer in [{}, {}]", lo, hi), "'" + v + "'");
    }
    return x;
  }
  const st::TensorInfo* tensor(const std::string& name, st::DType dt,
                               const std::vector<int64_t>& shape, bool required) const {
    const st::TensorInfo* t = file_->find(name);
    if (!t) {
      if (required) bad("tensor '" + name + "'", "present", "none");
      return nullptr;
    }
    if (t->dtype != dt)
      bad("tensor '" + name + "'", std::string("dtype ") + st::to_string(dt),
          std::string("dtype ") + st::to_string(t->dtype));
    if (t->shape != shape) {
      bad("tensor '" + name + "'", fmt::format("shape [{}]", fmt::join(shape, ", ")),
          fmt::format("shape [{}]", fmt::join(t->shape, ", ")));
    }
    return t;
  }

  // Routing recomputed from finite gate inputs and weights can still
  // overflow to inf in the logits (weights of 7.6e37 were routed silently):
  // refused when a layer's bound on |logit|, sum |w| x max |x| + |biases|,
  // passes what a float holds.
  void check_logits_finite(const std::vector<uint16_t>& gate_max) const {
    const int64_t L = info_.moe_layers, E = info_.experts(), H = info_.h_trace;
    for (int64_t l = 0; l < L; ++l) {
      const double x = std::abs(double(st::half_to_float(gate_max[size_t(l)])));
      for (int64_t e = 0; e < E; ++e) {
        double w = 0;
        for (int64_t h = 0; h < H; ++h)
          w += std::abs(double(gates_.weight[size_t((l * E + e) * H + h)]));
        const double bound = w * x + std::abs(double(gates_.bias[size_t(l * E + e)])) +
                             std::abs(double(gates_.selection_bias[size_t(l * E + e)]));
        if (bound <= double(std::numeric_limits<float>::max())) continue;
        bad(fmt::format("tensor 'gate_weight'[layer {}, expert {}]", l, e),
            "weights whose logits stay finite on the trace's gate inputs (|logit| below 3.4e38)",
            fmt::format("sum |w| = {:.3g} with max |gate_input| = {:.3g} in layer {}: a bound of "
                        "{:.3g}",
                        w, x, l, bound));
      }
    }
  }

  // The phases in the order their errors are reported: the metadata, the
  // sequences, the tensors' shapes, the gate weights, the half-precision
  // tensors' values, the ids and weights.
  void load() {
    read_metadata();
    const int64_t T = read_sequences();
    find_tensors(T);
    read_gate_weights();
    const int64_t E = info_.routing.experts;
    if (info_.routing.function != RoutingFunction::kSoftmaxTopK &&
        (info_.routing.n_group < 1 || E % info_.routing.n_group != 0)) {
      bad("__metadata__.n_group", fmt::format("a divisor of routed_experts ({})", E),
          std::to_string(info_.routing.n_group));
    }
    std::vector<uint16_t> gate_max;
    scan_half(gate_, "gate_input", T, info_.h_trace, false, &gate_max);
    if (info_.has_gate_weights) check_logits_finite(gate_max);
    scan_half(probs_, "router_probs", T, E, true);
    scan_half(topp_probs_, "router_topp_probs", T, info_.top_p, true);
    check_ids_and_weights(T);
  }

  // The file's metadata: its format, the model, the routing.
  void read_metadata() {
    if (meta("format") != kTraceFormat)
      bad("__metadata__.format", std::string("'") + kTraceFormat + "'", "'" + meta("format") + "'");
    if (meta("format_version") != std::to_string(kTraceFormatVersion)) {
      bad("__metadata__.format_version", fmt::format("'{}'", kTraceFormatVersion),
          "'" + meta("format_version") + "'");
    }
    info_.model_name = meta("model");
    info_.model_hash = meta("model_hash");
    info_.source = meta("source");
    info_.moe_layers = meta_int("moe_layers", 1, kMaxTraceLayers);
    const int64_t E = info_.routing.experts = meta_int("routed_experts", 1, kMaxTraceExperts);
    const int64_t k = info_.routing.top_k = meta_int("top_k", 1, kMaxTraceExperts);
    if (k > E)
      bad("__metadata__.top_k", fmt::format("at most routed_experts ({})", E), std::to_string(k));
    info_.h_trace = meta_int("h_trace", 0, kMaxTraceHidden);
    if (!routing_from_name(meta("routing"), &info_.routing.function)) {
      bad("__metadata__.routing", "a routing function name", "'" + meta("routing") + "'");
    }
    info_.routing.n_group = meta_int("n_group", 1, kMaxTraceExperts);
    info_.routing.topk_group = meta_int("topk_group", 1, kMaxTraceExperts);
    info_.routing.norm_topk_prob = meta("norm_topk_prob") == "true";
    info_.routing.routed_scaling_factor =
        std::strtod(meta("routed_scaling_factor").c_str(), nullptr);
  }

  // The sequences' lengths; returns the tokens they hold together.
  int64_t read_sequences() {
    const st::TensorInfo* pl = file_->find("seq_prompt_len");
    if (!pl) bad("tensor 'seq_prompt_len'", "present", "none");
    if (pl->shape.size() != 1)
      bad("tensor 'seq_prompt_len'", "a 1-D tensor",
          fmt::format("{} dimensions", pl->shape.size()));
    const int64_t S = pl->shape[0];
    tensor("seq_prompt_len", st::DType::kI32, {S}, true);
    const st::TensorInfo* dl = tensor("seq_decode_len", st::DType::kI32, {S}, true);
    int64_t T = 0;
    std::vector<int32_t> prompt_lens(static_cast<size_t>(S)), decode_lens(static_cast<size_t>(S));
    file_->read(file_->data(*pl), prompt_lens.data(), size_t(S) * 4);
    file_->read(file_->data(*dl), decode_lens.data(), size_t(S) * 4);
    for (int64_t s = 0; s < S; ++s) {
      const int32_t p = prompt_lens[size_t(s)], d = decode_lens[size_t(s)];
      if (p < 0 || d < 0)
        bad(fmt::format("sequence {}", s), "non-negative lengths",
            fmt::format("prompt {} decode {}", p, d));
      info_.sequences.push_back({p, d});
      T += int64_t(p) + int64_t(d);  // in 64 bits: two int32 lengths can sum past 2^31
    }
    return T;
  }

  // Every tensor of T tokens, each with its dtype and shape.
  void find_tensors(int64_t T) {
    const int64_t L = info_.moe_layers, E = info_.routing.experts, k = info_.routing.top_k;
    ids_ = tensor("topk_ids", st::DType::kI32, {T, L, k}, true);
    weights_ = tensor("topk_weights", st::DType::kF32, {T, L, k}, true);
    probs_ = tensor("router_probs", st::DType::kF16, {T, L, E}, false);
    const st::TensorInfo* tp = file_->find("router_topp_ids");
    if (tp) {
      if (tp->shape.size() != 3) bad("tensor 'router_topp_ids'", "shape [T, L, p]", "other");
      info_.top_p = tp->shape[2];
      topp_ids_ = tensor("router_topp_ids", st::DType::kI32, {T, L, info_.top_p}, true);
      topp_probs_ = tensor("router_topp_probs", st::DType::kF16, {T, L, info_.top_p}, true);
    }
    info_.probs = probs_      ? ProbsStorage::kFull
                  : topp_ids_ ? ProbsStorage::kTopP
                              : ProbsStorage::kNone;
    const int64_t H = info_.h_trace;
    if (H > 0)
      gate_ = tensor("gate_input", st::DType::kF16, {T, L, H}, true);
    else if (file_->find("gate_input"))
      bad("tensor 'gate_input'", "absent when h_trace = 0", "present");
  }

  // The router's weights, when the file has them: read and checked finite.
  void read_gate_weights() {
    const int64_t L = info_.moe_layers, E = info_.routing.experts, H = info_.h_trace;
    if (const st::TensorInfo* gw = file_->find("gate_weight")) {
      if (H == 0) bad("tensor 'gate_weight'", "gate_input as well (h_trace > 0)", "h_trace = 0");
      tensor("gate_weight", st::DType::kF32, {L, E, H}, true);
      const st::TensorInfo* gb = tensor("gate_bias", st::DType::kF32, {L, E}, true);
      const st::TensorInfo* sb = tensor("selection_bias", st::DType::kF32, {L, E}, true);
      gates_.layers = L;
      gates_.experts = E;
      gates_.h = H;
      gates_.weight.resize(L * E * H);
      gates_.bias.resize(L * E);
      gates_.selection_bias.resize(L * E);
      file_->read(file_->data(*gw), gates_.weight.data(), gates_.weight.size() * 4);
      file_->read(file_->data(*gb), gates_.bias.data(), gates_.bias.size() * 4);
      file_->read(file_->data(*sb), gates_.selection_bias.data(), gates_.selection_bias.size() * 4);
      // Routing recomputed from non-finite gates is undefined (det::exp of a
      // NaN once converted NaN to int): refused here, with the index.
      auto finite = [&](const std::vector<float>& v, const char* name, int64_t inner) {
        for (size_t i = 0; i < v.size(); ++i) {
          if (std::isfinite(v[i])) continue;
          const int64_t at = int64_t(i);
          bad(fmt::format("tensor '{}'[layer {}, expert {}{}]", name, at / (E * inner),
                          (at / inner) % E,
                          inner > 1 ? fmt::format(", {}", at % inner) : std::string()),
              "finite values", fmt::format("{}", v[i]));
        }
      };
      finite(gates_.weight, "gate_weight", H);
      finite(gates_.bias, "gate_bias", 1);
      finite(gates_.selection_bias, "selection_bias", 1);
      info_.has_gate_weights = true;
    }
  }

  // A half-precision tensor of T tokens, scanned once as integers (fast
  // enough for any trace that fits in memory): gate inputs must be finite
  // (routing is recomputed from them), probabilities in [0, 1].
  // `layer_max`, when given, receives each layer's largest |value|.
  void scan_half(const st::TensorInfo* t, const char* name, int64_t T, int64_t inner,
                 bool probability, std::vector<uint16_t>* layer_max = nullptr) {
    const int64_t L = info_.moe_layers;
    if (!t) return;
    if (layer_max) layer_max->assign(size_t(L), 0);
    const int64_t n = T * L * inner;
    std::vector<uint16_t> chunk;
    for (int64_t i = 0; i < n; ++i) {
      if (i % kScanChunk == 0) {  // read through the guard, a chunk at a time
        chunk.resize(size_t(std::min(kScanChunk, n - i)));
        file_->read(file_->data(*t) + 2 * i, chunk.data(), chunk.size() * 2);
      }
      const uint16_t h = chunk[size_t(i % kScanChunk)];
      if (layer_max) {  // |x| orders as the half's bits without the sign
        uint16_t& m = (*layer_max)[size_t((i / inner) % L)];
        m = std::max<uint16_t>(m, h & 0x7fffu);
      }
      const bool nonfinite = (h & 0x7c00u) == 0x7c00u;
      const bool outside =
          probability && (h & 0x8000u ? (h & 0x7fffu) != 0 : h > 0x3c00u);  // < 0 or > 1
      if (!nonfinite && !outside) continue;
      bad(fmt::format("tensor '{}'[token {}, layer {}, {}]", name, i / (L * inner), (i / inner) % L,
                      i % inner),
          probability ? "finite probabilities in [0, 1]" : "finite values",
          fmt::format("{}", st::half_to_float(h)));
    }
  }

  // Ids and weights are small: check them all now.
  void check_ids_and_weights(int64_t T) {
    const int64_t L = info_.moe_layers, E = info_.routing.experts, k = info_.routing.top_k;
    std::vector<int32_t> ids;
    std::vector<float> weights;
    std::vector<int32_t> row(k);
    // Holes (docs/TRACE_FORMAT.md): rows whose every id is kHoleId and every
    // weight 0, only in a file whose metadata counts them, never with gate
    // inputs.
    const bool may_have_holes = file_->metadata().count("holes") > 0;
    const int64_t holes_stated = may_have_holes ? meta_int("holes", 1, T * L) : 0;
    if (may_have_holes && info_.h_trace > 0) {
      bad("__metadata__.holes", "no holes in a trace with gate inputs (h_trace > 0)",
          fmt::format("{} with h_trace {}", holes_stated, info_.h_trace));
    }
    int64_t holes = 0;
    const int64_t chunk_tokens = std::max<int64_t>(1, kScanChunk / (L * k));
    for (int64_t t = 0; t < T; ++t) {
      if (t % chunk_tokens == 0) {  // read through the guard, a chunk of tokens at a time
        const size_t n = size_t(std::min(chunk_tokens, T - t) * L * k);
        ids.resize(n);
        weights.resize(n);
        file_->read(file_->data(*ids_) + t * L * k * 4, ids.data(), n * 4);
        file_->read(file_->data(*weights_) + t * L * k * 4, weights.data(), n * 4);
      }
      const int64_t t0 = (t % chunk_tokens) * L * k;  // this token's first entry in the chunk
      for (int64_t l = 0; l < L; ++l) {
        std::memcpy(row.data(), ids.data() + t0 + l * k, size_t(k) * 4);
        if (may_have_holes && row[0] == kHoleId) {
          for (int64_t j = 0; j < k; ++j) {
            const float w = weights[size_t(t0 + l * k + j)];
            if (row[j] != kHoleId || w != 0.0f) {
              bad(fmt::format("topk_ids[token {}, layer {}]", t, l),
                  fmt::format("a hole (every id {} and every weight 0) or expert ids in [0, {})",
                              kHoleId, E),
                  fmt::format("id {} weight {} at rank {}", row[j], w, j));
            }
          }
          ++holes;
          continue;
        }
        bool any_weight = false;
        for (int64_t j = 0; j < k; ++j) {
          if (row[j] < 0 || row[j] >= E) {
            bad(fmt::format("topk_ids[token {}, layer {}]", t, l),
                fmt::format("expert ids in [0, {})", E), std::to_string(row[j]));
          }
          for (int64_t i = 0; i < j; ++i) {
            if (row[i] == row[j])
              bad(fmt::format("topk_ids[token {}, layer {}]", t, l), "distinct expert ids",
                  fmt::format("expert {} twice", row[j]));
          }
          const float w = weights[size_t(t0 + l * k + j)];
          if (!std::isfinite(w) || w < 0) {
            bad(fmt::format("topk_weights[token {}, layer {}]", t, l),
                "finite non-negative weights", fmt::format("{}", w));
          }
          any_weight = any_weight || w > 0;
        }
        // A layer whose chosen experts all have weight 0 contributes nothing:
        // no router gives that (ids-only logs are converted with 1/k).
        if (!any_weight) {
          bad(fmt::format("topk_weights[token {}, layer {}]", t, l),
              "at least one positive combine weight among the top-k", "all zero");
        }
      }
    }
    if (holes != holes_stated) {
      bad("__metadata__.holes", fmt::format("the number of hole rows ({})", holes),
          std::to_string(holes_stated));
    }
    info_.hole_rows = holes;
  }

  std::unique_ptr<st::File> file_;
  TraceInfo info_;
  GateWeights gates_;
};

FileSequenceReader::FileSequenceReader(const FileTraceSource* src, int64_t seq, unsigned fields)
    : src_(src), seq_(seq), fields_(fields) {
  first_ = src->info().first_token(seq);
  len_ = src->info().sequences[seq].tokens();
}

bool FileSequenceReader::next(TokenRecord& out) {
  if (pos_ >= len_) return false;
  const TraceInfo& in = src_->info();
  const st::File& f = src_->file();
  const int64_t L = in.moe_layers, k = in.top_k(), E = in.experts(), H = in.h_trace;
  const int64_t t = first_ + pos_;
  out.seq = seq_;
  out.pos = pos_;
  out.ids.resize(L * k);
  out.weights.resize(L * k);
  f.read(f.data(*src_->ids_) + t * L * k * 4, out.ids.data(), size_t(L * k) * 4);
  f.read(f.data(*src_->weights_) + t * L * k * 4, out.weights.data(), size_t(L * k) * 4);
  auto nan_check = [&](const std::vector<float>& v, const char* what) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (std::isnan(v[i])) {
        throw Error(fmt::format("{}: {}[token {}, layer {}]: expected numbers, found NaN", f.path(),
                                what, t, int64_t(i) / (int64_t(v.size()) / L)));
      }
    }
  };
  out.probs.clear();
  if ((fields_ & kProbs) && in.probs != ProbsStorage::kNone) {
    out.probs.assign(L * E, 0.0f);
    if (src_->probs_) {
      raw_.resize(size_t(L * E) * 2);
      f.read(f.data(*src_->probs_) + t * L * E * 2, raw_.data(), raw_.size());
      if (st::half_to_float_n(raw_.data(), L * E, out.probs.data())) {
        nan_check(out.probs, "router probabilities");
      }
    } else {
      const int64_t P = in.top_p;
      raw_.resize(size_t(L * P) * 6);
      uint8_t* const ip = raw_.data();
      uint8_t* const pp = raw_.data() + L * P * 4;
      f.read(f.data(*src_->topp_ids_) + t * L * P * 4, ip, size_t(L * P) * 4);
      f.read(f.data(*src_->topp_probs_) + t * L * P * 2, pp, size_t(L * P) * 2);
      for (int64_t l = 0; l < L; ++l) {
        for (int64_t j = 0; j < P; ++j) {
          int32_t id;
          uint16_t h;
          std::memcpy(&id, ip + (l * P + j) * 4, 4);
          std::memcpy(&h, pp + (l * P + j) * 2, 2);
          if (id == kHoleId && out.ids[l * k] == kHoleId) continue;  // a hole row: no probabilities
          if (id < 0 || id >= E) {
            throw Error(fmt::format(
                "{}: router_topp_ids[token {}, layer {}]: expected expert ids in [0, {}), found {}",
                f.path(), t, l, E, id));
          }
          out.probs[l * E + id] = st::half_to_float(h);
        }
      }
      nan_check(out.probs, "router probabilities");
    }
  }
  out.gate_input.clear();
  if ((fields_ & kGateInput) && H > 0) {
    out.gate_input.resize(L * H);
    raw_.resize(size_t(L * H) * 2);
    f.read(f.data(*src_->gate_) + t * L * H * 2, raw_.data(), raw_.size());
    if (st::half_to_float_n(raw_.data(), L * H, out.gate_input.data())) {
      nan_check(out.gate_input, "gate_input");
    }
  }
  ++pos_;
  return true;
}

}  // namespace

std::unique_ptr<TraceSource> open_trace_file(const std::filesystem::path& path) {
  return std::make_unique<FileTraceSource>(st::File::open(path));
}

}  // namespace moebench
