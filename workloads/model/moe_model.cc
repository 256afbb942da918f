// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/model/moe_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/trace/safetensors.h"
#include "core/util/error.h"
#include "core/util/paths.h"

namespace moebench {

struct MoeModel::Layer {
  std::vector<float> attn_norm, moe_norm, q, k, v, o, router;  // fp32
  std::vector<ExpertWeights> experts;
  ExpertWeights shared;               // shape.inter == 0 when the model has none
  std::vector<float> kcache, vcache;  // [pos][hidden]
};

namespace {

std::string where(const std::string& file, const std::string& tensor) {
  return fmt::format("{}: tensor '{}'", file, tensor);
}

const st::TensorInfo& need(const st::File& f, const std::string& name,
                           const std::vector<int64_t>& shape) {
  const st::TensorInfo* t = f.find(name);
  if (!t) {
    throw Error(fmt::format("{}: expected a tensor '{}' of shape [{}], found none", f.path(), name,
                            fmt::join(shape, ", ")));
  }
  if (t->shape != shape) {
    throw Error(fmt::format("{}: expected shape [{}], found [{}]", where(f.path(), name),
                            fmt::join(shape, ", "), fmt::join(t->shape, ", ")));
  }
  if (t->dtype != st::DType::kBF16 && t->dtype != st::DType::kF32) {
    throw Error(fmt::format("{}: expected dtype BF16 or F32, found {}", where(f.path(), name),
                            st::to_string(t->dtype)));
  }
  return *t;
}

std::vector<uint16_t> read_bf16(const st::File& f, const std::string& name,
                                const std::vector<int64_t>& shape) {
  const st::TensorInfo& t = need(f, name, shape);
  std::vector<uint16_t> out(size_t(t.numel()));
  std::vector<uint8_t> bytes(size_t(t.end - t.begin));
  f.read(f.data(t), bytes.data(), bytes.size());  // through the guard: the file may shrink
  const uint8_t* p = bytes.data();
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.dtype == st::DType::kBF16) {
      std::memcpy(&out[i], p + 2 * i, 2);
    } else {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      out[i] = to_bf16(v);
    }
  }
  return out;
}

std::vector<float> read_f32(const st::File& f, const std::string& name,
                            const std::vector<int64_t>& shape) {
  const std::vector<uint16_t> b = read_bf16(f, name, shape);
  std::vector<float> out(b.size());
  for (size_t i = 0; i < b.size(); ++i) out[i] = from_bf16(b[i]);
  return out;
}

int64_t get_int(const nlohmann::json& j, const char* key, const std::string& file) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 0) {
    throw Error(fmt::format("{}: metadata 'config': expected a non-negative integer '{}', found {}",
                            file, key, j.contains(key) ? j[key].dump() : "none"));
  }
  return j[key].get<int64_t>();
}

void rmsnorm(const float* x, const float* w, int64_t n, double eps, float* out) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const float r = float(1.0 / std::sqrt(ss / double(n) + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * r * w[i];
}

// out[r] = sum_c w[r * cols + c] * x[c].
void matvec(const float* w, const float* x, int64_t rows, int64_t cols, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* wr = w + r * cols;
    float s = 0;
    for (int64_t c = 0; c < cols; ++c) s += wr[c] * x[c];
    out[r] = s;
  }
}

// Llama-style rotary embedding of one head (the two halves rotated).
void rope(float* v, int64_t hd, int64_t pos, double theta) {
  const int64_t half = hd / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double inv = 1.0 / std::pow(theta, double(2 * i) / double(hd));
    const float ang = float(double(pos) * float(inv));
    const float c = std::cos(ang), s = std::sin(ang);
    const float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
  }
}

}  // namespace

MoeModel::~MoeModel() = default;

