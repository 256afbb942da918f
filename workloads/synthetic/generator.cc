// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Compiled with -O3 -ffp-contract=off (see CMakeLists.txt): every float
// operation is rounded on its own, so vectorised and scalar code paths, and
// different machines, produce the same bytes.

#include "workloads/synthetic/generator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <mutex>

#include <fmt/format.h>

#include "core/trace/routing.h"
#include "core/util/detmath.h"
#include "core/util/error.h"
#include "core/util/json_text.h"
#include "core/util/lanes16.h"
#include "core/util/sha256.h"

namespace moebench {

// ---------------------------------------------------------------- params

const cfg::Schema<GeneratorParams>& GeneratorParams::schema() {
  using S = GeneratorParams;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("generator");
    s.reserved("preset");
    s.string("name", &S::name, "Preset name.")
        .string("family", &S::family, "Model family this preset is fitted to.")
        .string("description", &S::description, "Free text.")
        .string("source", &S::source, "How the knobs were obtained.")
        .integer("structure_seed", &S::structure_seed,
                 "Seed of the synthetic model (gates, means, mixing, popularity).", at_least(0))
        .integer("latent_dim", &S::latent_dim, "Dimension r of the latent context.",
                 between(1, 256))
        .number("rho", &S::rho, "Temporal correlation of the latent context between tokens.",
                NumRange{0.0, 1.0, false, true})
        .number("topic", &S::topic, "Per-sequence topic offset, relative to the latent.",
                non_negative())
        .number("mean_hidden", &S::mean_hidden,
                "RMS per coordinate of the gate-invisible residual mean at layer 0.",
                non_negative())
        .number("mean_visible", &S::mean_visible,
                "RMS per coordinate of each layer's gate-visible mean (independent per layer).",
                non_negative())
        .number("drift", &S::drift,
                "RMS per coordinate of each layer's residual drift (invisible half).",
                non_negative())
        .number("drift_first", &S::drift_first, "Drift of the first transition (layer 0 -> 1).",
                non_negative())
        .number("theta", &S::theta, "Rotation of the mixing per layer.", NumRange{0.0, 1.5707963},
                "rad")
        .number("theta_first", &S::theta_first, "Rotation of the first transition.",
                NumRange{0.0, 1.5707963}, "rad")
        .number("theta_hidden", &S::theta_hidden,
                "Rotation of the mixing in the gate-invisible half after the first transition "
                "(< 0: theta). The context routers read may persist while the part they do not "
                "read turns.",
                NumRange{-1.0, 1.5707963}, "rad")
        .number("noise", &S::noise,
                "RMS per coordinate of the token's own state (the part not shared with "
                "neighbouring tokens).",
                non_negative())
        .number("depth_corr", &S::depth_corr,
                "Correlation of the token's own state between adjacent layers "
                "(0: independent per layer).",
                NumRange{0.0, 0.999})
        .number("depth_corr_first", &S::depth_corr_first,
                "The same for the first transition, layer 0 -> 1 (< 0: same as depth_corr).",
                NumRange{-1.0, 0.999})
        .number("depth_corr_hidden", &S::depth_corr_hidden,
                "The same in the gate-invisible half, at every transition (< 0: as the visible "
                "half). What a layer writes that later routers do not read need not persist.",
                NumRange{-1.0, 0.999})
        .boolean("shared_gates", &S::shared_gates,
                 "Every layer's router reads the same gate directions (one sign vector and row "
                 "set per block), each layer assigning its experts to them in its own order; "
                 "needed by focus.")
        .number("focus", &S::focus,
                "Strength of the token's focus feature (a spike along one shared gate "
                "direction), relative to the logit spread of the token's own state: the "
                "router's decisive first choice.",
                non_negative())
        .number("focus_repeat", &S::focus_repeat,
                "Probability that a token keeps its predecessor's focus direction.", fraction())
        .number("context_first", &S::context_first,
                "Weight of the shared context (latent) in the first MoE layer's gate input, "
                "relative to later layers.",
                NumRange{0.0, 1.0})
        .number("gate_scale", &S::gate_scale, "Logit scale (inverse temperature) of the gates.",
                positive())
        .number("skew", &S::skew, "Std of the per-expert popularity bias (logits), deep layers.",
                non_negative())
        .number("skew_shallow", &S::skew_shallow,
                "Popularity-bias std before skew_onset (< 0: same as skew).", NumRange{-1.0})
        .number(
            "skew_onset", &S::skew_onset,
            "Depth fraction where the bias starts rising (over a quarter of the depth) to skew.",
            fraction());
    return s;
  }();
  return s;
}

