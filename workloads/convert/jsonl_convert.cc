#include "workloads/convert/jsonl_convert.h"

#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/trace/memory_source.h"
#include "core/util/atomic_file.h"
#include "core/util/sha256.h"

namespace moebench {

namespace {

struct Row {
  bool seen = false;
  std::vector<int32_t> ids;
  std::vector<float> probs;
};

struct Seq {
  std::map<int64_t, std::vector<Row>> tokens;  // token -> layers
  std::map<int64_t, bool> prompt;
};

}  // namespace

ConvertSummary convert_jsonl(const ConvertOptions& opt, const ConfigPaths& paths) {
  const ModelSpec m = load_model(opt.model, paths);
  const int64_t L = m.moe_layers(), E = m.routed_experts, k = m.top_k;
  std::ifstream in(opt.input);
  if (!in) throw Error(fmt::format("{}: expected a readable JSON-lines file, found no such file", opt.input));
  std::map<int64_t, Seq> seqs;
  ConvertSummary sum;
  std::string line;
  int64_t lineno = 0;
  auto bad = [&](const std::string& key, const std::string& expected, const std::string& found) {
    throw Error(fmt::format("{}:{}: {}expected {}, found {}", opt.input, lineno,
                            key.empty() ? "" : "key '" + key + "': ", expected, found));
  };
  auto get_int = [&](const nlohmann::json& j, std::initializer_list<const char*> names, int64_t lo,
                     int64_t hi) -> int64_t {
    for (const char* n : names) {
      auto it = j.find(n);
      if (it == j.end()) continue;
      if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() >= hi) {
        bad(n, fmt::format("an integer in [{}, {})", lo, hi), it->dump());
      }
      return it->get<int64_t>();
    }
    bad(*names.begin(), "an integer", "no value");
    return 0;
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ++sum.lines;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      bad("", "a JSON object", fmt::format("invalid JSON ({})", e.what()));
    }
    if (!j.is_object()) bad("", "a JSON object", j.type_name());
    const int64_t s = get_int(j, {"seq", "sequence"}, 0, int64_t(1) << 40);
    const int64_t t = get_int(j, {"token"}, 0, int64_t(1) << 40);
    const int64_t l = get_int(j, {"layer"}, 0, L);
    auto ex = j.find("experts");
    if (ex == j.end() || !ex->is_array() || int64_t(ex->size()) != k) {
      bad("experts", fmt::format("an array of {} expert ids (top-{} of {})", k, k, m.name),
          ex == j.end() ? "no value" : ex->dump());
    }
    auto pr = j.find("probs");
    if (pr == j.end()) pr = j.find("weights");
    if (pr == j.end() || !pr->is_array() || pr->size() != ex->size()) {
      bad("probs", fmt::format("an array of {} gate probabilities", k), pr == j.end() ? "no value" : pr->dump());
    }
    Row row;
    row.seen = true;
    for (size_t i = 0; i < ex->size(); ++i) {
      const auto& x = (*ex)[i];
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= E) {
        bad("experts", fmt::format("expert ids in [0, {})", E), x.dump());
      }
      const auto& p = (*pr)[i];
      if (!p.is_number() || !std::isfinite(p.get<double>()) || p.get<double>() < 0) {
        bad("probs", "finite non-negative numbers", p.dump());
      }
      row.ids.push_back(int32_t(x.get<int64_t>()));
      row.probs.push_back(float(p.get<double>()));
    }
    for (size_t a = 0; a < row.ids.size(); ++a) {
      for (size_t b = 0; b < a; ++b) {
        if (row.ids[a] == row.ids[b]) bad("experts", "distinct expert ids", ex->dump());
      }
    }
    Seq& sq = seqs[s];
    auto& layers = sq.tokens[t];
    layers.resize(L);
    if (layers[l].seen) bad("", "each (seq, token, layer) once", fmt::format("seq {} token {} layer {} again", s, t, l));
    layers[l] = std::move(row);
    if (auto p = j.find("prompt"); p != j.end()) {
      if (!p->is_boolean()) bad("prompt", "a boolean", p->dump());
      sq.prompt[t] = p->get<bool>();
    }
  }
  if (seqs.empty()) throw Error(fmt::format("{}: expected at least one routing record, found none", opt.input));

  TraceInfo info;
  info.model_name = m.name;
  info.model_hash = m.hash();
  info.moe_layers = L;
  info.routing = RoutingConfig::from_model(m);
  info.probs = ProbsStorage::kTopP;
  info.top_p = k;
  nlohmann::ordered_json src;
  src["converter"] = "moebench trace convert (jsonl)";
  src["input"] = opt.input;
  src["input_sha256"] = sha256_hex(read_file(opt.input));
  info.source = src.dump();
  for (const auto& [s, sq] : seqs) {
    const int64_t n = int64_t(sq.tokens.size());
    int64_t expect = 0;
    for (const auto& [t, layers] : sq.tokens) {
      if (t != expect) {
        throw Error(fmt::format("{}: sequence {}: expected tokens 0..{} without gaps, found token {} missing",
                                opt.input, s, n - 1, expect));
      }
      for (int64_t l = 0; l < L; ++l) {
        if (!layers[l].seen) {
          throw Error(fmt::format("{}: sequence {} token {}: expected all {} MoE layers, found layer {} missing",
                                  opt.input, s, t, L, l));
        }
      }
      ++expect;
    }
    int64_t prompt = 0;
    if (opt.prompt_len >= 0) {
      prompt = std::min(opt.prompt_len, n);
    } else {
      while (prompt < n && sq.prompt.count(prompt) && sq.prompt.at(prompt)) ++prompt;
    }
    info.sequences.push_back({prompt, n - prompt});
  }
  MemoryTraceSource mem(info);
  int64_t si = 0;
  for (const auto& [s, sq] : seqs) {
    for (const auto& [t, layers] : sq.tokens) {
      TokenRecord r;
      r.probs.assign(L * E, 0.0f);
      for (int64_t l = 0; l < L; ++l) {
        r.ids.insert(r.ids.end(), layers[l].ids.begin(), layers[l].ids.end());
        r.weights.insert(r.weights.end(), layers[l].probs.begin(), layers[l].probs.end());
        for (int64_t j = 0; j < k; ++j) r.probs[l * E + layers[l].ids[j]] = layers[l].probs[j];
      }
      mem.add(si, std::move(r));
      ++sum.tokens;
    }
    ++si;
  }
  sum.sequences = si;
  TraceWriteOptions w;
  w.probs = ProbsStorage::kTopP;
  w.top_p = k;
  w.gate_inputs = false;
  write_trace(mem, opt.out, w);
  return sum;
}

}  // namespace moebench
