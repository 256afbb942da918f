// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/convert/jsonl_convert.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/trace/memory_source.h"
#include "core/util/atomic_file.h"
#include "core/util/json_text.h"
#include "core/util/memory.h"
#include "core/util/paths.h"
#include "core/util/sha256.h"
#include "core/util/strings.h"
#include "workloads/convert/jsonl_line.h"
#include "workloads/convert/jsonl_rows.h"

namespace moebench {

namespace {

using jsonl::Row;

struct Seq {
  std::map<int64_t, std::vector<Row>> tokens;  // token -> layers
  std::map<int64_t, bool> prompt;
  // layout per-forward: the current pass's first position, its (token,
  // layer) rows seen, its largest token, and how many passes began.
  int64_t pass_base = 0, pass_max = -1, passes = 0;
  std::unordered_set<int64_t> pass_rows;  // token * L + layer
};

// Keys of a line whose names suggest a canonical field (lower case, a
// substring match), for the error that lists every missing field.
std::string guess_key(const nlohmann::ordered_json& j, const std::string& field) {
  static const std::map<std::string, std::vector<std::string>> hints = {
      {"seq",
       {"request", "req_id", "seq", "sequence", "sample", "conversation", "problem", "prompt_id",
        "uid", "session"}},
      {"token", {"position", "pos", "token", "step"}},
      {"layer", {"layer"}},
      {"experts", {"expert", "topk_id", "ids", "selected"}},
      {"weights", {"weight", "topk_w", "gate_w"}},
      {"probs", {"probs", "gating", "score", "prob"}},
      {"logits", {"logit"}}};
  for (const auto& h : hints.at(field)) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string k = it.key();
      std::transform(k.begin(), k.end(), k.begin(),
                     [](unsigned char c) { return char(std::tolower(c)); });
      if (k.find(h) != std::string::npos) return it.key();
    }
  }
  return "";
}

// The same file twice would double its sequences, and an output that is an
// input would replace the log it is converted from.
void check_inputs_and_output(const std::vector<std::string>& inputs, const std::string& out) {
  namespace fs = std::filesystem;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::error_code ec;
    for (size_t j = 0; j < i; ++j) {
      if (fs::equivalent(inputs[i], inputs[j], ec)) {
        throw Error(fmt::format(
            "{}: expected each input file once, found it twice (also as {}): its sequences would "
            "be counted twice",
            inputs[i], inputs[j]));
      }
    }
    if (!out.empty() && fs::exists(out, ec) && fs::equivalent(inputs[i], out, ec)) {
      throw Error(fmt::format(
          "--out {}: expected a file other than the inputs, found the input {} itself; nothing "
          "was written",
          out, inputs[i]));
    }
  }
}

// Why a line that is not valid JSON may not be one, for the error: the text
// of a UTF-16 file or of one whose lines end with CR only.
// Parses one line; `duplicate` gets the first key an object repeats.
nlohmann::ordered_json parse_line(const std::string& line, std::string* duplicate) {
  std::vector<std::unordered_set<std::string>> keys;
  return nlohmann::ordered_json::parse(
      line, [&](int, nlohmann::ordered_json::parse_event_t ev, nlohmann::ordered_json& v) {
        using E = nlohmann::ordered_json::parse_event_t;
        if (ev == E::object_start) keys.emplace_back();
        if (ev == E::object_end && !keys.empty()) keys.pop_back();
        if (ev == E::key && !keys.empty() && v.is_string() &&
            !keys.back().insert(v.get<std::string>()).second && duplicate->empty())
          *duplicate = v.get<std::string>();
        return true;
      });
}

std::string encoding_hint(const std::string& line) {
  const bool bom16 = line.size() >= 2 && ((uint8_t(line[0]) == 0xff && uint8_t(line[1]) == 0xfe) ||
                                          (uint8_t(line[0]) == 0xfe && uint8_t(line[1]) == 0xff));
  if (bom16 || line.find('\0') != std::string::npos) {
    return "; the file looks like UTF-16 (NUL bytes between characters): convert it to UTF-8 "
           "first, e.g. iconv -f UTF-16 -t UTF-8 IN > OUT";
  }
  const size_t cr = line.find('\r');
  if (cr != std::string::npos && cr + 1 < line.size()) {
    return "; its lines look separated by CR alone (not LF): convert them first, e.g. tr '\\r' "
           "'\\n' < IN > OUT";
  }
  return "";
}

}  // namespace

