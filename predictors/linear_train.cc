// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Training and storage of SMoE's token-wise linear predictor.
//
// Per MoE layer l: input x = gate input of token t at layer l, label y =
// multi-hot of layer l's top-k at token t+1 of the same sequence. Loss:
// binary cross entropy with logits, mean over the batch and the experts.
// Adam (beta 0.9 / 0.999, eps 1e-8). The (t, t+1) pairs are shuffled with a
// fixed seed and split 80/10/10 into training, validation and test; after
// every epoch the validation top-k recall is measured and the best weights
// kept; training stops `patience` epochs after the last improvement.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "core/trace/safetensors.h"
#include "core/util/cancel.h"
#include "core/util/detmath.h"
#include "core/util/error.h"
#include "core/util/lanes16.h"
#include "predictors/components.h"

namespace moebench {

nlohmann::ordered_json LinearTrainOptions::to_json() const {
  return {{"lr", lr},
          {"batch", batch},
          {"max_samples", max_samples},
          {"max_epochs", max_epochs},
          {"patience", patience},
          {"seed", seed}};
}

namespace {

struct Samples {
  int64_t n = 0, L = 0, H = 0, k = 0;
  std::vector<float> x;    // [n][L][H] gate inputs of token t
  std::vector<int32_t> y;  // [n][L][k] top-k ids of token t+1
};

// Collects (t, t+1) pairs in sequence order: decode pairs first (what the
// predictor is used for), then prompt pairs if there are too few.
Samples collect(const TraceSource& src, int64_t max_samples) {
  const TraceInfo& in = src.info();
  Samples s;
  s.L = in.moe_layers;
  s.H = in.h_trace;
  s.k = in.top_k();
  if (s.H <= 0) {
    throw Error(
        "predictor linear: expected a calibration trace with gate inputs, found one without "
        "(h_trace = 0)");
  }
  for (int pass = 0; pass < 2 && s.n < max_samples; ++pass) {
    for (int64_t q = 0; q < int64_t(in.sequences.size()) && s.n < max_samples; ++q) {
      const int64_t prompt = in.sequences[q].prompt_len;
      auto rd = src.open(q, kGateInput);
      TokenRecord prev, cur;
      bool have = false;
      int64_t pos = 0;
      while (s.n < max_samples && rd->next(cur)) {
        if ((s.n & 255) == 0) throw_if_cancelled();
        // Pair (pos - 1, pos); decode pairs have pos >= prompt (pass 0), the rest pass 1.
        const bool decode_pair = pos >= std::max<int64_t>(prompt, 1);
        if (have && (pass == 0) == decode_pair) {
          s.x.insert(s.x.end(), prev.gate_input.begin(), prev.gate_input.end());
          s.y.insert(s.y.end(), cur.ids.begin(), cur.ids.end());
          ++s.n;
        }
        std::swap(prev, cur);
        have = true;
        ++pos;
      }
    }
  }
  if (s.n < 10) {
    throw Error(fmt::format(
        "predictor linear: expected at least 10 (token, next token) pairs in the calibration "
        "trace, found {}",
        s.n));
  }
  return s;
}

// The training's inner loops, compiled once per instruction set and picked at
// load (core/util/detmath.h, MOEBENCH_CLONES): each is elementwise IEEE
// arithmetic with the same operations in the same order as the scalar loops
// they replace (no fused multiply-add: -ffp-contract=off), so every clone
// and every machine gives the same bits.

// row[h] += g[j] * x_j[h] for the samples j of a batch, in j order: each
// row stays in the L1 cache while the batch's samples pass over it (once the
// whole [E][H] gradient streamed through the cache per sample).
// One chunk of C x 16 values of a gradient row, held in registers while the
// batch's samples pass over it.
template <int C>
__attribute__((always_inline)) inline void accumulate_chunk(float* row, const float* g, int64_t E,
                                                            int64_t e, const float* const* xs,
                                                            int64_t n, int64_t h0) {
  using lanes::v16;
  v16 acc[C];
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) acc[c] = lanes::load16(row + h0 + 16 * c);
  for (int64_t j = 0; j < n; ++j) {
    const float ge = g[j * E + e];
    const v16 gv = {ge, ge, ge, ge, ge, ge, ge, ge, ge, ge, ge, ge, ge, ge, ge, ge};
    const float* x = xs[j] + h0;
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[c] += gv * lanes::load16(x + 16 * c);
  }
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) lanes::store16(row + h0 + 16 * c, acc[c]);
}