double GeneratorParams::skew_at(int64_t l, int64_t L) const {
  if (skew_shallow < 0) return skew;
  const double x = L > 1 ? double(l) / double(L - 1) : 1.0;
  const double ramp = std::clamp((x - skew_onset) / 0.25, 0.0, 1.0);
  return skew_shallow + (skew - skew_shallow) * ramp;
}

GeneratorParams load_generator(const std::string& name, const ModelSpec& model,
                               const ConfigPaths& paths) {
  std::string preset = name;
  if (preset == "auto") {
    if (model.family == "custom") {
      throw ConfigError(
          Where{"<workload>"}, "workload.generator",
          "a generator preset (the model's family is 'custom', so 'auto' cannot pick one)",
          "'auto'");
    }
    preset = model.family;
  }
  cfg::Value sec = cfg::Value::table(Where{"<workload>"});
  sec.set("preset", cfg::Value::string(preset, Where{"<workload>"}), Where{"<workload>"});
  const cfg::Value v = resolve_preset("workloads", sec, "workload.generator", paths, ".");
  GeneratorParams p;
  GeneratorParams::schema().parse(v, p, "generator");
  return p;
}

SyntheticLayout layout_from_workload(const WorkloadSpec& w, bool calibration) {
  SyntheticLayout l;
  const int64_t n = calibration ? w.calibration_sequences : w.sequences;
  const int64_t prompt =
      calibration && w.calibration_prompt_len >= 0 ? w.calibration_prompt_len : w.prompt_len;
  const int64_t decode =
      calibration && w.calibration_decode_len >= 0 ? w.calibration_decode_len : w.decode_len;
  l.sequences.assign(n, SequenceInfo{prompt, decode});
  l.seed = w.seed;
  l.h_trace = w.h_trace;
  l.calibration = calibration;
  return l;
}

// ---------------------------------------------------------------- structure

struct SyntheticSource::Structure {
  int64_t L = 0, E = 0, H = 0, Hv = 0, r = 0, blocks = 0;
  std::vector<float> mean;        // [L][H]: visible half v_l, invisible half m_l
  std::vector<float> mix;         // [L][r][H]
  std::vector<float> sign;        // [L][blocks][Hv], +-1
  std::vector<int32_t> row;       // [L][E]: Hadamard row of expert e in block e / Hv
  std::vector<float> beta;        // [L][E]
  std::vector<float> scale;       // [L][E]: gate_scale / sqrt(Hv), equalised per expert (see below)
  std::vector<float> focus_dir;   // [E][Hv]: unit vectors along the shared gate directions
  std::vector<float> focus_gain;  // [L][E] by direction: undoes the expert's equalisation
  RoutingConfig routing;
};

namespace {

constexpr uint64_t kStreamVisible = 0x76697369626c65ull;  // "visible"
constexpr uint64_t kStreamHidden = 0x68696464656eull;     // "hidden"
constexpr uint64_t kCalibration = 0x63616c6962726174ull;  // "calibrat"

bool is_pow2(int64_t x) {
  return x > 0 && (x & (x - 1)) == 0;
}

// Structures by key, the most recent kept (a suite's models and generator
// presets: a handful; each a few MB at most).
constexpr size_t kStructuresKept = 32;

struct StructureCache {
  std::mutex mu;
  std::deque<std::pair<std::string, std::shared_ptr<const SyntheticSource::Structure>>> kept;
};

StructureCache& structure_cache() {
  static StructureCache c;
  return c;
}

}  // namespace

std::shared_ptr<const SyntheticSource::Structure> SyntheticSource::shared_structure(
    const std::string& key, const std::function<std::shared_ptr<const Structure>()>& build) {
  StructureCache& c = structure_cache();
  {
    std::lock_guard<std::mutex> g(c.mu);
    for (const auto& [k, v] : c.kept) {
      if (k == key) return v;
    }
  }
  std::shared_ptr<const Structure> built = build();  // may throw: nothing kept
  std::lock_guard<std::mutex> g(c.mu);
  for (const auto& [k, v] : c.kept) {
    if (k == key) return v;  // built meanwhile by another case: the same bits
  }
  c.kept.emplace_back(key, built);
  if (c.kept.size() > kStructuresKept) c.kept.pop_front();
  return built;
}