const std::vector<std::string>& convert_field_names() {
  static const std::vector<std::string> n = {"seq",     "token", "layer",  "experts",
                                             "weights", "probs", "logits", "prompt"};
  return n;
}

namespace {

using Json = nlohmann::ordered_json;
using jsonl::Line;
using jsonl::Rows;
using SeqKey = std::pair<int64_t, int64_t>;  // (file, seq id)

// One conversion: the options checked, every line read into rows of a grid
// per sequence, the grid's missing rows handled, the trace written. What a
// line says is jsonl::Line's (its fields by canonical name, where it is:
// jsonl_line.h), its routing row jsonl::Rows' (jsonl_rows.h).
class JsonlConverter {
 public:
  JsonlConverter(const ConvertOptions& opt, const ConfigPaths& paths);
  ConvertSummary run();

 private:
  void check_fields(const Json& j) const;
  void read_input(size_t fi);
  int64_t seq_of(const Json& j, std::map<std::string, int64_t>& string_ids, int& seq_kind,
                 int64_t& seq_kind_line) const;
  void place(size_t fi, int64_t s, int64_t t, int64_t l, Row row, const Json& j);
  std::string seq_name(const SeqKey& fs, const char* word = "seq") const;
  void count_missing();
  void resolve_missing();
  TraceInfo trace_info() const;
  void write(const TraceInfo& info);