MOEBENCH_CLONES void accumulate_rows(float* gW, const float* g, int64_t E, const float* const* xs,
                                     int64_t n, int64_t H) {
  const int64_t H16 = H / 16 * 16;
  for (int64_t e = 0; e < E; ++e) {
    float* row = gW + e * H;
    int64_t h0 = 0;
    for (; h0 + 128 <= H16; h0 += 128) accumulate_chunk<8>(row, g, E, e, xs, n, h0);
    for (; h0 < H16; h0 += 16) accumulate_chunk<1>(row, g, E, e, xs, n, h0);
    for (int64_t j = 0; j < n; ++j) {
      const float ge = g[j * E + e];
      for (int64_t h = H16; h < H; ++h) row[h] += ge * xs[j][h];
    }
  }
}

// The output gradients of one sample: g[e] = (sigmoid(z[e]) - target[e]) * inv,
// added to the bias gradient.
MOEBENCH_CLONES void output_grad(const float* z, const float* target, float inv, float* g,
                                 float* gb, int64_t E) {
  for (int64_t e = 0; e < E; ++e) {
    g[e] = (det::sigmoid(z[e]) - target[e]) * inv;
    gb[e] += g[e];
  }
}

// One Adam step on n parameters (double intermediates, as before).
MOEBENCH_CLONES void adam_step(float* p, const float* g, float* mm, float* vv, int64_t n, double b1,
                               double b2, double c1, double c2, double lr, double eps) {
  for (int64_t i = 0; i < n; ++i) {
    mm[i] = float(b1 * mm[i] + (1 - b1) * g[i]);
    vv[i] = float(b2 * vv[i] + (1 - b2) * double(g[i]) * g[i]);
    const double mh = mm[i] / c1, vh = vv[i] / c2;
    p[i] = float(p[i] - lr * mh / (std::sqrt(vh) + eps));
  }
}

double recall_of(const float* W, const float* b, const Samples& s, const std::vector<int64_t>& idx,
                 int64_t l, int64_t E, std::vector<float>& z, std::vector<int32_t>& top) {
  if (idx.empty()) return std::nan("");
  // All of idx's outputs at once (gemv_batch: the same bits as one gemv each).
  std::vector<const float*> xs(idx.size());
  for (size_t j = 0; j < idx.size(); ++j) xs[j] = &s.x[(idx[j] * s.L + l) * s.H];
  z.resize(idx.size() * size_t(E));
  gemv_batch(W, b, xs.data(), int64_t(xs.size()), E, s.H, z.data());
  double hit = 0;
  for (size_t j = 0; j < idx.size(); ++j) {
    top_k_indices(&z[j * size_t(E)], E, s.k, nullptr, top.data());
    const int32_t* y = &s.y[(idx[j] * s.L + l) * s.k];
    for (int64_t a = 0; a < s.k; ++a) {
      for (int64_t c = 0; c < s.k; ++c) hit += top[a] == y[c];
    }
  }
  return hit / double(idx.size() * s.k);
}

// The pairs' indices shuffled with the seed and split 80 / 10 / 10.
struct Split {
  std::vector<int64_t> train, val, test;
};

Split split_pairs(int64_t n, int64_t seed) {
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  uint64_t rng = det::mix(uint64_t(seed), 0x6c696e656172ull);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[i], order[det::splitmix64(rng) % uint64_t(i + 1)]);
  const int64_t n_train = std::max<int64_t>(1, n * 8 / 10), n_val = std::max<int64_t>(1, n / 10);
  Split s;
  s.train.assign(order.begin(), order.begin() + n_train);
  s.val.assign(order.begin() + n_train, order.begin() + std::min(n, n_train + n_val));
  s.test.assign(order.begin() + std::min(n, n_train + n_val), order.end());
  return s;
}

// Trains one layer's linear map at a time with Adam, keeping the weights of
// the epoch with the best validation recall. Its buffers are reused from
// layer to layer (one trainer per thread).
class LayerTrainer {
 public:
  LayerTrainer(const Samples& s, const Split& split, const LinearTrainOptions& opt, int64_t E)
      : s_(s), split_(split), opt_(opt), E_(E) {}

