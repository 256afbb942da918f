// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Predictors: which experts a later layer (or the next token) will use.
// One .cc file per predictor, named like its registry key:
//   gate-reuse      HybriMoE / AdapMoE: layer j's router applied to layer l's gate input
//   residual        DALI: the same after adding the calibration trace's mean residuals
//   linear          SMoE: a per-layer linear layer trained to predict the next token
//   last-iteration  the experts this layer used for the current token (iteration-wise baseline)
//   frequency       the calibration workload's activation counts (a static profile)
//   oracle          the true routing (perfect prediction)
//   random          seeded random scores (DALI Fig. 16a's random prefetching)
//
// A prediction is a score per expert, summed over the step's tokens; for
// the router-based predictors it is the predicted workload (tokens whose
// predicted top-k holds the expert) plus at most 0.5 of tie-break from the
// predicted combine weights, so ranking by score ranks by predicted workload
// first.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/engine/policy.h"
#include "core/policy/component_util.h"
#include "core/trace/routing.h"
#include "core/util/lanes16.h"

namespace moebench {

// Applies one MoE layer's router (from the trace's gate weights) to gate
// inputs: the routing function of the model (softmax top-k, or sigmoid with
// selection bias and grouped top-k), bit-identical to how the trace routed.
class RouterProbe {
 public:
  // top_n > 0: each input's top-n experts instead of the model's top-k (at
  // most the experts its group limit allows).
  void init(const ModelSpec& model, const GateWeights* gates, const std::string& who,
            int64_t top_n = 0);
  bool ready() const { return gates_ != nullptr; }
  int64_t h() const { return gates_->h; }
  int64_t experts() const { return gates_->experts; }
  int64_t top_k() const { return cfg_.top_k; }
  // Routes one gate input `x` (h floats) through layer `layer`'s router.
  void route_one(const float* x, int32_t layer, int32_t* ids, float* weights);
  // Adds the step's predicted workload to scores: each token's routed top-k
  // adds 1 + 0.5 x its share of the token's weights, in token order. input(t)
  // gives token t's gate input; each token's routed experts are read from
  // `memo` when another case of the same workload has routed it
  // (core/engine/token_memo.h) and written there otherwise: the same bits (a
  // token's result depends on its input alone), with the router's matrix
  // read once per four missing tokens. memo may be nullptr.
  template <class Input>
  void add_step(const StepRouting& r, TokenMemo::Table* memo, int32_t layer, Input input,
                std::span<float> scores) {
    const int64_t n = r.tokens();
    tok_ids_.assign(size_t(n), nullptr);
    tok_w_.assign(size_t(n), nullptr);
    xs_.clear();
    miss_.clear();
    for (int64_t t = 0; t < n; ++t) {
      if (!memo || !memo->get(r.run_token(t), &tok_ids_[size_t(t)], &tok_w_[size_t(t)])) {
        miss_.push_back(t);
        xs_.push_back(input(t));
      }
    }
    add_step_routed(r, memo, layer, scores);
  }
  // The memo table for a prediction from layer `from` to `to` of the routing
  // r reads ("what" names the input: the predictor and everything its
  // input depends on besides the token); nullptr without a memo.
  TokenMemo::Table* memo_table(const StepRouting& r, const std::string& what, int32_t from,
                               int32_t to);

 private:
  const GateWeights* gates_ = nullptr;
  RoutingConfig cfg_;
  RoutingScratch scratch_;
  std::vector<float> logits_, probs_;
  std::vector<const float*> xs_;  // the missing tokens' gate inputs
  // add_step's second half: routes the missing tokens, writes them to the
  // memo and adds every token's experts in token order.
  void add_step_routed(const StepRouting& r, TokenMemo::Table* memo, int32_t layer,
                       std::span<float> scores);