std::unique_ptr<MoeModel> MoeModel::load(const std::filesystem::path& path,
                                         const std::string& kernel) {
  std::filesystem::path file = path;
  if (std::filesystem::is_directory(path)) file = path / "model.safetensors";
  if (!std::filesystem::is_regular_file(file)) {
    throw Error(fmt::format(
        "model weights: expected a safetensors file or a folder holding model.safetensors, found "
        "{} at '{}' (train one with workloads/tiny_moe/train.py or `make tiny-models`)",
        file_kind(file), file.string()));
  }
  const auto f = st::File::open(file);
  auto m = std::unique_ptr<MoeModel>(new MoeModel());
  m->path_ = file.string();
  const auto meta = f->metadata().find("config");
  if (meta == f->metadata().end()) {
    throw Error(
        fmt::format("{}: expected metadata 'config' (the model's JSON config, as "
                    "train.py writes it), found none",
                    m->path_));
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(meta->second);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: metadata 'config': expected JSON, found a parse error: {}",
                            m->path_, e.what()));
  }
  TinyModelConfig& c = m->cfg_;
  c.family = j.value("family", std::string());
  if (c.family != "mixtral" && c.family != "deepseek") {
    throw Error(
        fmt::format("{}: metadata 'config': expected family 'mixtral' or 'deepseek', found '{}'",
                    m->path_, c.family));
  }
  c.vocab = get_int(j, "vocab_size", m->path_);
  c.hidden = get_int(j, "hidden_size", m->path_);
  c.layers = get_int(j, "num_layers", m->path_);
  c.heads = get_int(j, "num_heads", m->path_);
  c.head_dim = get_int(j, "head_dim", m->path_);
  c.experts = get_int(j, "routed_experts", m->path_);
  c.top_k = get_int(j, "top_k", m->path_);
  c.inter = get_int(j, "expert_intermediate", m->path_);
  c.shared = get_int(j, "shared_experts", m->path_);
  c.shared_inter = get_int(j, "shared_intermediate", m->path_);
  c.norm_topk_prob = j.value("norm_topk_prob", false);
  c.rope_theta = j.value("rope_theta", 10000.0);
  c.rms_eps = j.value("rms_norm_eps", 1e-5);
  if (c.vocab < 1 || c.hidden < 2 || c.layers < 1 || c.heads < 1 ||
      c.heads * c.head_dim != c.hidden || c.head_dim % 2 != 0 || c.experts < 1 || c.top_k < 1 ||
      c.top_k > c.experts || c.inter < 1) {
    throw Error(fmt::format(
        "{}: metadata 'config': expected vocab, hidden, layers, heads, experts, top_k <= experts "
        "and expert_intermediate >= 1 with heads x head_dim = hidden (head_dim even), found {}",
        m->path_, meta->second));
  }
  const int64_t H = c.hidden, V = c.vocab;
  m->embed_ = read_f32(*f, "embed", {V, H});
  m->norm_ = read_f32(*f, "norm", {H});
  m->head_ = read_f32(*f, "lm_head", {V, H});
  // "auto": the packed AVX-512 kernel where this CPU has it, else the reference.
  const std::vector<std::string> avail = expert_kernels_available();
  const bool packed = std::find(avail.begin(), avail.end(), "avx512-bf16-gemm") != avail.end();
  m->kernel_name_ = kernel != "auto" ? kernel : packed ? "avx512-bf16-gemm" : "reference";
  m->kernel_ = make_expert_kernel(m->kernel_name_);
  auto expert = [&](const std::string& p, int64_t inter) {
    ExpertWeights e;
    e.shape = {H, inter};
    e.dtype = WeightDtype::kBf16;
    e.gate = read_bf16(*f, p + "gate", {inter, H});
    e.up = read_bf16(*f, p + "up", {inter, H});
    e.down = read_bf16(*f, p + "down", {H, inter});
    if (m->kernel_->needs_packed()) e.pack();
    return e;
  };
  m->layers_.resize(size_t(c.layers));
  for (int64_t l = 0; l < c.layers; ++l) {
    Layer& L = m->layers_[size_t(l)];
    const std::string p = fmt::format("layers.{}.", l);
    L.attn_norm = read_f32(*f, p + "attn_norm", {H});
    L.moe_norm = read_f32(*f, p + "moe_norm", {H});
    L.q = read_f32(*f, p + "attn.q", {H, H});
    L.k = read_f32(*f, p + "attn.k", {H, H});
    L.v = read_f32(*f, p + "attn.v", {H, H});
    L.o = read_f32(*f, p + "attn.o", {H, H});
    L.router = read_f32(*f, p + "router", {c.experts, H});
    for (int64_t e = 0; e < c.experts; ++e)
      L.experts.push_back(expert(fmt::format("{}experts.{}.", p, e), c.inter));
    if (c.shared > 0) L.shared = expert(p + "shared.", c.shared * c.shared_inter);
  }
  m->reset();
  return m;
}

ModelSpec MoeModel::spec() const {
  ModelSpec s;
  s.name = "tiny-" + cfg_.family;
  s.family = cfg_.family == "mixtral" ? "mixtral" : "deepseek-v2";
  s.description =
      fmt::format("small MoE language model trained by workloads/tiny_moe/train.py ({})", path_);
  s.source = path_;
  s.num_layers = cfg_.layers;
  s.hidden_size = cfg_.hidden;
  s.vocab_size = cfg_.vocab;
  s.routed_experts = cfg_.experts;
  s.top_k = cfg_.top_k;
  s.routing = RoutingFunction::kSoftmaxTopK;
  s.norm_topk_prob = cfg_.norm_topk_prob;
  s.expert_intermediate = cfg_.inter;
  s.shared_experts = cfg_.shared;
  s.shared_intermediate = cfg_.shared_inter;
  s.attention = AttentionKind::kGqa;
  s.num_heads = cfg_.heads;
  s.num_kv_heads = cfg_.heads;
  s.head_dim = cfg_.head_dim;
  s.expert_dtype = WeightDtype::kBf16;
  s.dense_dtype = WeightDtype::kBf16;
  return s;
}