// The static "model" of the generator: means, mixing, gates, popularity.
void SyntheticSource::build_structure(Structure& s, const ModelSpec& model,
                                      const GeneratorParams& params, int64_t H) {
  s.L = model.moe_layers();
  s.E = model.routed_experts;
  s.H = H;
  s.Hv = H / 2;
  s.r = params.latent_dim;
  s.blocks = (s.E + s.Hv - 1) / s.Hv;
  s.routing = RoutingConfig::from_model(model);

  uint64_t rng = det::mix(uint64_t(params.structure_seed), 0x7374727563747572ull);  // "structur"
  const int64_t L = s.L, E = s.E, Hv = s.Hv, r = s.r;
  s.mean.resize(L * H);
  s.mix.resize(L * r * H);
  std::vector<double> hidden(H - Hv), A(r * H);
  for (auto& x : hidden) x = params.mean_hidden * det::normal(rng);
  const double inv_sqrt_r = 1.0 / std::sqrt(double(r));
  for (auto& x : A) x = det::normal(rng) * inv_sqrt_r;
  for (int64_t l = 0; l < L; ++l) {
    float* mu = &s.mean[l * H];
    for (int64_t i = 0; i < Hv; ++i) mu[i] = float(params.mean_visible * det::normal(rng));
    for (int64_t i = Hv; i < H; ++i) mu[i] = float(hidden[i - Hv]);
    for (int64_t i = 0; i < r * H; ++i) s.mix[l * r * H + i] = float(A[i]);
    const double dr = l == 0 ? params.drift_first : params.drift;
    const double th = l == 0 ? params.theta_first : params.theta;
    for (auto& x : hidden) x += dr * det::normal(rng);
    const double c = det::cos(th), sn = det::sin(th);
    // The invisible half's columns may turn at their own rate (theta_hidden);
    // the same random draws either way, so presets without it are unchanged.
    const double thh = l == 0 || params.theta_hidden < 0 ? th : params.theta_hidden;
    const double ch = det::cos(thh), snh = det::sin(thh);
    for (int64_t i = 0; i < r * H; ++i) {
      const bool vis = i % H < Hv;
      A[i] = (vis ? c : ch) * A[i] + (vis ? sn : snh) * det::normal(rng) * inv_sqrt_r;
    }
  }
  // Gates: one sign vector and one set of Walsh-Hadamard rows per block of
  // Hv experts, shared by every layer; each layer assigns its experts to the
  // block's rows in its own random order. Every layer's router therefore
  // reads the same directions of the residual stream, relabelled, so a
  // feature that persists over depth keeps selecting (different) experts at
  // every layer, as features of a real residual stream do; which expert of
  // the next layer answers to a direction is what gate reuse predicts.
  s.sign.resize(L * s.blocks * Hv);
  s.row.resize(L * E);
  s.beta.resize(L * E);
  std::vector<float> shared_sign(s.blocks * Hv);
  std::vector<int32_t> rowset(s.blocks * Hv), perm(Hv), dir_of(L * E, 0);
  auto shuffle = [&](int32_t* v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) v[i] = int32_t(i);
    for (int64_t i = n - 1; i > 0; --i) {
      const int64_t j = int64_t(det::splitmix64(rng) % uint64_t(i + 1));
      std::swap(v[i], v[j]);
    }
  };
  if (params.shared_gates) {
    for (int64_t b = 0; b < s.blocks; ++b) {
      for (int64_t i = 0; i < Hv; ++i)
        shared_sign[b * Hv + i] = (det::splitmix64(rng) & 1) ? 1.0f : -1.0f;
      shuffle(&rowset[b * Hv], Hv);
    }
  }
  for (int64_t l = 0; l < L; ++l) {
    for (int64_t b = 0; b < s.blocks; ++b) {
      float* sg = &s.sign[(l * s.blocks + b) * Hv];
      const int64_t n = std::min(E, (b + 1) * Hv) - b * Hv;
      if (params.shared_gates) {
        std::copy_n(&shared_sign[b * Hv], Hv, sg);
        shuffle(perm.data(), n);
        for (int64_t j = 0; j < n; ++j) {
          s.row[l * E + b * Hv + j] = rowset[b * Hv + perm[j]];
          dir_of[l * E + b * Hv + j] = int32_t(b * Hv + perm[j]);
        }
      } else {
        // Independent gates per layer (the original structure).
        for (int64_t i = 0; i < Hv; ++i) sg[i] = (det::splitmix64(rng) & 1) ? 1.0f : -1.0f;
        shuffle(perm.data(), Hv);
        for (int64_t j = 0; j < n; ++j) s.row[l * E + b * Hv + j] = perm[j];
      }
    }
    const double sk = params.skew_at(l, L);
    for (int64_t e = 0; e < E; ++e) s.beta[l * E + e] = float(sk * det::normal(rng));
  }
  // Focus directions: direction d (block d / Hv, the block's (d % Hv)-th
  // shared row) as a unit vector of the visible half.
  if (params.focus > 0 && !params.shared_gates) {
    throw Error(
        fmt::format("workload generator '{}': focus = {} needs shared_gates = true (the focus is a "
                    "direction every layer's router reads), found shared_gates = false",
                    params.name, params.focus));
  }
  if (params.shared_gates) s.focus_dir.resize(E * Hv);
  const float inv_sqrt_hv = float(1.0 / std::sqrt(double(Hv)));
  for (int64_t d = 0; d < (params.shared_gates ? E : 0); ++d) {
    const int64_t b = d / Hv;
    const uint32_t rw = uint32_t(rowset[b * Hv + d % Hv]);
    for (int64_t i = 0; i < Hv; ++i) {
      const float had = (__builtin_popcount(rw & uint32_t(i)) & 1) ? -1.0f : 1.0f;
      s.focus_dir[d * Hv + i] = shared_sign[b * Hv + i] * had * inv_sqrt_hv;
    }
  }
  // A random mixing matrix gives each expert's gate row a different share of
  // the token-dependent signal (|q_e^T A_V| varies by ~35% at r = 16), which
  // would make experts with more signal win top-k more often. Trained routers
  // are balanced, so each expert's gate row is rescaled to the same dynamic
  // variance; popularity then comes only from skew and mean_visible.
  s.scale.resize(L * E);
  s.focus_gain.resize(L * E);
  std::vector<double> norm(E);
  for (int64_t l = 0; l < L; ++l) {
    double mean_sq = 0;
    for (int64_t e = 0; e < E; ++e) {
      const int64_t b = e / Hv;
      const uint32_t rw = uint32_t(s.row[l * E + e]);
      const float* sg = &s.sign[(l * s.blocks + b) * Hv];
      double sq = 0;
      for (int64_t j = 0; j < r; ++j) {
        const float* a = &s.mix[(l * r + j) * H];
        double dot = 0;
        for (int64_t i = 0; i < Hv; ++i) {
          const double had = (__builtin_popcount(rw & uint32_t(i)) & 1) ? -1.0 : 1.0;
          dot += had * double(sg[i]) * double(a[i]);
        }
        sq += dot * dot;
      }
      norm[e] = std::sqrt(sq);
      mean_sq += sq;
    }
    const double target = std::sqrt(mean_sq / double(E));
    const double base = params.gate_scale / std::sqrt(double(Hv));
    for (int64_t e = 0; e < E; ++e) {
      s.scale[l * E + e] = float(norm[e] > 0 ? base * target / norm[e] : base);
      // The focus spike along this expert's direction is divided by the same
      // equalisation, so it adds the same logit whichever expert it selects.
      if (params.shared_gates) {
        s.focus_gain[l * E + dir_of[l * E + e]] =
            float(norm[e] > 0 && target > 0 ? norm[e] / target : 1.0);
      }
    }
  }
}

