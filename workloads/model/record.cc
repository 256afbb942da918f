// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/model/record.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/trace/safetensors.h"
#include "core/util/error.h"
#include "core/util/json_text.h"

namespace moebench {

namespace {

void check_text(const std::string& text, const RecordOptions& opt, const std::string& name) {
  if (opt.sequences < 1 || opt.seq_len < 2 || opt.prompt_len < 0 || opt.prompt_len > opt.seq_len ||
      opt.offset < 0) {
    throw Error(fmt::format(
        "{}: expected sequences >= 1, seq_len >= 2, 0 <= prompt_len <= seq_len and offset >= 0, "
        "found sequences {}, seq_len {}, prompt_len {}, offset {}",
        name, opt.sequences, opt.seq_len, opt.prompt_len, opt.offset));
  }
  const int64_t need = opt.offset + opt.sequences * opt.seq_len;
  if (int64_t(text.size()) < need) {
    throw Error(
        fmt::format("{}: expected at least {} bytes ({} sequences of {} from byte {}), found {}",
                    name, need, opt.sequences, opt.seq_len, opt.offset, text.size()));
  }
}

int token_at(const std::string& text, int64_t i) {
  return int(static_cast<unsigned char>(text[size_t(i)]));
}

}  // namespace

std::unique_ptr<MemoryTraceSource> record_trace(MoeModel& model, const std::string& text,
                                                const RecordOptions& opt,
                                                const std::string& text_name) {
  check_text(text, opt, text_name);
  const ModelSpec spec = model.spec();
  TraceInfo info;
  info.model_name = spec.name;
  info.model_hash = spec.routing_hash();
  info.moe_layers = spec.moe_layers();
  info.h_trace = spec.hidden_size;
  info.routing = RoutingConfig::from_model(spec);
  info.probs = ProbsStorage::kFull;
  for (int64_t s = 0; s < opt.sequences; ++s)
    info.sequences.push_back({opt.prompt_len, opt.seq_len - opt.prompt_len});
  nlohmann::ordered_json src = {{"recorder", "moebench trace record"},
                                {"weights", model.path()},
                                {"kernel", model.kernel_name()},
                                {"text", text_name},
                                {"offset", opt.offset},
                                {"seq_len", opt.seq_len}};
  info.source = json_text(src);
  auto out = std::make_unique<MemoryTraceSource>(info);
  out->set_gate_weights(model.gate_weights());
  for (int64_t s = 0; s < opt.sequences; ++s) {
    model.reset();
    for (int64_t t = 0; t < opt.seq_len; ++t) {
      TokenRecord rec;
      model.step(token_at(text, opt.offset + s * opt.seq_len + t), {}, &rec);
      out->add(s, std::move(rec));
    }
  }
  return out;
}

namespace {

// The variants every sweep runs: the unmodified model, deferring 1..k-1,
// skipping 1..k-1.
struct Variant {
  std::string mode;
  int n = 0;
  ForwardOptions fo;
};

std::vector<Variant> variants(int K) {
  std::vector<Variant> v{{"baseline", 0, {}}};
  for (int d = 1; d < K; ++d) v.push_back({"defer", d, {d, 0, {}}});
  for (int s = 1; s < K; ++s) v.push_back({"skip", s, {0, s, {}}});
  return v;
}

// log-softmax of z into logp; returns the argmax.
int log_softmax(const std::vector<float>& z, std::vector<float>& logp) {
  const float mx = *std::max_element(z.begin(), z.end());
  double sum = 0;
  for (float v : z) sum += std::exp(double(v) - mx);
  const double lse = mx + std::log(sum);
  int arg = 0;
  for (size_t v = 0; v < z.size(); ++v) {
    logp[v] = float(double(z[v]) - lse);
    if (z[v] > z[size_t(arg)]) arg = int(v);
  }
  return arg;
}

// Runs text[begin, end) as a new sequence's prompt, unmodified; returns the
// state after it (to restore for each variant) and its last token's logits
// (empty when the prompt is).
struct Prefilled {
  MoeModel::State state;
  std::vector<float> logits;
};

Prefilled prefill(MoeModel& model, const std::string& text, int64_t begin, int64_t end) {
  model.reset();
  const std::vector<float>* z = nullptr;
  for (int64_t p = begin; p < end; ++p) z = &model.step(token_at(text, p));
  Prefilled out;
  if (z) out.logits = *z;
  out.state = model.save();
  return out;
}

}  // namespace

const char* to_string(DeferScope s) {
  return s == DeferScope::kDecode ? "decode" : "all";
}

std::vector<AccuracyRow> accuracy_sweep(MoeModel& model, const std::string& text,
                                        const RecordOptions& opt, const std::string& text_name,
                                        DeferScope scope) {
  RecordOptions checked = opt;
  if (scope == DeferScope::kAll) checked.prompt_len = 0;  // not used
  check_text(text, checked, text_name);
  if (scope == DeferScope::kDecode && (opt.prompt_len < 1 || opt.prompt_len >= opt.seq_len)) {
    throw Error(fmt::format(
        "{}: expected 1 <= prompt_len < seq_len for a decode-only sweep, found prompt_len {} and "
        "seq_len {}",
        text_name, opt.prompt_len, opt.seq_len));
  }
  const int64_t V = model.config().vocab;
  const auto vars = variants(int(model.config().top_k));
  std::vector<AccuracyRow> rows(vars.size());
  for (size_t j = 0; j < vars.size(); ++j) {
    rows[j].mode = vars[j].mode;
    rows[j].n = vars[j].n;
  }
  // In decode scope the first prompt_len tokens are the prompt: run
  // unmodified (the prefill), once per sequence, their state restored for
  // every variant. Each scored prediction is of the next byte from a token
  // the variant processed (decode) -- except, in decode scope, the first
  // one, which the prompt's last token makes, as in a served request.
  const int64_t prompt = scope == DeferScope::kDecode ? opt.prompt_len : 0;
  std::vector<float> logp(static_cast<size_t>(V));
  std::vector<std::vector<float>> base_logp(size_t(opt.seq_len));
  std::vector<int> base_argmax(size_t(opt.seq_len));
  for (int64_t s = 0; s < opt.sequences; ++s) {
    const int64_t first = opt.offset + s * opt.seq_len;
    const Prefilled pre = prefill(model, text, first, first + prompt);
    for (size_t j = 0; j < vars.size(); ++j) {
      AccuracyRow& row = rows[j];
      const bool is_base = j == 0;
      model.restore(pre.state);
      // Predictions of bytes prompt .. seq_len-1 (all scope: 1 .. seq_len-1).
      for (int64_t t = std::max<int64_t>(prompt, 1); t < opt.seq_len; ++t) {
        const std::vector<float>& logits =
            t == prompt ? pre.logits : model.step(token_at(text, first + t - 1), vars[j].fo);
        const int arg = log_softmax(logits, logp);
        row.nll -= logp[size_t(token_at(text, first + t))];
        if (is_base) {
          base_logp[size_t(t)] = logp;
          base_argmax[size_t(t)] = arg;
          row.agreement += 1;
        } else {
          row.agreement += arg == base_argmax[size_t(t)];
          double kl = 0;
          for (int64_t v = 0; v < V; ++v) {
            const double lb = double(base_logp[size_t(t)][size_t(v)]);
            kl += std::exp(lb) * (lb - logp[size_t(v)]);
          }
          row.kl += kl;
        }
        ++row.tokens;
      }
    }
  }
  for (AccuracyRow& row : rows) {
    row.nll /= double(row.tokens);
    row.perplexity = std::exp(row.nll);
    row.agreement /= double(row.tokens);
    row.kl /= double(row.tokens);
  }
  return rows;
}

namespace {

bool is_letter(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

std::vector<ClozeItem> cloze_items(const std::string& text, const ClozeOptions& opt,
                                   const std::string& text_name) {
  if (opt.items < 1 || opt.context < 1 || opt.offset < 0 || opt.max_word < 1) {
    throw Error(fmt::format(
        "{}: expected items >= 1, context >= 1, max_word >= 1 and offset >= 0, found items {}, "
        "context {}, max_word {}, offset {}",
        text_name, opt.items, opt.context, opt.max_word, opt.offset));
  }
  // Every word: a run of letters after a space or a line break. A verse's
  // last word: the last run of letters before a line that starts a verse
  // with two spaces and its number ("\n  17 And he ..."), trailing
  // punctuation skipped.
  std::vector<ClozeItem> items;
  auto add = [&](size_t b, size_t e) {
    if (e - b < 1 || int64_t(e - b) > opt.max_word || int64_t(b) - opt.context < opt.offset) return;
    items.push_back({int64_t(b) - opt.context, int64_t(b), text.substr(b, e - b)});
  };
  auto letter_at = [&](size_t i) { return is_letter(static_cast<unsigned char>(text[i])); };
  for (size_t p = size_t(opt.offset); p + 4 < text.size() && int64_t(items.size()) < opt.items;
       ++p) {
    if (!opt.verse_final) {
      if ((text[p] != ' ' && text[p] != '\n') || !letter_at(p + 1)) continue;
      size_t e = p + 1;
      while (e < text.size() && letter_at(e)) ++e;
      add(p + 1, e);
      continue;
    }
    if (text[p] != '\n' || text[p + 1] != ' ' || text[p + 2] != ' ' ||
        !(text[p + 3] >= '0' && text[p + 3] <= '9'))
      continue;
    size_t e = p;  // one past the word's last letter
    while (e > 0 && std::string_view(".,;:?!')").find(text[e - 1]) != std::string_view::npos) --e;
    size_t b = e;
    while (b > 0 && letter_at(b - 1)) --b;
    if (e - b >= 2) add(b, e);
  }
  if (int64_t(items.size()) < opt.items) {
    throw Error(fmt::format(
        "{}: expected {} {} after byte {}, found {}", text_name, opt.items,
        opt.verse_final ? "verse-final words (a line '  <number> ' after each)" : "words",
        opt.offset, items.size()));
  }
  return items;
}

std::vector<ClozeRow> cloze_sweep(MoeModel& model, const std::string& text, const ClozeOptions& opt,
                                  const std::string& text_name) {
  const auto items = cloze_items(text, opt, text_name);
  const auto vars = variants(int(model.config().top_k));
  std::vector<ClozeRow> rows(vars.size());
  std::vector<float> logp(static_cast<size_t>(model.config().vocab));
  for (size_t j = 0; j < vars.size(); ++j) {
    rows[j].mode = vars[j].mode;
    rows[j].n = vars[j].n;
  }
  for (const ClozeItem& it : items) {
    const Prefilled pre = prefill(model, text, it.context_begin, it.word_begin);
    std::string base_word;
    for (size_t j = 0; j < vars.size(); ++j) {
      model.restore(pre.state);
      // Greedy decoding until a byte that is not a letter (or max_word + 1
      // letters, which can never match).
      std::string word;
      int next = log_softmax(pre.logits, logp);
      while (is_letter(next) && int64_t(word.size()) <= opt.max_word) {
        word.push_back(char(next));
        next = log_softmax(model.step(next, vars[j].fo), logp);
      }
      if (j == 0) base_word = word;
      ClozeRow& r = rows[j];
      ++r.items;
      r.accuracy += word == it.word;
      r.agreement += word == base_word;
    }
  }
  for (ClozeRow& r : rows) {
    r.accuracy /= double(r.items);
    r.agreement /= double(r.items);
  }
  return rows;
}

namespace {

template <class T>
std::vector<T> ref_tensor(const st::File& f, const std::string& name, st::DType dt,
                          const std::vector<int64_t>& shape) {
  const st::TensorInfo* t = f.find(name);
  if (!t || t->dtype != dt || t->shape != shape) {
    throw Error(
        fmt::format("{}: expected tensor '{}' {} [{}], found {}", f.path(), name, st::to_string(dt),
                    fmt::join(shape, ", "),
                    t ? fmt::format("{} [{}]", st::to_string(t->dtype), fmt::join(t->shape, ", "))
                      : std::string("none")));
  }
  std::vector<T> v(size_t(t->numel()));
  f.read(f.data(*t), v.data(), v.size() * sizeof(T));
  return v;
}

}  // namespace

ReferenceCheck check_reference(MoeModel& model, const std::filesystem::path& reference) {
  const auto f = st::File::open(reference);
  const st::TensorInfo* tt = f->find("tokens");
  if (!tt || tt->shape.size() != 1) {
    throw Error(fmt::format("{}: expected tensor 'tokens' I32 [T], found {}", f->path(),
                            tt ? "another shape" : "none"));
  }
  const TinyModelConfig& c = model.config();
  const int64_t T = tt->shape[0], V = c.vocab, L = c.layers, K = c.top_k;
  const auto tokens = ref_tensor<int32_t>(*f, "tokens", st::DType::kI32, {T});
  const auto logits = ref_tensor<float>(*f, "logits", st::DType::kF32, {T, V});
  const auto ids = ref_tensor<int32_t>(*f, "topk_ids", st::DType::kI32, {L, T, K});
  const auto weights = ref_tensor<float>(*f, "topk_weights", st::DType::kF32, {L, T, K});
  ReferenceCheck r;
  r.tokens = T;
  double err2 = 0, norm2 = 0;
  TokenRecord rec;
  model.reset();
  for (int64_t t = 0; t < T; ++t) {
    const auto& got = model.step(tokens[size_t(t)], {}, &rec);
    for (int64_t v = 0; v < V; ++v) {
      const double want = logits[size_t(t * V + v)];
      err2 += (double(got[size_t(v)]) - want) * (double(got[size_t(v)]) - want);
      norm2 += want * want;
    }
    for (int64_t l = 0; l < L; ++l) {
      for (int64_t k = 0; k < K; ++k) {
        const size_t i = size_t((l * T + t) * K + k);
        r.routing_mismatches += rec.ids[size_t(l * K + k)] != ids[i];
        r.max_weight_error = std::max(
            r.max_weight_error, std::abs(double(rec.weights[size_t(l * K + k)]) - weights[i]));
        ++r.routing_slots;
      }
    }
  }
  model.reset();
  r.logits_error = norm2 > 0 ? std::sqrt(err2 / norm2) : std::sqrt(err2);
  return r;
}

}  // namespace moebench
