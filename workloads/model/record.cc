#include "workloads/model/record.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/trace/safetensors.h"
#include "core/util/error.h"

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
  info.model_hash = spec.hash();
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
  info.source = src.dump();
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

std::vector<AccuracyRow> accuracy_sweep(MoeModel& model, const std::string& text,
                                        const RecordOptions& opt, const std::string& text_name) {
  check_text(text, RecordOptions{opt.sequences, opt.seq_len, 0, opt.offset}, text_name);
  const int64_t V = model.config().vocab;
  const int K = int(model.config().top_k);
  // The unmodified model's next-byte distributions (log-softmax), kept to
  // compare every variant against.
  std::vector<std::vector<float>> base_logp;
  std::vector<int> base_argmax;
  auto run = [&](const ForwardOptions& fo, const std::string& mode, int n, bool is_base) {
    AccuracyRow row;
    row.mode = mode;
    row.n = n;
    size_t i = 0;
    std::vector<float> logp(static_cast<size_t>(V));
    for (int64_t s = 0; s < opt.sequences; ++s) {
      model.reset();
      const int64_t first = opt.offset + s * opt.seq_len;
      for (int64_t t = 0; t + 1 < opt.seq_len; ++t, ++i) {
        const auto& z = model.step(token_at(text, first + t), fo);
        const float mx = *std::max_element(z.begin(), z.end());
        double sum = 0;
        for (float v : z) sum += std::exp(double(v) - mx);
        const double lse = mx + std::log(sum);
        int arg = 0;
        for (int64_t v = 0; v < V; ++v) {
          logp[size_t(v)] = float(double(z[size_t(v)]) - lse);
          if (z[size_t(v)] > z[size_t(arg)]) arg = int(v);
        }
        row.nll -= logp[size_t(token_at(text, first + t + 1))];
        if (is_base) {
          base_logp.push_back(logp);
          base_argmax.push_back(arg);
          row.agreement += 1;
        } else {
          row.agreement += arg == base_argmax[i];
          double kl = 0;
          for (int64_t v = 0; v < V; ++v) {
            const double pb = std::exp(double(base_logp[i][size_t(v)]));
            kl += pb * (double(base_logp[i][size_t(v)]) - logp[size_t(v)]);
          }
          row.kl += kl;
        }
        ++row.tokens;
      }
    }
    row.nll /= double(row.tokens);
    row.perplexity = std::exp(row.nll);
    row.agreement /= double(row.tokens);
    row.kl /= double(row.tokens);
    return row;
  };
  std::vector<AccuracyRow> rows;
  rows.push_back(run({}, "baseline", 0, true));
  for (int d = 1; d < K; ++d) rows.push_back(run({d, 0}, "defer", d, false));
  for (int s = 1; s < K; ++s) rows.push_back(run({0, s}, "skip", s, false));
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
  std::memcpy(v.data(), f.data(*t), v.size() * sizeof(T));
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