GateWeights MoeModel::gate_weights() const {
  GateWeights g;
  g.layers = cfg_.layers;
  g.experts = cfg_.experts;
  g.h = cfg_.hidden;
  for (const Layer& L : layers_) g.weight.insert(g.weight.end(), L.router.begin(), L.router.end());
  g.bias.assign(size_t(cfg_.layers * cfg_.experts), 0.0f);
  g.selection_bias = g.bias;
  return g;
}

void MoeModel::reset() {
  pos_ = 0;
  for (Layer& L : layers_) {
    L.kcache.clear();
    L.vcache.clear();
  }
  pending_.assign(size_t(cfg_.hidden), 0.0f);
}

MoeModel::State MoeModel::save() const {
  State s;
  s.pos = pos_;
  for (const Layer& L : layers_) {
    s.kcache.push_back(L.kcache);
    s.vcache.push_back(L.vcache);
  }
  return s;
}

void MoeModel::restore(const State& s) {
  if (s.kcache.size() != layers_.size() || s.vcache.size() != layers_.size()) {
    throw Error(fmt::format("model {}: expected a state of {} layers, found {}", path_,
                            layers_.size(), s.kcache.size()));
  }
  pos_ = s.pos;
  for (size_t l = 0; l < layers_.size(); ++l) {
    layers_[l].kcache = s.kcache[l];
    layers_[l].vcache = s.vcache[l];
  }
  pending_.assign(size_t(cfg_.hidden), 0.0f);
}