SyntheticSource::SyntheticSource(const ModelSpec& model, const GeneratorParams& params,
                                 SyntheticLayout layout)
    : params_(params), layout_(std::move(layout)) {
  const int64_t H = layout_.h_trace;
  if (!is_pow2(H) || H < 32) {
    throw Error(
        fmt::format("workload.h_trace: expected a power of two >= 32 (the generator's gates "
                    "are Hadamard transforms), found {}",
                    H));
  }
  // The structure depends on the model's routing, the parameters and h_trace
  // alone (not the seed, stream or sequences): every source of a process with
  // those shares one, built once (the same bits as building it again).
  const std::string skey =
      fmt::format("{}|{}|{}|{}|{}|{}", model.name, model.routing_hash(), model.moe_layers(),
                  model.routed_experts, json_text(params.to_json()), H);
  structure_ = shared_structure(skey, [&] {
    auto built = std::make_shared<Structure>();
    build_structure(*built, model, params, H);
    return built;
  });
  info_.model_name = model.name;
  info_.model_hash = model.routing_hash();
  info_.moe_layers = structure_->L;
  info_.h_trace = H;
  info_.routing = structure_->routing;
  info_.probs = ProbsStorage::kFull;
  info_.has_gate_weights = true;
  info_.sequences = layout_.sequences;
  nlohmann::ordered_json src;
  src["generator"] = "moebench-synthetic";
  src["preset"] = params.to_json();
  src["seed"] = layout_.seed;
  src["stream"] = layout_.calibration ? "calibration" : "evaluation";
  info_.source = json_text(src);
  // What the tokens depend on: the model's routing (its storage dtypes do
  // not matter), the parameters, the stream and seed, the sequences' lengths
  // and h_trace.
  nlohmann::ordered_json key = src;
  key["model"] = model.name;
  key["model_routing"] = info_.model_hash;
  key["h_trace"] = H;
  auto& seqs = key["sequences"] = nlohmann::ordered_json::array();
  for (const auto& q : layout_.sequences) seqs.push_back({q.prompt_len, q.decode_len});
  key_ = sha256_hex(json_text(key));
}