  // add_step's per-token results (the memo's, or miss_ids_/miss_w_ for the
  // missing tokens miss_) and the missing tokens.
  std::vector<const int32_t*> tok_ids_;
  std::vector<const float*> tok_w_;
  std::vector<int64_t> miss_;
  std::vector<int32_t> miss_ids_;
  std::vector<float> miss_w_;
  // memo_table's lookups for the memo they came from (its serial; [from * L + to]; 1 = looked up).
  uint64_t tables_of_ = 0;
  std::vector<TokenMemo::Table*> tables_;
  std::vector<uint8_t> looked_up_;
};

// The dense helpers with a fixed summation order (core/util/lanes16.h).
using lanes::dot;
using lanes::gemv;
using lanes::gemv_batch;

// ---------------------------------------------------------------- gate-reuse
class GateReusePredictor : public Predictor {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.predictor";
  };
  using Params = EmptyParams<Tag>;
  explicit GateReusePredictor(const Params&) {}
  Needs needs(const ModelSpec&) const override {
    Needs n;
    n.gate_inputs = true;
    return n;
  }
  void prepare(const ModelSpec& m, const CalibrationData*, const GateWeights* g) override;
  void predict(const Context& ctx, int32_t target, int64_t offset,
               std::span<float> scores) override;
  double gpu_ns(const CostModel& c, int64_t tokens) const override;

 protected:
  // Each token's top (k + extra) experts instead of the router's top-k.
  explicit GateReusePredictor(int64_t extra) : extra_(extra) {}

 private:
  int64_t extra_ = 0;
  RouterProbe probe_;
  int64_t hidden_ = 0;
};

// ---------------------------------------------------------------- cross-layer
// Fate's cross-layer prediction: gate reuse for the next layer only, each
// token's top (k + extra) experts counted (Fate's code takes the top 5 of
// Qwen1.5-MoE's top-4 router).
class CrossLayerPredictor : public GateReusePredictor {
 public:
  struct Params {
    int64_t extra = 1;  // experts per token beyond the model's top-k
    static const cfg::Schema<Params>& schema();
  };
  explicit CrossLayerPredictor(const Params& p) : GateReusePredictor(p.extra) {}
  void predict(const Context& ctx, int32_t target, int64_t offset,
               std::span<float> scores) override;
};

// ---------------------------------------------------------------- residual
// res_l = mean over calibration tokens of (gate_input_{l+1} - gate_input_l);
// layer j is predicted from layer l as gate_j(x_l + res_l + ... + res_{j-1}).
class ResidualPredictor : public Predictor {
 public:
  struct Params {
    int64_t max_tokens = 4096;  // calibration tokens averaged (0 = all)
    static const cfg::Schema<Params>& schema();
  };
  explicit ResidualPredictor(const Params& p) : p_(p) {}
  Needs needs(const ModelSpec&) const override {
    Needs n;
    n.gate_inputs = true;
    n.calibration = true;
    return n;
  }
  void prepare(const ModelSpec& m, const CalibrationData* calib, const GateWeights* g) override;
  void predict(const Context& ctx, int32_t target, int64_t offset,
               std::span<float> scores) override;
  double gpu_ns(const CostModel& c, int64_t tokens) const override;
  const std::vector<float>& residuals() const { return res_; }

 private:
  Params p_;
  RouterProbe probe_;
  int64_t hidden_ = 0;
  std::vector<float> res_;  // [L-1][h]
  std::string memo_what_;   // its memo tables' name: "residual|" + SHA-256 of res_
  std::vector<float> x_;    // the shifted gate inputs of a step's tokens (tokens x h)
};

// Mean residual vectors of a trace (the DALI offline step), [L-1][h].
std::vector<float> mean_residuals(const TraceSource& src, int64_t max_tokens);

// ---------------------------------------------------------------- linear (SMoE)
struct LinearModel {
  int64_t layers = 0, experts = 0, h = 0, top_k = 0;
  std::vector<float> weight;        // [L][E][h]
  std::vector<float> bias;          // [L][E]
  std::vector<double> val_recall;   // [L] validation top-k recall of the kept weights
  std::vector<double> test_recall;  // [L] held-out top-k recall
  std::vector<int64_t> epochs;      // [L] epochs trained (best epoch + patience, or the cap)
  int64_t samples = 0;              // (token, next token) pairs used
  std::string source;               // what it was trained on (JSON text)
};

