// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/convert/jsonl_convert.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/trace/memory_source.h"
#include "core/trace/routing.h"
#include "core/trace/safetensors.h"
#include "core/util/atomic_file.h"
#include "core/util/memory.h"
#include "core/util/paths.h"
#include "core/util/sha256.h"
#include "core/util/strings.h"

namespace moebench {

namespace {

struct Row {
  bool seen = false;
  std::vector<int32_t> ids;
  std::vector<float> weights;  // k
  std::vector<float> probs;    // k (aligned with ids), E (full width) or empty
};

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

const std::map<std::string, std::vector<std::string>>& default_keys() {
  static const std::map<std::string, std::vector<std::string>> k = {
      {"seq", {"seq", "sequence"}}, {"token", {"token"}},     {"layer", {"layer"}},
      {"experts", {"experts"}},     {"weights", {"weights"}}, {"probs", {"probs"}},
      {"logits", {"logits"}},       {"prompt", {"prompt"}}};
  return k;
}

}  // namespace

const std::vector<std::string>& convert_field_names() {
  static const std::vector<std::string> n = {"seq",     "token", "layer",  "experts",
                                             "weights", "probs", "logits", "prompt"};
  return n;
}

ConvertSummary convert_jsonl(const ConvertOptions& opt, const ConfigPaths& paths) {
  const ModelSpec m = load_model(opt.model, paths);
  const int64_t L = m.moe_layers(), E = m.routed_experts, k = m.top_k;
  const RoutingConfig rc = RoutingConfig::from_model(m);
  const bool grouped = rc.n_group > 1 && rc.topk_group < rc.n_group;
  if (opt.missing != "error" && opt.missing != "drop" && opt.missing != "fill" &&
      opt.missing != "hole") {
    throw Error(
        fmt::format("--missing: expected one of error, drop, fill, hole, found '{}'", opt.missing));
  }
  std::map<std::string, std::vector<std::string>> keys = default_keys();
  for (const auto& [field, key] : opt.fields) {
    if (!keys.count(field)) {
      throw Error(fmt::format("--field {}={}: expected a field among {}, found '{}'", field, key,
                              join(convert_field_names(), ", "), field));
    }
    if (key.empty())
      throw Error(
          fmt::format("--field {}=: expected the log's key name, found an empty one", field));
    keys[field] = {key};
  }
  if (opt.layout != "positions" && opt.layout != "per-forward") {
    throw Error(fmt::format("--layout: expected positions or per-forward, found '{}'", opt.layout));
  }
  const std::vector<std::string> inputs =
      opt.inputs.empty() ? std::vector<std::string>{opt.input} : opt.inputs;
  for (const auto& f : inputs) require_regular_file(f, "a readable JSON-lines file");
  check_inputs_and_output(inputs, opt.out);
  const bool per_forward = opt.layout == "per-forward";
  std::map<std::pair<int64_t, int64_t>, Seq> seqs;  // (file, seq id)
  ConvertSummary sum;
  std::string line;
  int64_t lineno = 0;
  std::string input;  // the file being read
  auto bad = [&](const std::string& key, const std::string& expected, const std::string& found) {
    throw Error(fmt::format("{}:{}: {}expected {}, found {}", input, lineno,
                            key.empty() ? "" : "key '" + key + "': ", expected,
                            found.substr(0, 200)));
  };
  // The value of a canonical field in line `j` and the key it was found under.
  auto find =
      [&](const nlohmann::ordered_json& j,
          const std::string& field) -> std::pair<const nlohmann::ordered_json*, std::string> {
    for (const auto& key : keys.at(field)) {
      if (auto it = j.find(key); it != j.end()) return {&*it, key};
    }
    return {nullptr, keys.at(field).front()};
  };
  auto get_int = [&](const nlohmann::ordered_json& j, const std::string& field, int64_t lo,
                     int64_t hi) -> int64_t {
    auto [v, key] = find(j, field);
    if (!v)
      bad(key,
          fmt::format("an integer (field '{}'; map another key with --field {}=KEY)", field, field),
          "no value");
    if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() >= hi) {
      bad(key, fmt::format("an integer in [{}, {})", lo, hi), v->dump());
    }
    return v->get<int64_t>();
  };
  auto numbers = [&](const nlohmann::ordered_json* v, const std::string& key, bool non_negative) {
    std::vector<float> out;
    if (!v->is_array()) bad(key, "an array of numbers", v->dump());
    for (const auto& x : *v) {
      if (!x.is_number() || !std::isfinite(x.get<double>()) ||
          (non_negative && x.get<double>() < 0)) {
        bad(key, non_negative ? "finite non-negative numbers" : "finite numbers", x.dump());
      }
      // Stored as 32-bit floats: 1e39 would become inf, which the trace
      // reader refuses (the error is the log's line, not a token's index).
      if (!std::isfinite(float(x.get<double>()))) {
        bad(key, "numbers a 32-bit float holds (magnitude below 3.4e38)", x.dump());
      }
      out.push_back(float(x.get<double>()));
    }
    return out;
  };
  // Probabilities in [0, 1] as stored (half precision: 1.0004 is 1, 1.001
  // is not), every value the trace reader would refuse refused at its line.
  auto check_probs = [&](const std::vector<float>& p, const std::string& key,
                         const nlohmann::ordered_json* v) {
    for (float x : p) {
      if (st::float_to_half(x) > 0x3c00u)
        bad(key, "probabilities in [0, 1]", fmt::format("{} in {}", x, v->dump()));
    }
  };
  // At least one positive combine weight as stored: all 0 (or 1e-46, which
  // a float rounds to 0) is a layer that contributes nothing.
  auto check_weights = [&](const std::vector<float>& w, const std::string& key,
                           const nlohmann::ordered_json* v) {
    if (std::none_of(w.begin(), w.end(), [](float x) { return x > 0.0f; })) {
      bad(key,
          "at least one positive combine weight among the top-k (as a 32-bit float: values "
          "below 1.4e-45 are 0)",
          v ? v->dump() : std::string("all zero"));
    }
  };
  // Every field the first line lacks, in one error with a command that maps them.
  auto check_fields = [&](const nlohmann::ordered_json& j) {
    std::vector<std::string> missing, maps;
    auto has = [&](const std::string& f) { return find(j, f).first != nullptr; };
    auto need = [&](const std::string& f, const std::string& what) {
      std::vector<std::string> tried;
      for (const auto& key : keys.at(f)) tried.push_back("'" + key + "'");
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
    for (const auto& [f, key] : opt.fields) mapped.push_back(fmt::format("--field {}={}", f, key));
    throw Error(fmt::format(
        "{}:{}: expected the fields seq, token, layer, experts and weights (or probs/logits), "
        "found {} of them "
        "missing: {}; the line's keys: {}. Map each to the log's key, e.g.\n  moebench trace "
        "convert {} --model {} "
        "--out {}{}{} {}",
        input, lineno, missing.size(), join(missing, ", "),
        found.empty() ? "none" : join(found, ", "), join(inputs, " "), opt.model,
        opt.out.empty() ? "OUT" : opt.out, opt.layout != "positions" ? " --layout " : "",
        opt.layout != "positions" ? opt.layout : "",
        join(mapped, " ") + (mapped.empty() ? "" : " ") + join(maps, " ")));
  };
  RoutingScratch scratch;
  std::vector<int32_t> rid(k);
  std::vector<float> rw(k), rp(E);
  int64_t widths[3] = {0, 0, 0};  // lines with no probs, top-k probs, full-width probs
  int64_t topk_rows = 0,
          topk_sum_one = 0;  // rows with top-k probs; those summing to 1 (renormalised?)
  for (size_t fi = 0; fi < inputs.size(); ++fi) {
    input = inputs[fi];
    std::ifstream in(input);
    if (!in)
      throw Error(fmt::format(
          "{}: expected a readable JSON-lines file, found one that cannot be opened", input));
    lineno = 0;
    bool first = true;
    std::map<std::string, int64_t> string_ids;  // string sequence ids of this file
    int seq_kind = 0;  // 1: integer ids, 2: string ids (one file must not mix them)
    int64_t seq_kind_line = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      ++sum.lines;
      nlohmann::ordered_json j;
      std::string duplicate;  // JSON lets a repeated key replace the first: refused instead
      try {
        j = parse_line(line, &duplicate);
      } catch (const nlohmann::ordered_json::exception& e) {
        bad("", "a JSON object", fmt::format("invalid JSON ({}){}", e.what(), encoding_hint(line)));
      }
      if (!duplicate.empty()) bad(duplicate, "each key once per object", "it twice");
      if (!j.is_object()) bad("", "a JSON object", j.type_name());
      if (first) check_fields(j);
      first = false;
      int64_t s = 0;
      if (auto [sv, s_key] = find(j, "seq"); sv) {
        // String ids are numbered 0, 1, ...: mixed with integer ids they
        // would join other sequences.
        const int kind = sv->is_string() ? 2 : 1;
        if (seq_kind == 0) {
          seq_kind = kind;
          seq_kind_line = lineno;
        } else if (kind != seq_kind) {
          bad(s_key,
              fmt::format("sequence ids of one kind in a file ({} since line {})",
                          seq_kind == 2 ? "strings" : "integers", seq_kind_line),
              sv->dump());
        }
      }
      if (auto [sv, s_key] = find(j, "seq"); sv && sv->is_string()) {
        // A request id such as vLLM's "cmpl-...": numbered in order of first appearance, per file.
        const auto [it, fresh] =
            string_ids.emplace(sv->get<std::string>(), int64_t(string_ids.size()));
        s = it->second;
      } else {
        s = get_int(j, "seq", 0, int64_t(1) << 40);
      }
      int64_t t = get_int(j, "token", 0, int64_t(1) << 40);
      const int64_t l = get_int(j, "layer", 0, L);
      Row row;
      row.seen = true;
      auto [lg, lg_key] = find(j, "logits");
      auto [pr, pr_key] = find(j, "probs");
      if (lg) {
        std::vector<float> logits = numbers(lg, lg_key, false);
        if (int64_t(logits.size()) != E)
          bad(lg_key, fmt::format("{} router logits (every expert of {})", E, m.name), lg->dump());
        route(rc, logits.data(), nullptr, rid.data(), rw.data(), rp.data(), scratch);
        row.probs = rp;
      } else if (pr) {
        row.probs = numbers(pr, pr_key, true);
        check_probs(row.probs, pr_key, pr);
        if (int64_t(row.probs.size()) != k && int64_t(row.probs.size()) != E) {
          bad(pr_key,
              fmt::format("{} probabilities (the chosen experts') or {} (every expert's)", k, E),
              pr->dump());
        }
      }
      const bool full = int64_t(row.probs.size()) == E && E != k;
      auto [ex, ex_key] = find(j, "experts");
      if (ex) {
        if (!ex->is_array() || int64_t(ex->size()) != k) {
          bad(ex_key, fmt::format("an array of {} expert ids (top-{} of {})", k, k, m.name),
              ex->dump());
        }
        for (const auto& x : *ex) {
          if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= E) {
            bad(ex_key, fmt::format("expert ids in [0, {})", E), x.dump());
          }
          row.ids.push_back(int32_t(x.get<int64_t>()));
        }
        for (size_t a = 0; a < row.ids.size(); ++a) {
          for (size_t b = 0; b < a; ++b) {
            if (row.ids[a] == row.ids[b]) bad(ex_key, "distinct expert ids", ex->dump());
          }
        }
      } else if (full) {
        if (grouped) {
          bad(ex_key,
              fmt::format(
                  "the chosen experts ({} routes by groups with a selection bias the log does not "
                  "hold, so they cannot be recomputed from probabilities)",
                  m.name),
              "no value");
        }
        if (lg) {
          row.ids = rid;
        } else {
          row.ids.resize(k);
          top_k_indices(row.probs.data(), E, k, nullptr, row.ids.data());
        }
      } else {
        bad(ex_key,
            fmt::format("the {} chosen expert ids, or full-width probs/logits ({} values) to take "
                        "them from",
                        k, E),
            "no value");
      }
      if (auto [w, w_key] = find(j, "weights"); w) {
        row.weights = numbers(w, w_key, true);
        if (int64_t(row.weights.size()) != k)
          bad(w_key, fmt::format("{} combine weights", k), w->dump());
        check_weights(row.weights, w_key, w);
      } else if (int64_t(row.probs.size()) == k) {
        row.weights = row.probs;  // the chosen experts' probabilities, as the log gives them
        check_weights(row.weights, pr_key, pr);
      } else if (full) {
        double sumw = 0;
        for (int32_t e : row.ids) sumw += row.probs[e];
        for (int32_t e : row.ids) {
          double x = row.probs[e];
          if (rc.norm_topk_prob && sumw > 0) x /= sumw;
          row.weights.push_back(float(x * rc.routed_scaling_factor));
        }
        check_weights(row.weights, lg ? lg_key : pr_key, lg ? lg : pr);
      } else {
        bad(w_key, fmt::format("{} combine weights, or probs/logits to take them from", k),
            "no value");
      }
      ++widths[row.probs.empty() ? 0 : full ? 2 : 1];
      if (!row.probs.empty() && !full) {
        double z = 0;
        for (float x : row.probs) z += x;
        ++topk_rows;
        topk_sum_one += std::abs(z - 1.0) < 1e-3 ? 1 : 0;
      }
      Seq& sq = seqs[{int64_t(fi), s}];
      if (per_forward) {
        // A (token, layer) of the current pass again: the next forward pass.
        const int64_t tl = t * L + l;
        if (sq.passes == 0 || sq.pass_rows.count(tl) > 0) {
          if (sq.passes > 0) sq.pass_base += sq.pass_max + 1;
          ++sq.passes;
          ++sum.forward_passes;
          sq.pass_rows.clear();
          sq.pass_max = -1;
        }
        sq.pass_rows.insert(tl);
        sq.pass_max = std::max(sq.pass_max, t);
        if (sq.passes == 1 && opt.prompt_len < 0)
          sq.prompt[sq.pass_base + t] = true;  // the first pass: the prompt
        if (sq.pass_base + t >= (int64_t(1) << 40))
          bad("", "positions below 2^40", std::to_string(sq.pass_base + t));
        t += sq.pass_base;
      }
      auto& layers = sq.tokens[t];
      layers.resize(L);
      if (layers[l].seen)
        bad("", "each (seq, token, layer) once",
            fmt::format("seq {} token {} layer {} again{}", s, t, l,
                        per_forward ? ""
                                    : " (a log whose positions restart in every forward pass "
                                      "needs --layout per-forward)"));
      layers[l] = std::move(row);
      if (auto [p, p_key] = find(j, "prompt"); p) {
        if (!p->is_boolean()) bad(p_key, "a boolean", p->dump());
        sq.prompt[t] = p->get<bool>();
      }
    }
  }
  const std::string all_inputs = join(inputs, ", ");
  // "seq 3" ("sequence 3"), or "seq 3 of b.jsonl" with several files.
  auto seq_name = [&](const std::pair<int64_t, int64_t>& fs, const char* word = "seq") {
    return inputs.size() > 1 ? fmt::format("{} {} of {}", word, fs.second, inputs[size_t(fs.first)])
                             : fmt::format("{} {}", word, fs.second);
  };
  if (seqs.empty())
    throw Error(fmt::format("{}: expected at least one routing record, found none", all_inputs));
  if (topk_rows > 0 && topk_sum_one == topk_rows && k < E) {
    sum.notes.push_back(
        fmt::format("the top-{} 'probs' sum to 1 on all {} rows: they look like combine weights "
                    "renormalised over the chosen "
                    "experts, not router probabilities (which sum to 1 over all {} experts); if "
                    "so, map them with --field "
                    "weights=KEY instead (the trace then has no probabilities, and MRS or "
                    "probability-based predictors are "
                    "refused on it rather than fed renormalised weights)",
                    k, topk_rows, E));
  }
  // What the trace can store: the narrowest width every line has.
  const int64_t width = widths[0] ? 0 : widths[1] ? k : E;
  sum.probs_width = width;

  // Missing rows of the grid: counted from the rows present (never by
  // visiting every position up to the largest, which a token of 2^31 made a
  // 24 GB allocation), then an error, dropped or filled. Positions count
  // from 0 in each sequence; a run of more than kMaxTokenGap positions with
  // no row at all is refused as a wrong field mapping, not lost rows.
  std::string first_missing;
  int64_t missing_tokens = 0, kept_estimate = 0;
  for (auto& [s, sq] : seqs) {
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
            all_inputs, seq_name(s, "sequence"), kMaxTokenGap, gap, t,
            prev_t < 0 ? " (its first row)" : fmt::format(" (after token {})", prev_t)));
      }
      if (gap > 0 && first_missing.empty())
        first_missing = fmt::format("{} token {} layer 0", seq_name(s), prev_t + 1);
      missing_tokens += gap;
      sum.missing_rows += gap * L;
      for (int64_t l = 0; l < L; ++l) {
        if (layers[l].seen) continue;
        ++sum.missing_rows;
        if (first_missing.empty())
          first_missing = fmt::format("{} token {} layer {}", seq_name(s), t, l);
      }
      prev_t = t;
    }
    kept_estimate += prev_t + 1;
  }
  if (sum.missing_rows > 0 && opt.missing == "error") {
    throw Error(fmt::format(
        "{}: expected every (seq, token, layer) row of tokens 0..n-1 and layers 0..{}, found {} "
        "missing (first: {}); --missing hole keeps them as holes that statistics and the "
        "simulator skip, --missing drop removes tokens with a missing layer, --missing fill "
        "copies the previous token's routing of that layer",
        all_inputs, L - 1, sum.missing_rows, first_missing));
  }
  if (opt.missing == "fill" || opt.missing == "hole") {
    // Every position of every sequence is materialised: check it fits first.
    const uint64_t per_token = uint64_t(L) * uint64_t(k * 8 + width * 4 + 64);
    check_allocation(uint64_t(kept_estimate) * per_token,
                     fmt::format("{}: --missing {} of {} tokens ({} of them with no row at all)",
                                 all_inputs, opt.missing, kept_estimate, missing_tokens));
  }
  // A hole row: every id kHoleId, every weight 0, no probabilities.
  Row hole_row;
  hole_row.seen = true;
  hole_row.ids.assign(size_t(k), kHoleId);
  hole_row.weights.assign(size_t(k), 0.0f);
  for (auto& [s, sq] : seqs) {
    std::map<int64_t, std::vector<Row>> kept;
    std::map<int64_t, bool> prompt;
    const std::vector<Row>* prev = nullptr;
    int64_t prev_t = -1;
    const std::string seq_id = seq_name(
        s, "sequence");  // a structured binding cannot be captured before C++20 in clang 14
    auto no_previous = [&](int64_t t, int64_t l) {
      throw Error(
          fmt::format("{}: --missing fill: expected a previous token to copy from, found {} "
                      "token {} layer {} missing at the sequence's start (use --missing drop)",
                      all_inputs, seq_id, t, l));
    };
    for (auto& [t, layers] : sq.tokens) {
      // Positions with no row at all.
      for (int64_t g = prev_t + 1; g < t; ++g) {
        if (opt.missing == "drop") {
          ++sum.dropped_tokens;
          continue;
        }
        if (opt.missing == "hole") {
          kept[int64_t(kept.size())] = std::vector<Row>(size_t(L), hole_row);
          sum.hole_rows += L;
          continue;
        }
        if (!prev) no_previous(g, 0);
        const int64_t nt = int64_t(kept.size());
        prev = &(kept[nt] = *prev);
        sum.filled_rows += L;
      }
      prev_t = t;
      bool whole = true;
      for (int64_t l = 0; l < L; ++l) whole = whole && layers[l].seen;
      if (!whole && opt.missing == "drop") {
        ++sum.dropped_tokens;
        continue;
      }
      if (!whole && opt.missing == "hole") {
        for (int64_t l = 0; l < L; ++l) {
          if (layers[l].seen) continue;
          layers[l] = hole_row;
          ++sum.hole_rows;
        }
      } else if (!whole) {
        for (int64_t l = 0; l < L; ++l) {
          if (layers[l].seen) continue;
          if (!prev) no_previous(t, l);
          layers[l] = (*prev)[l];
          ++sum.filled_rows;
        }
      }
      const int64_t nt = int64_t(kept.size());
      if (sq.prompt.count(t)) prompt[nt] = sq.prompt.at(t);
      prev = &(kept[nt] = std::move(layers));
    }
    sq.tokens = std::move(kept);
    sq.prompt = std::move(prompt);
  }

  TraceInfo info;
  info.model_name = m.name;
  info.model_hash = m.routing_hash();
  info.moe_layers = L;
  info.routing = rc;
  info.probs = width == 0   ? ProbsStorage::kNone
               : width == E ? ProbsStorage::kFull
                            : ProbsStorage::kTopP;
  info.top_p = width == k ? k : 0;
  nlohmann::ordered_json src;
  src["converter"] = "moebench trace convert (jsonl)";
  if (inputs.size() == 1) {
    src["input"] = inputs[0];
    src["input_sha256"] = sha256_hex(read_file(inputs[0]));
  } else {
    src["inputs"] = inputs;
    std::vector<std::string> hashes;
    for (const auto& f : inputs) hashes.push_back(sha256_hex(read_file(f)));
    src["inputs_sha256"] = hashes;
  }
  src["layout"] = opt.layout;
  if (!sum.notes.empty()) src["notes"] = sum.notes;
  src["probs"] =
      width == 0   ? "none: the log gives no router probabilities; components that need them (MRS, "
                     "probability-based predictors) are refused on this trace"
      : width == k ? "top-k: the chosen experts' probabilities only; a component that reads more "
                     "(MRS: p = 2k) runs with p = k and its rows say so"
                   : "full: every expert's router probability";
  src["missing"] = opt.missing;
  src["missing_rows"] = sum.missing_rows;
  src["dropped_tokens"] = sum.dropped_tokens;
  src["filled_rows"] = sum.filled_rows;
  src["hole_rows"] = sum.hole_rows;
  info.source = src.dump();
  info.hole_rows = sum.hole_rows;
  for (const auto& [s, sq] : seqs) {
    const int64_t n = int64_t(sq.tokens.size());
    if (n == 0) continue;
    int64_t prompt = 0;
    if (opt.prompt_len >= 0) {
      prompt = std::min(opt.prompt_len, n);
    } else {
      while (prompt < n && sq.prompt.count(prompt) && sq.prompt.at(prompt)) ++prompt;
    }
    info.sequences.push_back({prompt, n - prompt});
  }
  if (info.sequences.empty()) {
    throw Error(fmt::format(
        "{}: expected at least one token with every layer, found none after --missing drop",
        all_inputs));
  }
  MemoryTraceSource mem(info);
  int64_t si = 0;
  for (const auto& [s, sq] : seqs) {
    if (sq.tokens.empty()) continue;
    for (const auto& [t, layers] : sq.tokens) {
      TokenRecord r;
      if (width > 0) r.probs.assign(L * E, 0.0f);
      for (int64_t l = 0; l < L; ++l) {
        const Row& row = layers[l];
        r.ids.insert(r.ids.end(), row.ids.begin(), row.ids.end());
        r.weights.insert(r.weights.end(), row.weights.begin(), row.weights.end());
        if (row.ids[0] == kHoleId) continue;  // a hole: no probabilities
        if (width == E) {
          std::copy(row.probs.begin(), row.probs.begin() + E, r.probs.begin() + l * E);
        } else if (width == k) {
          // Top-k probabilities: from a top-k row as given, from a full-width row at the chosen
          // experts.
          for (int64_t j = 0; j < k; ++j) {
            r.probs[l * E + row.ids[j]] =
                int64_t(row.probs.size()) == E ? row.probs[row.ids[j]] : row.probs[j];
          }
        }
      }
      mem.add(si, std::move(r));
      ++sum.tokens;
    }
    ++si;
  }
  sum.sequences = si;
  TraceWriteOptions w;
  w.probs = info.probs;
  w.top_p = info.top_p;
  w.gate_inputs = false;
  write_trace(mem, opt.out, w);
  return sum;
}

}  // namespace moebench