SyntheticSource::~SyntheticSource() = default;

const GateWeights* SyntheticSource::gate_weights() const {
  if (gates_) return gates_.get();
  const Structure& s = *structure_;
  auto g = std::make_unique<GateWeights>();
  g->layers = s.L;
  g->experts = s.E;
  g->h = s.H;
  g->weight.assign(s.L * s.E * s.H, 0.0f);
  g->bias = s.beta;
  g->selection_bias.assign(s.L * s.E, 0.0f);
  for (int64_t l = 0; l < s.L; ++l) {
    for (int64_t e = 0; e < s.E; ++e) {
      const int64_t b = e / s.Hv;
      const uint32_t rw = uint32_t(s.row[l * s.E + e]);
      const float* sg = &s.sign[(l * s.blocks + b) * s.Hv];
      float* w = &g->weight[(l * s.E + e) * s.H];
      for (int64_t i = 0; i < s.Hv; ++i) {
        const float had = (__builtin_popcount(rw & uint32_t(i)) & 1) ? -1.0f : 1.0f;
        w[i] = s.scale[l * s.E + e] * had * sg[i];
      }
    }
  }
  gates_ = std::move(g);
  return gates_.get();
}

// ---------------------------------------------------------------- streaming

namespace {

// Sixteen independent 32-bit generators (LCG state, lowbias32 output):
// integer arithmetic only, so the lanes vectorise and are exact everywhere.
struct LaneRng {
  uint32_t state[16];