const std::vector<float>& MoeModel::step(int token, const ForwardOptions& opt, TokenRecord* rec) {
  const TinyModelConfig& c = cfg_;
  const int64_t H = c.hidden, E = c.experts, K = c.top_k, hd = c.head_dim;
  if (token < 0 || token >= c.vocab) {
    throw Error(
        fmt::format("model {}: expected a token id in [0, {}), found {}", path_, c.vocab, token));
  }
  if (!opt.run_order.empty()) {
    std::vector<int> sorted = opt.run_order;
    std::sort(sorted.begin(), sorted.end());
    bool perm = int64_t(sorted.size()) == K - opt.skip;
    for (size_t i = 0; perm && i < sorted.size(); ++i) perm = sorted[i] == int(i);
    if (!perm) {
      throw Error(fmt::format(
          "model {}: expected run_order to be a permutation of the ranks 0..{}, found [{}]", path_,
          K - opt.skip - 1, fmt::join(opt.run_order, ", ")));
    }
  }
  if (opt.defer < 0 || opt.skip < 0 || opt.defer + opt.skip >= K) {
    throw Error(fmt::format(
        "model {}: expected defer + skip < top_k = {} (at least one immediate expert), found defer "
        "{}, skip {}",
        path_, K, opt.defer, opt.skip));
  }
  x_.assign(embed_.begin() + token * H, embed_.begin() + (token + 1) * H);
  h_.resize(size_t(H));
  q_.resize(size_t(H));
  k_.resize(size_t(H));
  v_.resize(size_t(H));
  y_.resize(size_t(H));
  moe_.resize(size_t(H));
  next_pending_.assign(size_t(H), 0.0f);
  pending_.assign(size_t(H),
                  0.0f);  // deferral never crosses tokens (the last layer defers nothing)
  if (rec) {
    rec->ids.assign(size_t(c.layers * K), 0);
    rec->weights.assign(size_t(c.layers * K), 0.0f);
    rec->probs.assign(size_t(c.layers * E), 0.0f);
    rec->gate_input.assign(size_t(c.layers * H), 0.0f);
  }
  std::vector<float>& probs = probs_;
  std::vector<int>& order = order_;
  probs.resize(size_t(E));
  order.resize(size_t(E));
  for (int64_t l = 0; l < c.layers; ++l) {
    Layer& L = layers_[size_t(l)];
    // Attention.
    rmsnorm(x_.data(), L.attn_norm.data(), H, c.rms_eps, h_.data());
    matvec(L.q.data(), h_.data(), H, H, q_.data());
    matvec(L.k.data(), h_.data(), H, H, k_.data());
    matvec(L.v.data(), h_.data(), H, H, v_.data());
    for (int64_t hh = 0; hh < c.heads; ++hh) {
      rope(q_.data() + hh * hd, hd, pos_, c.rope_theta);
      rope(k_.data() + hh * hd, hd, pos_, c.rope_theta);
    }
    L.kcache.insert(L.kcache.end(), k_.begin(), k_.end());
    L.vcache.insert(L.vcache.end(), v_.begin(), v_.end());
    const int64_t T = pos_ + 1;
    att_.resize(size_t(T));
    const float scale = 1.0f / std::sqrt(float(hd));
    for (int64_t hh = 0; hh < c.heads; ++hh) {
      const float* qh = q_.data() + hh * hd;
      float mx = -INFINITY;
      for (int64_t t = 0; t < T; ++t) {
        const float* kt = L.kcache.data() + t * H + hh * hd;
        float s = 0;
        for (int64_t i = 0; i < hd; ++i) s += qh[i] * kt[i];
        att_[size_t(t)] = s * scale;
        mx = std::max(mx, att_[size_t(t)]);
      }
      double sum = 0;
      for (int64_t t = 0; t < T; ++t) sum += att_[size_t(t)] = std::exp(att_[size_t(t)] - mx);
      float* yh = y_.data() + hh * hd;
      std::fill(yh, yh + hd, 0.0f);
      for (int64_t t = 0; t < T; ++t) {
        const float p = float(att_[size_t(t)] / sum);
        const float* vt = L.vcache.data() + t * H + hh * hd;
        for (int64_t i = 0; i < hd; ++i) yh[i] += p * vt[i];
      }
    }
    matvec(L.o.data(), y_.data(), H, H, h_.data());
    for (int64_t i = 0; i < H; ++i) x_[size_t(i)] += h_[size_t(i)];
    // MoE: router softmax over all experts, top-k in rank order.
    rmsnorm(x_.data(), L.moe_norm.data(), H, c.rms_eps, h_.data());
    matvec(L.router.data(), h_.data(), E, H, probs.data());
    const float mx = *std::max_element(probs.begin(), probs.end());
    double sum = 0;
    for (float& p : probs) sum += p = std::exp(p - mx);
    for (float& p : probs) p = float(p / sum);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return probs[size_t(a)] > probs[size_t(b)]; });
    float wsum = 0;
    for (int64_t r = 0; r < K; ++r) wsum += probs[size_t(order[size_t(r)])];
    // The combine weight of the expert of rank r.
    auto weight = [&](int64_t r) {
      const float p = probs[size_t(order[size_t(r)])];
      return c.norm_topk_prob ? p / wsum : p;
    };
    std::fill(moe_.begin(), moe_.end(), 0.0f);
    const bool last = l == c.layers - 1;
    // Each expert's weighted output in its own buffer, run in opt.run_order
    // (where and when a strategy runs it), summed in rank order: the result
    // does not depend on the execution order.
    const int64_t active = K - opt.skip;
    expert_out_.assign(size_t(active * H), 0.0f);
    for (int64_t i = 0; i < active; ++i) {
      const int64_t r = opt.run_order.empty() ? i : opt.run_order[size_t(i)];
      const float w = weight(r);
      kernel_->run(L.experts[size_t(order[size_t(r)])], h_.data(), 1, &w,
                   expert_out_.data() + r * H);
    }
    for (int64_t r = 0; r < active; ++r) {
      const bool deferred = !last && r >= active - opt.defer;
      float* dst = deferred ? next_pending_.data() : moe_.data();
      for (int64_t i = 0; i < H; ++i) dst[i] += expert_out_[size_t(r * H + i)];
    }
    if (c.shared > 0) {
      const float one = 1.0f;
      kernel_->run(L.shared, h_.data(), 1, &one, moe_.data());
    }
    if (rec) {
      for (int64_t r = 0; r < K; ++r) {
        rec->ids[size_t(l * K + r)] = order[size_t(r)];
        rec->weights[size_t(l * K + r)] = weight(r);
      }
      std::copy(probs.begin(), probs.end(), rec->probs.begin() + l * E);
      std::copy(h_.begin(), h_.end(), rec->gate_input.begin() + l * H);
    }
    // O_l = I_l + S_l + R_{l-1}^def + R_l^imm (KTransformers, section 4.1).
    for (int64_t i = 0; i < H; ++i) x_[size_t(i)] += moe_[size_t(i)] + pending_[size_t(i)];
    std::swap(pending_, next_pending_);
    std::fill(next_pending_.begin(), next_pending_.end(), 0.0f);
  }
  ++pos_;
  rmsnorm(x_.data(), norm_.data(), H, c.rms_eps, h_.data());
  logits_.resize(size_t(c.vocab));
  matvec(head_.data(), h_.data(), c.vocab, H, logits_.data());
  return logits_;
}

}  // namespace moebench