  const ConvertOptions& opt_;
  const ModelSpec m_;
  const int64_t L, E, k;
  std::vector<std::string> inputs_;
  std::string all_inputs_;
  bool per_forward_ = false;
  Line line_;  // the line being read: its fields by canonical name, where it is
  Rows rows_;  // its routing row, and the probability widths seen
  std::map<SeqKey, Seq> seqs_;
  ConvertSummary sum_;
  int64_t width_ = 0;  // probabilities the trace stores per row: 0, k or E
};

JsonlConverter::JsonlConverter(const ConvertOptions& opt, const ConfigPaths& paths)
    : opt_(opt),
      m_(load_model(opt.model, paths)),
      L(m_.moe_layers()),
      E(m_.routed_experts),
      k(m_.top_k),
      line_(opt.fields),
      rows_(m_, line_) {
  if (opt.missing != "error" && opt.missing != "drop" && opt.missing != "fill" &&
      opt.missing != "hole") {
    throw Error(
        fmt::format("--missing: expected one of error, drop, fill, hole, found '{}'", opt.missing));
  }
  if (opt.layout != "positions" && opt.layout != "per-forward") {
    throw Error(fmt::format("--layout: expected positions or per-forward, found '{}'", opt.layout));
  }
  inputs_ = opt.inputs.empty() ? std::vector<std::string>{opt.input} : opt.inputs;
  for (const auto& f : inputs_) require_regular_file(f, "a readable JSON-lines file");
  check_inputs_and_output(inputs_, opt.out);
  all_inputs_ = join(inputs_, ", ");
  per_forward_ = opt.layout == "per-forward";
}

// Every field the first line lacks, in one error with a command that maps them.
void JsonlConverter::check_fields(const Json& j) const {
  std::vector<std::string> missing, maps;
  auto has = [&](const std::string& f) { return line_.find(j, f).first != nullptr; };
  auto need = [&](const std::string& f, const std::string& what) {
    std::vector<std::string> tried;
    for (const auto& key : line_.keys(f)) tried.push_back("'" + key + "'");
    missing.push_back(fmt::format("{} ({}; looked for {})", f, what, join(tried, " or ")));
    const std::string g = guess_key(j, f);
    maps.push_back(fmt::format("--field {}={}", f, g.empty() ? "KEY" : g));
  };
  if (!has("seq")) need("seq", "the sequence or request id");
  if (!has("token")) need("token", "the token's position");
  if (!has("layer")) need("layer", "the MoE layer");
  const bool scores = has("probs") || has("logits");
  if (!has("experts") && !scores) need("experts", fmt::format("the {} chosen expert ids", k));
  if (!has("weights") && !scores) {
    need("weights", fmt::format("the {} combine weights, or probs/logits", k));
    // No weights-like key but a probabilities-like one (gating_probs): the
    // weights are taken from the probabilities, so map those instead.
    if (guess_key(j, "weights").empty() && !guess_key(j, "probs").empty())
      maps.back() = "--field probs=" + guess_key(j, "probs");
  }
  if (missing.empty()) return;
  std::vector<std::string> found;
  for (auto it = j.begin(); it != j.end(); ++it) found.push_back(it.key());
  std::vector<std::string> mapped;
  for (const auto& [f, key] : opt_.fields) mapped.push_back(fmt::format("--field {}={}", f, key));
  throw Error(fmt::format(
      "{}:{}: expected the fields seq, token, layer, experts and weights (or probs/logits), "
      "found {} of them "
      "missing: {}; the line's keys: {}. Map each to the log's key, e.g.\n  moebench trace "
      "convert {} --model {} "
      "--out {}{}{} {}",
      line_.file(), line_.line(), missing.size(), join(missing, ", "),
      found.empty() ? "none" : join(found, ", "), join(inputs_, " "), opt_.model,
      opt_.out.empty() ? "OUT" : opt_.out, opt_.layout != "positions" ? " --layout " : "",
      opt_.layout != "positions" ? opt_.layout : "",
      join(mapped, " ") + (mapped.empty() ? "" : " ") + join(maps, " ")));
}

// The line's sequence: an integer id, or a string id (a request id such as
// vLLM's "cmpl-...") numbered in order of first appearance, per file; one
// file must not mix the two kinds (mixed, they would join other sequences).
int64_t JsonlConverter::seq_of(const Json& j, std::map<std::string, int64_t>& string_ids,
                               int& seq_kind, int64_t& seq_kind_line) const {
  auto [sv, s_key] = line_.find(j, "seq");
  if (sv) {
    const int kind = sv->is_string() ? 2 : 1;
    if (seq_kind == 0) {
      seq_kind = kind;
      seq_kind_line = line_.line();
    } else if (kind != seq_kind) {
      line_.bad(s_key,
                fmt::format("sequence ids of one kind in a file ({} since line {})",
                            seq_kind == 2 ? "strings" : "integers", seq_kind_line),
                sv->dump());
    }
  }
  if (sv && sv->is_string()) {
    const auto [it, fresh] = string_ids.emplace(sv->get<std::string>(), int64_t(string_ids.size()));
    return it->second;
  }
  return line_.get_int(j, "seq", 0, int64_t(1) << 40);
}

// The row into its sequence's grid at (token, layer); with the per-forward
// layout, positions count on across the sequence's forward passes (a
// (token, layer) of the current pass again begins the next pass).
void JsonlConverter::place(size_t fi, int64_t s, int64_t t, int64_t l, Row row, const Json& j) {
  Seq& sq = seqs_[{int64_t(fi), s}];
  if (per_forward_) {
    const int64_t tl = t * L + l;
    if (sq.passes == 0 || sq.pass_rows.count(tl) > 0) {
      if (sq.passes > 0) sq.pass_base += sq.pass_max + 1;
      ++sq.passes;
      ++sum_.forward_passes;
      sq.pass_rows.clear();
      sq.pass_max = -1;
    }
    sq.pass_rows.insert(tl);
    sq.pass_max = std::max(sq.pass_max, t);
    if (sq.passes == 1 && opt_.prompt_len < 0)
      sq.prompt[sq.pass_base + t] = true;  // the first pass: the prompt
    if (sq.pass_base + t >= (int64_t(1) << 40))
      line_.bad("", "positions below 2^40", std::to_string(sq.pass_base + t));
    t += sq.pass_base;
  }
  auto& layers = sq.tokens[t];
  layers.resize(L);
  if (layers[l].seen)
    line_.bad("", "each (seq, token, layer) once",
              fmt::format("seq {} token {} layer {} again{}", s, t, l,
                          per_forward_ ? ""
                                       : " (a log whose positions restart in every forward pass "
                                         "needs --layout per-forward)"));
  layers[l] = std::move(row);
  if (auto [p, p_key] = line_.find(j, "prompt"); p) {
    if (!p->is_boolean()) line_.bad(p_key, "a boolean", p->dump());
    sq.prompt[t] = p->get<bool>();
  }
}

// Every line of input fi into the grid.
void JsonlConverter::read_input(size_t fi) {
  const std::string& input = inputs_[fi];
  std::ifstream in(input);
  if (!in)
    throw Error(fmt::format(
        "{}: expected a readable JSON-lines file, found one that cannot be opened", input));
  int64_t lineno = 0;
  bool first = true;
  std::map<std::string, int64_t> string_ids;  // string sequence ids of this file
  int seq_kind = 0;  // 1: integer ids, 2: string ids (one file must not mix them)
  int64_t seq_kind_line = 0;
  std::string line;
  while (std::getline(in, line)) {
    line_.at(input, ++lineno);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ++sum_.lines;
    Json j;
    std::string duplicate;  // JSON lets a repeated key replace the first: refused instead
    try {
      j = parse_line(line, &duplicate);
    } catch (const Json::exception& e) {
      line_.bad("", "a JSON object",
                fmt::format("invalid JSON ({}){}", e.what(), encoding_hint(line)));
    }
    if (!duplicate.empty()) line_.bad(duplicate, "each key once per object", "it twice");
    if (!j.is_object()) line_.bad("", "a JSON object", j.type_name());
    if (first) check_fields(j);
    first = false;
    const int64_t s = seq_of(j, string_ids, seq_kind, seq_kind_line);
    const int64_t t = line_.get_int(j, "token", 0, int64_t(1) << 40);
    const int64_t l = line_.get_int(j, "layer", 0, L);
    place(fi, s, t, l, rows_.row_of(j), j);
  }
}

// "seq 3" ("sequence 3"), or "seq 3 of b.jsonl" with several files.
std::string JsonlConverter::seq_name(const SeqKey& fs, const char* word) const {
  return inputs_.size() > 1 ? fmt::format("{} {} of {}", word, fs.second, inputs_[size_t(fs.first)])
                            : fmt::format("{} {}", word, fs.second);
}

// Missing rows of the grid: counted from the rows present (never by
// visiting every position up to the largest, which a token of 2^31 made a
// 24 GB allocation), then an error, or (fill, hole) checked to fit. Positions
// count from 0 in each sequence; a run of more than kMaxTokenGap positions
// with no row at all is refused as a wrong field mapping, not lost rows.
void JsonlConverter::count_missing() {
  std::string first_missing;
  int64_t missing_tokens = 0, kept_estimate = 0;
  for (auto& [s, sq] : seqs_) {
    int64_t prev_t = -1;
    for (auto& [t, layers] : sq.tokens) {
      const int64_t gap = t - prev_t - 1;
      if (gap > kMaxTokenGap) {
        throw Error(fmt::format(
            "{}: {}: expected token positions 0, 1, 2, ... with at most {} consecutive positions "
            "missing, "
            "found {} missing before token {}{} (is --field token=KEY mapped to the position in "
            "the sequence? a "
            "log whose positions restart in every forward pass needs --layout per-forward)",
            all_inputs_, seq_name(s, "sequence"), kMaxTokenGap, gap, t,
            prev_t < 0 ? " (its first row)" : fmt::format(" (after token {})", prev_t)));
      }
      if (gap > 0 && first_missing.empty())
        first_missing = fmt::format("{} token {} layer 0", seq_name(s), prev_t + 1);
      missing_tokens += gap;
      sum_.missing_rows += gap * L;
      for (int64_t l = 0; l < L; ++l) {
        if (layers[l].seen) continue;
        ++sum_.missing_rows;
        if (first_missing.empty())
          first_missing = fmt::format("{} token {} layer {}", seq_name(s), t, l);
      }
      prev_t = t;
    }
    kept_estimate += prev_t + 1;
  }
  if (sum_.missing_rows > 0 && opt_.missing == "error") {
    throw Error(fmt::format(
        "{}: expected every (seq, token, layer) row of tokens 0..n-1 and layers 0..{}, found {} "
        "missing (first: {}); --missing hole keeps them as holes that statistics and the "
        "simulator skip, --missing drop removes tokens with a missing layer, --missing fill "
        "copies the previous token's routing of that layer",
        all_inputs_, L - 1, sum_.missing_rows, first_missing));
  }
  if (opt_.missing == "fill" || opt_.missing == "hole") {
    // Every position of every sequence is materialised: check it fits first.
    const uint64_t per_token = uint64_t(L) * uint64_t(k * 8 + width_ * 4 + 64);
    check_allocation(uint64_t(kept_estimate) * per_token,
                     fmt::format("{}: --missing {} of {} tokens ({} of them with no row at all)",
                                 all_inputs_, opt_.missing, kept_estimate, missing_tokens));
  }
}

// Every sequence's tokens renumbered 0, 1, ... with its missing rows
// dropped (whole tokens), made holes (every id kHoleId, every weight 0, no
// probabilities) or filled from the previous token.
void JsonlConverter::resolve_missing() {
  Row hole_row;
  hole_row.seen = true;
  hole_row.ids.assign(size_t(k), kHoleId);
  hole_row.weights.assign(size_t(k), 0.0f);
  for (auto& [s, sq] : seqs_) {
    std::map<int64_t, std::vector<Row>> kept;
    std::map<int64_t, bool> prompt;
    const std::vector<Row>* prev = nullptr;
    int64_t prev_t = -1;
    const std::string seq_id = seq_name(s, "sequence");
    auto no_previous = [&](int64_t t, int64_t l) {
      throw Error(
          fmt::format("{}: --missing fill: expected a previous token to copy from, found {} "
                      "token {} layer {} missing at the sequence's start (use --missing drop)",
                      all_inputs_, seq_id, t, l));
    };
    for (auto& [t, layers] : sq.tokens) {
      // Positions with no row at all.
      for (int64_t g = prev_t + 1; g < t; ++g) {
        if (opt_.missing == "drop") {
          ++sum_.dropped_tokens;
          continue;
        }
        if (opt_.missing == "hole") {
          kept[int64_t(kept.size())] = std::vector<Row>(size_t(L), hole_row);
          sum_.hole_rows += L;
          continue;
        }
        if (!prev) no_previous(g, 0);
        const int64_t nt = int64_t(kept.size());
        prev = &(kept[nt] = *prev);
        sum_.filled_rows += L;
      }
      prev_t = t;
      bool whole = true;
      for (int64_t l = 0; l < L; ++l) whole = whole && layers[l].seen;
      if (!whole && opt_.missing == "drop") {
        ++sum_.dropped_tokens;
        continue;
      }
      if (!whole && opt_.missing == "hole") {
        for (int64_t l = 0; l < L; ++l) {
          if (layers[l].seen) continue;
          layers[l] = hole_row;
          ++sum_.hole_rows;
        }
      } else if (!whole) {
        for (int64_t l = 0; l < L; ++l) {
          if (layers[l].seen) continue;
          if (!prev) no_previous(t, l);
          layers[l] = (*prev)[l];
          ++sum_.filled_rows;
        }
      }
      const int64_t nt = int64_t(kept.size());
      if (sq.prompt.count(t)) prompt[nt] = sq.prompt.at(t);
      prev = &(kept[nt] = std::move(layers));
    }
    sq.tokens = std::move(kept);
    sq.prompt = std::move(prompt);
  }
}

// The trace's header: the model, what the probabilities are, where the
// trace came from and what was done to its missing rows, its sequences.
TraceInfo JsonlConverter::trace_info() const {
  TraceInfo info;
  info.model_name = m_.name;
  info.model_hash = m_.routing_hash();
  info.moe_layers = L;
  info.routing = RoutingConfig::from_model(m_);
  info.probs = width_ == 0   ? ProbsStorage::kNone
               : width_ == E ? ProbsStorage::kFull
                             : ProbsStorage::kTopP;
  info.top_p = width_ == k ? k : 0;
  Json src;
  src["converter"] = "moebench trace convert (jsonl)";
  if (inputs_.size() == 1) {
    src["input"] = inputs_[0];
    src["input_sha256"] = sha256_hex(read_file(inputs_[0]));
  } else {
    src["inputs"] = inputs_;
    std::vector<std::string> hashes;
    for (const auto& f : inputs_) hashes.push_back(sha256_hex(read_file(f)));
    src["inputs_sha256"] = hashes;
  }
  src["layout"] = opt_.layout;
  if (!sum_.notes.empty()) src["notes"] = sum_.notes;
  src["probs"] =
      width_ == 0 ? "none: the log gives no router probabilities; components that need them (MRS, "
                    "probability-based predictors) are refused on this trace"
      : width_ == k ? "top-k: the chosen experts' probabilities only; a component that reads more "
                      "(MRS: p = 2k) runs with p = k and its rows say so"
                    : "full: every expert's router probability";
  src["missing"] = opt_.missing;
  src["missing_rows"] = sum_.missing_rows;
  src["dropped_tokens"] = sum_.dropped_tokens;
  src["filled_rows"] = sum_.filled_rows;
  src["hole_rows"] = sum_.hole_rows;
  info.source = json_text(src);
  info.hole_rows = sum_.hole_rows;
  for (const auto& [s, sq] : seqs_) {
    const int64_t n = int64_t(sq.tokens.size());
    if (n == 0) continue;
    int64_t prompt = 0;
    if (opt_.prompt_len >= 0) {
      prompt = std::min(opt_.prompt_len, n);
    } else {
      while (prompt < n && sq.prompt.count(prompt) && sq.prompt.at(prompt)) ++prompt;
    }
    info.sequences.push_back({prompt, n - prompt});
  }
  if (info.sequences.empty()) {
    throw Error(fmt::format(
        "{}: expected at least one token with every layer, found none after --missing drop",
        all_inputs_));
  }
  return info;
}

// The rows as a trace file (top-k probabilities at the chosen experts).
void JsonlConverter::write(const TraceInfo& info) {
  MemoryTraceSource mem(info);
  int64_t si = 0;
  for (const auto& [s, sq] : seqs_) {
    if (sq.tokens.empty()) continue;
    for (const auto& [t, layers] : sq.tokens) {
      TokenRecord r;
      if (width_ > 0) r.probs.assign(L * E, 0.0f);
      for (int64_t l = 0; l < L; ++l) {
        const Row& row = layers[l];
        r.ids.insert(r.ids.end(), row.ids.begin(), row.ids.end());
        r.weights.insert(r.weights.end(), row.weights.begin(), row.weights.end());
        if (row.ids[0] == kHoleId) continue;  // a hole: no probabilities
        if (width_ == E) {
          std::copy(row.probs.begin(), row.probs.begin() + E, r.probs.begin() + l * E);
        } else if (width_ == k) {
          // Top-k probabilities: from a top-k row as given, from a full-width row at the chosen
          // experts.
          for (int64_t j = 0; j < k; ++j) {
            r.probs[l * E + row.ids[j]] =
                int64_t(row.probs.size()) == E ? row.probs[row.ids[j]] : row.probs[j];
          }
        }
      }
      mem.add(si, std::move(r));
      ++sum_.tokens;
    }
    ++si;
  }
  sum_.sequences = si;
  TraceWriteOptions w;
  w.probs = info.probs;
  w.top_p = info.top_p;
  w.gate_inputs = false;
  write_trace(mem, opt_.out, w);
}

ConvertSummary JsonlConverter::run() {
  for (size_t fi = 0; fi < inputs_.size(); ++fi) read_input(fi);
  if (seqs_.empty())
    throw Error(fmt::format("{}: expected at least one routing record, found none", all_inputs_));
  if (auto note = rows_.renormalised_note()) sum_.notes.push_back(*note);
  // What the trace can store: the narrowest width every line has.
  width_ = rows_.narrowest_width();
  sum_.probs_width = width_;
  count_missing();
  resolve_missing();
  write(trace_info());
  return sum_;
}

}  // namespace

ConvertSummary convert_jsonl(const ConvertOptions& opt, const ConfigPaths& paths) {
  return JsonlConverter(opt, paths).run();
}

}  // namespace moebench