  // Layer l of m: its weights, validation and test recall and epochs.
  void train(int64_t l, LinearModel& m) {
    const int64_t H = s_.H;
    prepare();
    float* W = &m.weight[size_t(l * E_ * H)];
    float* b = &m.bias[size_t(l * E_)];
    // PyTorch's nn.Linear initialisation: U(-1/sqrt(H), 1/sqrt(H)), seeded per layer.
    uint64_t init = det::mix(uint64_t(opt_.seed), uint64_t(l) + 1);
    const double a = 1.0 / std::sqrt(double(H));
    for (int64_t i = 0; i < E_ * H; ++i) W[i] = float((2.0 * det::uniform01(init) - 1.0) * a);
    for (int64_t i = 0; i < E_; ++i) b[i] = float((2.0 * det::uniform01(init) - 1.0) * a);
    double best = recall_of(W, b, s_, split_.val, l, E_, z_, top_);
    bestW_.assign(W, W + E_ * H);
    bestb_.assign(b, b + E_);
    int64_t since = 0, step = 0, epoch = 0;
    for (epoch = 1; epoch <= opt_.max_epochs && since < opt_.patience; ++epoch) {
      throw_if_cancelled();  // training takes seconds per layer: SIGTERM stops it
                             // (core/util/cancel.h)
      run_epoch(l, W, b, &step);
      const double r = recall_of(W, b, s_, split_.val, l, E_, z_, top_);
      if (r > best) {
        best = r;
        since = 0;
        std::copy(W, W + E_ * H, bestW_.begin());
        std::copy(b, b + E_, bestb_.begin());
      } else {
        ++since;
      }
    }
    std::copy(bestW_.begin(), bestW_.end(), W);
    std::copy(bestb_.begin(), bestb_.end(), b);
    m.val_recall[l] = best;
    m.test_recall[l] = recall_of(W, b, s_, split_.test, l, E_, z_, top_);
    m.epochs[l] = epoch - 1;
  }

 private:
  static constexpr double kB1 = 0.9, kB2 = 0.999, kEps = 1e-8;

  void prepare() {
    const int64_t H = s_.H, E = E_;
    z_.assign(E, 0.0f);
    gW_.assign(size_t(E * H), 0.0f);
    gb_.assign(E, 0.0f);
    gbatch_.assign(size_t(opt_.batch * E), 0.0f);  // [j][e]: the batch's output gradients
    zbatch_.assign(size_t(opt_.batch * E), 0.0f);  // [j][e]: the batch's outputs
    target_.assign(size_t(E), 0.0f);               // one sample's multi-hot label
    xbatch_.assign(size_t(opt_.batch), nullptr);   // the batch's inputs
    top_.assign(s_.k, 0);
    mW_.assign(size_t(E * H), 0.0f);
    vW_.assign(size_t(E * H), 0.0f);
    mb_.assign(E, 0.0f);
    vb_.assign(E, 0.0f);
  }

  // One pass over the training pairs in batches, an Adam step per batch.
  void run_epoch(int64_t l, float* W, float* b, int64_t* step) {
    const int64_t L = s_.L, H = s_.H, E = E_, k = s_.k;
    const int64_t n_train = int64_t(split_.train.size());
    for (int64_t b0 = 0; b0 < n_train; b0 += opt_.batch) {
      const int64_t b1i = std::min(n_train, b0 + opt_.batch);
      const float inv = 1.0f / float((b1i - b0) * E);  // mean over batch and experts
      std::fill(gW_.begin(), gW_.end(), 0.0f);
      std::fill(gb_.begin(), gb_.end(), 0.0f);
      // Forward pass and output gradients of every sample of the batch, then
      // the weight gradient row by row (the same sums in the same order).
      for (int64_t j = b0; j < b1i; ++j)
        xbatch_[size_t(j - b0)] = &s_.x[(split_.train[j] * L + l) * H];
      gemv_batch(W, b, xbatch_.data(), b1i - b0, E, H, zbatch_.data());
      for (int64_t j = b0; j < b1i; ++j) {
        // The multi-hot label (a count per expert; the ids are distinct, so 0 or 1).
        const int32_t* y = &s_.y[(split_.train[j] * L + l) * k];
        std::fill(target_.begin(), target_.end(), 0.0f);
        for (int64_t c = 0; c < k; ++c) target_[size_t(y[c])] += 1.0f;
        output_grad(&zbatch_[size_t((j - b0) * E)], target_.data(), inv,
                    &gbatch_[size_t((j - b0) * E)], gb_.data(), E);
      }
      accumulate_rows(gW_.data(), gbatch_.data(), E, xbatch_.data(), b1i - b0, H);
      ++*step;
      const double c1 = 1.0 - std::pow(kB1, double(*step)), c2 = 1.0 - std::pow(kB2, double(*step));
      adam_step(W, gW_.data(), mW_.data(), vW_.data(), E * H, kB1, kB2, c1, c2, opt_.lr, kEps);
      adam_step(b, gb_.data(), mb_.data(), vb_.data(), E, kB1, kB2, c1, c2, opt_.lr, kEps);
    }
  }

