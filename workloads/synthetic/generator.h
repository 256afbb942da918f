// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The seeded synthetic routing generator (docs/WORKLOADS.md, "The synthetic
// generator"): a generative model of the residual stream whose routing
// reproduces published statistics of real MoE models.
//
//   per sequence: topic u ~ N(0, I_r)
//   per token:    z_t = rho z_{t-1} + sqrt(1 - rho^2) xi_t,   c_t = z_t + topic * u
//   per layer:    h_{t,l} = mu_l + g_l A_l c_t + s_{t,l}                    (gate input, H dims)
//                 s_{t,0} = noise * eps_{t,0}                               (the token's own state)
//                 s_{t,l} = kappa s_{t,l-1} + sqrt(1 - kappa^2) noise eps_{t,l}   (persists over
//                 depth) g_0 = context_first, g_l = 1 after                        (context builds
//                 up)
//                 + g_l * focus * v_{f_t} in the visible half: one shared gate direction per token,
//                   f_t = f_{t-1} with probability focus_repeat, else uniform   (decisive first
//                   choice)
//                 mu_{l+1} = mu_l + d_l                                     (residual drift)
//                 A_{l+1} = cos(theta) A_l + sin(theta) B_l                 (rotating mixing;
//                   the invisible half's columns at theta_hidden after the first transition)
//   routing:      logits_l = D_l Q_l h_V + beta_l                           (softmax / grouped /
//   sigmoid top-k)
//
// Two refinements of the sketch in docs/WORKLOADS.md, both for realism:
//   * h is split into a gate-visible half V and a gate-invisible half. The
//     large shared residual mean (mean_hidden) lives in the invisible half:
//     it makes adjacent layers' gate inputs similar (the cosine targets)
//     without making routing static, as the large-norm directions of real
//     residual streams do. Drift d_l touches both halves, so it changes
//     routing and a residual correction (DALI) helps predict it.
//   * Q_l is a sign-randomised, row-permuted Walsh-Hadamard transform
//     (orthonormal rows, one block per Hv experts). It is an exact, dense,
//     materialisable gate matrix (written to trace files for predictors) that
//     costs O(H log H) instead of O(E H) per token. D_l scales each expert's
//     row so every expert sees the same token-dependent variance (trained
//     routers are balanced); popularity comes only from beta_l and the
//     per-layer visible mean.
//
// Per-coordinate noise is uniform with unit variance (the Hadamard mixing
// makes logit noise near-Gaussian). The generator streams: a sequence needs
// O(r + H + E) state, and the same (preset, seed, sequence) gives the same
// bytes on every machine (integer RNG, det:: math, no FMA contraction).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/experiment/experiment.h"
#include "core/trace/trace.h"

namespace moebench {

struct GeneratorParams {
  std::string name;
  std::string family;
  std::string description;
  std::string source;          // how the knobs were obtained (fit command, targets)
  int64_t structure_seed = 1;  // the synthetic "model": gates, means, mixing, popularity
  int64_t latent_dim = 16;     // r
  double rho = 0.8;            // temporal correlation of the latent context
  double topic = 0.5;          // per-sequence topic offset, relative to the latent
  double mean_hidden = 2.0;    // RMS per coordinate of the gate-invisible residual mean at layer 0
  double mean_visible =
      0.5;  // RMS per coordinate of each layer's gate-visible mean (independent per layer)
  double drift = 0.3;        // RMS per coordinate of each layer's drift d_l
  double drift_first = 1.0;  // the same for the first transition (layer 0 -> 1)
  double theta = 0.3;        // mixing rotation per layer (radians)
  double theta_first = 0.8;  // the same for the first transition
  double theta_hidden =
      -1.0;            // theta in the gate-invisible half after the first transition (< 0: theta)
  double noise = 0.5;  // RMS per coordinate of the token's own state s
  // Structure added for cross-layer predictability (docs/WORKLOADS.md,
  // "Cross-layer and temporal structure"). The defaults switch it off, and a preset
  // without these keys generates exactly the bytes it did before.
  double depth_corr = 0.0;          // correlation of s between adjacent layers (AR(1) over depth)
  double depth_corr_first = -1.0;   // the same for layer 0 -> 1 (< 0: depth_corr)
  double depth_corr_hidden = -1.0;  // the same in the gate-invisible half (< 0: as the visible)
  double context_first = 1.0;  // weight of the context c_t (and the focus) in layer 0's gate input
  bool shared_gates = false;   // every layer's router reads the same directions, relabelled
  double focus = 0.0;          // strength of the focus spike along one shared gate direction
  double focus_repeat = 0.0;   // probability a token keeps its predecessor's focus direction
  double gate_scale = 2.0;     // logit scale (inverse temperature) of the gates
  double skew = 0.5;           // std of the per-expert popularity bias (logits) in deep layers
  double skew_shallow = -1.0;  // skew before skew_onset (< 0: same as skew)
  double skew_onset = 0.0;     // depth fraction where skew starts rising to its full value

  static const cfg::Schema<GeneratorParams>& schema();
  nlohmann::ordered_json to_json() const { return schema().to_json(*this); }
  // Skew of MoE layer l of L.
  double skew_at(int64_t l, int64_t L) const;
};

// Loads configs/workloads/<name>.toml. "auto" picks the model family's preset.
GeneratorParams load_generator(const std::string& name, const ModelSpec& model,
                               const ConfigPaths& paths);

// Which sequences to generate.
struct SyntheticLayout {
  std::vector<SequenceInfo> sequences;
  int64_t seed = 1;
  int64_t h_trace = 256;     // power of two >= 32
  bool calibration = false;  // draw from the calibration stream (disjoint from evaluation)
};

SyntheticLayout layout_from_workload(const WorkloadSpec& w, bool calibration);

class SyntheticSource : public TraceSource {
 public:
  // Throws moebench::Error when h_trace is not a power of two >= 32.
  SyntheticSource(const ModelSpec& model, const GeneratorParams& params, SyntheticLayout layout);
  ~SyntheticSource() override;

  const TraceInfo& info() const override { return info_; }
  std::unique_ptr<SequenceReader> open(int64_t seq, unsigned fields) const override;
  const GateWeights* gate_weights() const override;
  // The model, the generator's parameters and the layout (sequences, seed,
  // h_trace, stream): the generator reads nothing else.
  std::string content_key() const override { return key_; }

  struct Structure;  // the static "model" (public for the reader)
  const Structure& structure() const { return *structure_; }
  const GeneratorParams& params() const { return params_; }
  const SyntheticLayout& layout() const { return layout_; }

 private:
  GeneratorParams params_;
  SyntheticLayout layout_;
  TraceInfo info_;
  std::string key_;
  std::shared_ptr<const Structure> structure_;  // shared by the sources of one model and preset
  static void build_structure(Structure& s, const ModelSpec& model, const GeneratorParams& params,
                              int64_t H);
  static std::shared_ptr<const Structure> shared_structure(
      const std::string& key, const std::function<std::shared_ptr<const Structure>()>& build);
  mutable std::unique_ptr<GateWeights> gates_;  // materialised on first request
};

}  // namespace moebench