  void seed(uint64_t key) {
    uint64_t s = key;
    for (auto& x : state) x = uint32_t(det::splitmix64(s));
  }
};

using lanes::load16;
using lanes::store16;
using lanes::u16v;
using lanes::v16;

constexpr float kSqrt12 = 3.4641016151377544f;

// 16 uniforms in [0, 1).
inline void lane_uniforms(LaneRng& rng, float* out) {
  for (int i = 0; i < 16; ++i) {
    rng.state[i] = rng.state[i] * 1664525u + 1013904223u + uint32_t(2 * i);
    uint32_t x = rng.state[i];
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    out[i] = float(x >> 8) * 0x1.0p-24f;
  }
}

// The same 16 lanes as one vector (elementwise, so bit-identical to the above).
__attribute__((always_inline)) inline v16 lane_uniforms_v(LaneRng& rng) {
  const u16v inc = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
  u16v st;
  std::memcpy(&st, rng.state, 64);
  st = st * 1664525u + 1013904223u + inc;
  std::memcpy(rng.state, &st, 64);
  u16v x = st;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return __builtin_convertvector(x >> 8, v16) * 0x1.0p-24f;
}

// 16 approximately normal values (Irwin-Hall of 4 uniforms, unit variance).
void normals16(LaneRng& rng, float* out) {
  float a[16], b[16], c[16], d[16];
  lane_uniforms(rng, a);
  lane_uniforms(rng, b);
  lane_uniforms(rng, c);
  lane_uniforms(rng, d);
  const float k = 1.7320508075688772f;  // sqrt(3) = sqrt(12 / 4)
  for (int j = 0; j < 16; ++j) out[j] = (((a[j] + b[j]) + (c[j] + d[j])) - 2.0f) * k;
}

// Blocks of 16 tokens are generated together with the token in the SIMD
// lane: h is [H][16], logits [E][16]. Every token owns lane (position % 16)
// of the sequence's generators, so its values do not depend on the
// sequence's length or on how the block is used.

// The token's own state s (persistent across depth) and the gate input h
// for coordinates [begin, end):
//   first layer: s[i][b] = noise * eps[i][b]
//   later:       s[i][b] = depth_corr * s[i][b] + depth_innov * (noise * eps[i][b])
//   h[i][b] = (mean[i] + s[i][b]) + sum_j mix[j][i] * c[j][b], terms added in this order.
// With depth_corr = 0 and depth_innov = 1 this is the independent per-layer
// noise of earlier versions, bit for bit.
MOEBENCH_CLONES void mix_block(const float* mean, const float* mix, const float* c, int64_t r,
                               int64_t H, LaneRng& rng, float noise, bool first, float depth_corr,
                               float depth_innov, float* state, float* h, int64_t begin,
                               int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const v16 u = lane_uniforms_v(rng);
    const v16 e = ((u - 0.5f) * kSqrt12) * noise;
    const v16 st = first ? e : depth_corr * load16(state + i * 16) + depth_innov * e;
    store16(state + i * 16, st);
    store16(h + i * 16, mean[i] + st);
  }
  // Per coordinate, the r terms are added in order j = 0..r-1 in a register
  // (the same operations in the same order as a j-outer loop, so the same
  // bits, without storing and reloading h r times).
  // Eight coordinates at a time: eight independent chains hide the add
  // latency and each c_j is loaded once per eight coordinates.
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    v16 acc[8];
    for (int q = 0; q < 8; ++q) acc[q] = load16(h + (i + q) * 16);
    for (int64_t j = 0; j < r; ++j) {
      const v16 cj = load16(c + j * 16);
      const float* a = mix + j * H + i;
      for (int q = 0; q < 8; ++q) acc[q] = acc[q] + a[q] * cj;
    }
    for (int q = 0; q < 8; ++q) store16(h + (i + q) * 16, acc[q]);
  }
  for (; i < end; ++i) {
    v16 acc = load16(h + i * 16);
    for (int64_t j = 0; j < r; ++j) acc = acc + mix[j * H + i] * load16(c + j * 16);
    store16(h + i * 16, acc);
  }
}

// Logits [E][16] from the visible half of h: per block of Hv experts, sign
// flip, unnormalised Walsh-Hadamard transform (natural order), row gather.
MOEBENCH_CLONES void gate_logits_block(const float* h, const float* sign, const int32_t* row,
                                       const float* beta, const float* scale, int64_t Hv, int64_t E,
                                       int64_t blocks, float* x, float* logits) {
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const float* sg = sign + blk * Hv;
    for (int64_t i = 0; i < Hv; ++i) store16(x + i * 16, load16(h + i * 16) * sg[i]);
    for (int64_t len = 1; len < Hv; len <<= 1) {
      for (int64_t i = 0; i < Hv; i += 2 * len) {
        for (int64_t j = i; j < i + len; ++j) {
          const v16 a = load16(x + j * 16), c = load16(x + (j + len) * 16);
          store16(x + j * 16, a + c);
          store16(x + (j + len) * 16, a - c);
        }
      }
    }
    const int64_t e_end = std::min(E, (blk + 1) * Hv);
    for (int64_t e = blk * Hv; e < e_end; ++e) {
      store16(logits + e * 16, scale[e] * load16(x + int64_t(row[e]) * 16) + beta[e]);
    }
  }
}