struct LinearTrainOptions {
  double lr = 1e-4;           // Adam learning rate (SMoE)
  int64_t batch = 32;         // SMoE: 32-64
  int64_t max_samples = 512;  // (t, t+1) pairs per layer ("a few hundred decode samples")
  int64_t max_epochs = 100;
  int64_t patience = 10;  // epochs without a better validation recall before stopping
  int64_t seed = 1;
  int64_t threads =
      0;  // layers trained at once (0 = the machine's threads); changes no bit of the result
  nlohmann::ordered_json to_json() const;  // what the result depends on (not `threads`)
};

// Trains one linear layer per MoE layer: input the gate input of token t at
// layer l, label the multi-hot top-k of token t+1 at layer l, binary cross
// entropy with logits, Adam, an 80/10/10 split of the pairs, early stopping
// on validation recall. Deterministic (fixed summation order, seeded).
LinearModel train_linear(const TraceSource& calib, const LinearTrainOptions& opt, bool verbose);
void save_linear(const LinearModel& m, const std::filesystem::path& path);
LinearModel load_linear(const std::filesystem::path& path);

class LinearPredictor : public Predictor {
 public:
  struct Params {
    std::string file;  // a trained artefact (moebench predictor train); empty = train now
    bool cache =
        true;  // keep trained artefacts (core/util/artefact_cache.h: run_suite's <results>/.cache)
    double lr = 1e-4;
    int64_t batch = 32;
    int64_t max_samples = 512;
    int64_t max_epochs = 100;
    int64_t patience = 10;
    int64_t seed = 1;
    static const cfg::Schema<Params>& schema();
  };
  explicit LinearPredictor(const Params& p) : p_(p) {}
  Needs needs(const ModelSpec&) const override {
    Needs n;
    n.gate_inputs = true;
    n.calibration = p_.file.empty();
    return n;
  }
  void prepare(const ModelSpec& m, const CalibrationData* calib, const GateWeights* g) override;
  void predict(const Context& ctx, int32_t target, int64_t offset,
               std::span<float> scores) override;
  std::vector<double> layer_quality() const override { return model_.val_recall; }
  double gpu_ns(const CostModel& c, int64_t tokens) const override;
  const LinearModel& model() const { return model_; }

 private:
  Params p_;
  LinearModel model_;
  int64_t hidden_ = 0;
  std::vector<float> z_;
};

// ---------------------------------------------------------------- last-iteration
class LastIterationPredictor : public Predictor {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.predictor";
  };
  using Params = EmptyParams<Tag>;
  explicit LastIterationPredictor(const Params&) {}
  void predict(const Context& ctx, int32_t target, int64_t offset,
               std::span<float> scores) override;
  bool scores_later_layers() const override { return false; }
};

// ---------------------------------------------------------------- frequency
class FrequencyPredictor : public Predictor {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.predictor";
  };
  using Params = EmptyParams<Tag>;
  explicit FrequencyPredictor(const Params&) {}
  Needs needs(const ModelSpec&) const override {
    Needs n;
    n.calibration = true;
    return n;
  }
  void prepare(const ModelSpec& m, const CalibrationData* calib, const GateWeights* g) override;
  void predict(const Context& ctx, int32_t target, int64_t offset,
               std::span<float> scores) override;

 private:
  std::vector<float> freq_;  // [L][E], fraction of calibration tokens
  int64_t E_ = 0;
};

// ---------------------------------------------------------------- oracle
class OraclePredictor : public Predictor {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.predictor";
  };
  using Params = EmptyParams<Tag>;
  explicit OraclePredictor(const Params&) {}
  Needs needs(const ModelSpec&) const override {
    Needs n;
    n.future = true;
    return n;
  }
  void predict(const Context& ctx, int32_t target, int64_t offset,
               std::span<float> scores) override;
};

// ---------------------------------------------------------------- random
class RandomPredictor : public Predictor {
 public:
  struct Params {
    int64_t seed = 7;
    static const cfg::Schema<Params>& schema();
  };
  explicit RandomPredictor(const Params& p) : p_(p) {}
  void predict(const Context& ctx, int32_t target, int64_t offset,
               std::span<float> scores) override;

 private:
  Params p_;
};

void register_predictors(Registry& r);

}  // namespace moebench
