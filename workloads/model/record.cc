#include "workloads/model/record.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

}  // namespace moebench