class SyntheticReader : public SequenceReader {
 public:
  SyntheticReader(const SyntheticSource* src, int64_t seq, unsigned fields)
      : src_(src), s_(src->structure()), seq_(seq), fields_(fields) {
    const auto& lay = src->layout();
    const uint64_t base =
        lay.calibration ? (uint64_t(lay.seed) ^ kCalibration) : uint64_t(lay.seed);
    const uint64_t key = det::mix(base, uint64_t(seq));
    visible_.seed(det::mix(key, kStreamVisible));
    hidden_.seed(det::mix(key, kStreamHidden));
    len_ = lay.sequences[seq].tokens();
    const int64_t r = s_.r, rr = (r + 15) / 16 * 16;
    // Stationary start of the latent and the sequence's topic offset.
    std::vector<float> tmp(rr);
    z_.assign(r, 0.0f);
    u_.assign(r, 0.0f);
    for (int64_t j = 0; j < rr; j += 16) normals16(visible_, &tmp[j]);
    std::copy(tmp.begin(), tmp.begin() + r, z_.begin());
    for (int64_t j = 0; j < rr; j += 16) normals16(visible_, &tmp[j]);
    const float topic = float(src->params().topic);
    for (int64_t j = 0; j < r; ++j) u_[j] = tmp[j] * topic;
    // The first token's focus direction (drawn only when there is a focus, so
    // presets without one keep their bytes).
    if (src->params().focus > 0) {
      float uu[16];
      lane_uniforms(visible_, uu);
      focus_d_ = std::min<int64_t>(s_.E - 1, int64_t(double(uu[0]) * double(s_.E)));
    }
    const double rho = src->params().rho;
    rho_ = float(rho);
    innov_ = float(std::sqrt(1.0 - rho * rho));
    xi_.resize(r * 16);
    c_.resize(r * 16);
    c_first_.resize(r * 16);
    h_.resize(s_.H * 16);
    state_.resize(s_.H * 16);
    const auto& p = src->params();
    const double kf = p.depth_corr_first < 0 ? p.depth_corr : p.depth_corr_first;
    corr_ = float(p.depth_corr);
    innov_depth_ = float(std::sqrt(1.0 - p.depth_corr * p.depth_corr));
    corr_first_ = float(kf);
    innov_depth_first_ = float(std::sqrt(1.0 - kf * kf));
    hidden_own_ = p.depth_corr_hidden >= 0;
    corr_hidden_ = float(std::max(0.0, p.depth_corr_hidden));
    innov_hidden_ = float(std::sqrt(1.0 - double(corr_hidden_) * double(corr_hidden_)));
    context_first_ = float(p.context_first);
    focus_ = float(p.focus);
    focus_first_ = float(p.context_first * p.focus);
    x_.resize(s_.Hv * 16);
    logits_.resize(s_.E * 16);
    block_.resize(16);
  }

  bool next(TokenRecord& out) override {
    if (pos_ >= len_) return false;
    if (block_pos_ == block_fill_) generate_block();
    std::swap(out, block_[block_pos_]);
    out.seq = seq_;
    out.pos = pos_;
    ++block_pos_;
    ++pos_;
    return true;
  }