  const Samples& s_;
  const Split& split_;
  const LinearTrainOptions& opt_;
  const int64_t E_;
  std::vector<float> z_, gW_, gb_, mW_, vW_, mb_, vb_, bestW_, bestb_, gbatch_, zbatch_, target_;
  std::vector<const float*> xbatch_;
  std::vector<int32_t> top_;
};

// Runs work(l, trainer) for l = 0 .. L-1 on up to n_threads threads (a
// shared counter hands the layers out, each thread with its own trainer);
// the first exception (a cancellation, an allocation failure) is rethrown
// here once every thread has stopped.
void for_each_layer(int64_t L, int64_t n_threads, const std::function<LayerTrainer()>& make,
                    const std::function<void(int64_t, LayerTrainer&)>& work) {
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::exception_ptr failure;
  auto worker = [&] {
    try {
      LayerTrainer trainer = make();
      for (;;) {
        const int64_t l = next.fetch_add(1);
        if (l >= L) return;
        {
          std::lock_guard<std::mutex> g(mu);
          if (failure) return;
        }
        work(l, trainer);
      }
    } catch (...) {
      std::lock_guard<std::mutex> g(mu);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < n_threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running take the remaining layers
    }
  }
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

LinearModel train_linear(const TraceSource& calib, const LinearTrainOptions& opt, bool verbose) {
  if (opt.batch < 1 || opt.max_epochs < 1 || opt.max_samples < 10 || !(opt.lr > 0)) {
    throw Error(
        "predictor linear: expected batch >= 1, max_epochs >= 1, max_samples >= 10 and lr > 0");
  }
  const Samples s = collect(calib, opt.max_samples);
  const int64_t L = s.L, H = s.H, E = calib.info().experts(), k = s.k;
  LinearModel m;
  m.layers = L;
  m.experts = E;
  m.h = H;
  m.top_k = k;
  m.samples = s.n;
  m.weight.assign(size_t(L * E * H), 0.0f);
  m.bias.assign(size_t(L * E), 0.0f);
  m.val_recall.assign(L, 0.0);
  m.test_recall.assign(L, 0.0);
  m.epochs.assign(L, 0);
  nlohmann::ordered_json src = nlohmann::ordered_json::parse(
      calib.info().source.empty() ? "{}" : calib.info().source, nullptr, false);
  if (src.is_discarded()) src = calib.info().source;
  m.source =
      nlohmann::ordered_json{{"calibration", src}, {"training", opt.to_json()}, {"pairs", s.n}}
          .dump();
  const Split split = split_pairs(s.n, opt.seed);
  // Each layer trains independently from its own seeded initialisation, so
  // the layers are spread over the machine's threads and the result is the
  // same bit for bit at any thread count.
  const int64_t hw = int64_t(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t n_threads = std::clamp<int64_t>(opt.threads > 0 ? opt.threads : hw, 1, L);
  for_each_layer(
      L, n_threads, [&] { return LayerTrainer(s, split, opt, E); },
      [&](int64_t l, LayerTrainer& t) { t.train(l, m); });
  if (verbose) {
    for (int64_t l = 0; l < L; ++l) {
      fmt::print(stderr, "  layer {:3}: {} epochs, validation recall {:.3f}, test recall {:.3f}\n",
                 l, m.epochs[l], m.val_recall[l], m.test_recall[l]);
    }
  }
  return m;
}

void save_linear(const LinearModel& m, const std::filesystem::path& path) {
  using st::DType;
  std::vector<st::Writer::Spec> specs = {{"weight", DType::kF32, {m.layers, m.experts, m.h}},
                                         {"bias", DType::kF32, {m.layers, m.experts}},
                                         {"val_recall", DType::kF64, {m.layers}},
                                         {"test_recall", DType::kF64, {m.layers}},
                                         {"epochs", DType::kI64, {m.layers}}};
  std::map<std::string, std::string> meta = {{"format", "moebench-linear-predictor"},
                                             {"version", "1"},
                                             {"top_k", std::to_string(m.top_k)},
                                             {"samples", std::to_string(m.samples)},
                                             {"source", m.source}};
  st::Writer w(path, specs, meta);
  w.write_at("weight", 0, m.weight.data(), m.weight.size() * sizeof(float));
  w.write_at("bias", 0, m.bias.data(), m.bias.size() * sizeof(float));
  w.write_at("val_recall", 0, m.val_recall.data(), m.val_recall.size() * sizeof(double));
  w.write_at("test_recall", 0, m.test_recall.data(), m.test_recall.size() * sizeof(double));
  w.write_at("epochs", 0, m.epochs.data(), m.epochs.size() * sizeof(int64_t));
  w.commit();
}

LinearModel load_linear(const std::filesystem::path& path) {
  auto f = st::File::open(path);
  const auto& meta = f->metadata();
  auto it = meta.find("format");
  if (it == meta.end() || it->second != "moebench-linear-predictor") {
    throw Error(fmt::format(
        "{}: expected a linear predictor (metadata format = moebench-linear-predictor), found {}",
        path.string(), it == meta.end() ? std::string("no format") : "'" + it->second + "'"));
  }
  auto need = [&](const char* name, st::DType dt, size_t rank) -> const st::TensorInfo& {
    const st::TensorInfo* t = f->find(name);
    if (!t || t->dtype != dt || t->shape.size() != rank) {
      throw Error(fmt::format("{}: tensor '{}': expected {} of rank {}, found {}", path.string(),
                              name, st::to_string(dt), rank,
                              t ? "another dtype or shape" : "none"));
    }
    return *t;
  };
  LinearModel m;
  const auto& w = need("weight", st::DType::kF32, 3);
  m.layers = w.shape[0];
  m.experts = w.shape[1];
  m.h = w.shape[2];
  const auto& b = need("bias", st::DType::kF32, 2);
  const auto& vr = need("val_recall", st::DType::kF64, 1);
  const auto& tr = need("test_recall", st::DType::kF64, 1);
  const auto& ep = need("epochs", st::DType::kI64, 1);
  if (b.shape[0] != m.layers || b.shape[1] != m.experts || vr.shape[0] != m.layers ||
      tr.shape[0] != m.layers || ep.shape[0] != m.layers) {
    throw Error(
        fmt::format("{}: expected bias [{}, {}] and per-layer vectors of {}, found other shapes",
                    path.string(), m.layers, m.experts, m.layers));
  }
  m.weight.resize(w.numel());
  f->read(f->data(w), m.weight.data(), m.weight.size() * sizeof(float));
  m.bias.resize(b.numel());
  f->read(f->data(b), m.bias.data(), m.bias.size() * sizeof(float));
  m.val_recall.resize(m.layers);
  f->read(f->data(vr), m.val_recall.data(), m.layers * sizeof(double));
  m.test_recall.resize(m.layers);
  f->read(f->data(tr), m.test_recall.data(), m.layers * sizeof(double));
  m.epochs.resize(m.layers);
  f->read(f->data(ep), m.epochs.data(), m.layers * sizeof(int64_t));
  try {
    m.top_k = std::stoll(meta.at("top_k"));
    m.samples = std::stoll(meta.at("samples"));
  } catch (const std::exception&) {
    throw Error(fmt::format(
        "{}: expected metadata top_k and samples (integers), found them missing or malformed",
        path.string()));
  }
  if (auto s = meta.find("source"); s != meta.end()) m.source = s->second;
  return m;
}

}  // namespace moebench