 private:
  void generate_block() {
    const int64_t L = s_.L, E = s_.E, H = s_.H, Hv = s_.Hv, k = s_.routing.top_k, r = s_.r;
    const int nb = int(std::min<int64_t>(16, len_ - pos_));
    const bool gate = fields_ & kGateInput;
    const bool probs = fields_ & kProbs;
    // Gate inputs alone (kNoRouting): the router is skipped; it draws no
    // random numbers, so the gate inputs are the same bits either way.
    const bool routing = probs || !(fields_ & kNoRouting);
    for (int b = 0; b < nb; ++b) {
      TokenRecord& t = block_[b];
      t.ids.resize(routing ? L * k : 0);
      t.weights.resize(routing ? L * k : 0);
      if (probs)
        t.probs.resize(L * E);
      else
        t.probs.clear();
      if (gate)
        t.gate_input.resize(L * H);
      else
        t.gate_input.clear();
    }
    // Latent context of the 16 tokens (dimension j of token b in xi[j][b]).
    for (int64_t j = 0; j < r; ++j) normals16(visible_, &xi_[j * 16]);
    // Focus: each token keeps its predecessor's direction with probability
    // focus_repeat, else draws a new one uniformly.
    if (src_->params().focus > 0) {
      float keep[16], pick[16];
      lane_uniforms(visible_, keep);
      lane_uniforms(visible_, pick);
      const double rep = src_->params().focus_repeat;
      for (int b = 0; b < 16; ++b) {
        if (!(double(keep[b]) < rep))
          focus_d_ = std::min<int64_t>(s_.E - 1, int64_t(double(pick[b]) * double(s_.E)));
        focus_of_[b] = focus_d_;
      }
    }
    for (int b = 0; b < 16; ++b) {
      for (int64_t j = 0; j < r; ++j) {
        z_[j] = rho_ * z_[j] + innov_ * xi_[j * 16 + b];
        c_[j * 16 + b] = z_[j] + u_[j];
        c_first_[j * 16 + b] = context_first_ * c_[j * 16 + b];
      }
    }
    const float noise = float(src_->params().noise);
    int32_t* ids[16];
    float* weights[16];
    float* prob[16];
    float* gate_rows[16];
    for (int64_t l = 0; l < L; ++l) {
      const float* mean = &s_.mean[l * H];
      const float* mix = &s_.mix[l * r * H];
      // The first layer sees the context scaled by context_first; the token's
      // own state carries over from layer to layer (depth_corr; the 0 -> 1
      // transition has depth_corr_first).
      const float* c = l == 0 ? c_first_.data() : c_.data();
      const float kc = l == 1 ? corr_first_ : corr_,
                  ki = l == 1 ? innov_depth_first_ : innov_depth_;
      mix_block(mean, mix, c, r, H, visible_, noise, l == 0, kc, ki, state_.data(), h_.data(), 0,
                Hv);
      // The focus feature: the same direction at every layer (weighted like
      // the context at the first layer), in the gate-visible half.
      const float fm = l == 0 ? focus_first_ : focus_;
      if (fm != 0.0f) {
        for (int b = 0; b < nb; ++b) {
          const float* v = &s_.focus_dir[focus_of_[b] * Hv];
          const float g = fm * s_.focus_gain[l * E + focus_of_[b]];
          for (int64_t i = 0; i < Hv; ++i) h_[i * 16 + b] += g * v[i];
        }
      }
      if (gate) {
        mix_block(mean, mix, c, r, H, hidden_, noise, l == 0, hidden_own_ ? corr_hidden_ : kc,
                  hidden_own_ ? innov_hidden_ : ki, state_.data(), h_.data(), Hv, H);
        for (int b = 0; b < nb; ++b) gate_rows[b] = block_[b].gate_input.data();
        lanes::unpack_at(h_.data(), H, nb, gate_rows, l * H);
      }
      if (!routing) continue;
      gate_logits_block(h_.data(), &s_.sign[l * s_.blocks * Hv], &s_.row[l * E], &s_.beta[l * E],
                        &s_.scale[l * E], Hv, E, s_.blocks, x_.data(), logits_.data());
      for (int b = 0; b < nb; ++b) {
        ids[b] = &block_[b].ids[l * k];
        weights[b] = &block_[b].weights[l * k];
        prob[b] = probs ? &block_[b].probs[l * E] : nullptr;
      }
      route_block(s_.routing, logits_.data(), nb, ids, weights, probs ? prob : nullptr, scratch_);
    }
    block_fill_ = nb;
    block_pos_ = 0;
  }

  const SyntheticSource* src_;
  const SyntheticSource::Structure& s_;
  int64_t seq_, pos_ = 0, len_ = 0;
  unsigned fields_;
  LaneRng visible_, hidden_;
  float rho_ = 0, innov_ = 0;
  float corr_ = 0, innov_depth_ = 1, corr_first_ = 0, innov_depth_first_ = 1, context_first_ = 1;
  bool hidden_own_ = false;  // depth_corr_hidden >= 0
  float corr_hidden_ = 0, innov_hidden_ = 1;
  float focus_ = 0, focus_first_ = 0;
  int64_t focus_d_ = 0, focus_of_[16] = {};
  std::vector<float> z_, u_, xi_, c_, c_first_, h_, state_, x_, logits_;
  std::vector<TokenRecord> block_;
  int block_fill_ = 0, block_pos_ = 0;
  RoutingScratch scratch_;
};

}  // namespace

std::unique_ptr<SequenceReader> SyntheticSource::open(int64_t seq, unsigned fields) const {
  if (seq < 0 || seq >= int64_t(layout_.sequences.size())) {
    throw InternalError(
        fmt::format("synthetic source: sequence {} of {}", seq, layout_.sequences.size()));
  }
  return std::make_unique<SyntheticReader>(this, seq, fields);
}

}  // namespace moebench
