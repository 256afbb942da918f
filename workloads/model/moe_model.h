// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// A small decoder-only MoE language model run token by token on the CPU
//: the models workloads/tiny_moe/train.py trains, loaded from
// their safetensors file, so that routing traces can be recorded from real
// learned routers and the accuracy effects of strategies that change the
// computation (Expert Deferral, expert skipping) can be measured.
//
// Architecture (the Python reference, workloads/tiny_moe/tiny_moe.py, is
// the contract; docs/TINY_MODELS.md lists the tensors): byte vocabulary,
// per block x += attn(rmsnorm(x)), x += moe(rmsnorm(x)); multi-head causal
// attention with Llama-style rotary embeddings and a KV cache; the router's
// softmax over all experts picks the top-k (renormalised over the k when
// norm_topk_prob); SwiGLU experts run by a CPU expert kernel of
// kernels/cpu (bf16 weights, as stored); shared experts beside the routed
// ones; final RMSNorm and lm head. Everything but the experts is fp32
// loops over the bf16 weights widened to fp32.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/config/model_spec.h"
#include "core/trace/trace.h"
#include "kernels/cpu/expert_ffn.h"

namespace moebench {

struct TinyModelConfig {
  std::string family;  // "mixtral" or "deepseek" (train.py --family)
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, head_dim = 0;
  int64_t experts = 0, top_k = 0, inter = 0, shared = 0, shared_inter = 0;
  bool norm_topk_prob = false;
  double rope_theta = 10000.0, rms_eps = 1e-5;
};

// What a forward pass changes, for the accuracy experiments. Both act on
// the rank order of a token's k experts (highest score first).
struct ForwardOptions {
  // Expert Deferral (KTransformers section 4.2): the `defer` lowest-ranked
  // experts of layer l are computed from layer l's input as usual, but
  // their weighted output joins the residual stream after layer l + 1's
  // MoE block instead of after layer l's, so layer l + 1 runs without it
  // (the last layer defers nothing: its output is needed now).
  int defer = 0;
  // Expert skipping: the `skip` lowest-ranked experts are dropped.
  int skip = 0;
  // The order the k - skip experts run in, as ranks (empty: rank order):
  // what a placement, caching or scheduling strategy changes. Outputs are
  // summed in rank order whatever it is, so it never changes the result.
  std::vector<int> run_order;
};

class MoeModel {
 public:
  // `path`: a model.safetensors or a folder holding one. `kernel`: an
  // expert kernel name (kernels/cpu/expert_ffn.h; "auto" = the packed
  // AVX-512 one where available). Throws moebench::Error naming the file
  // and the tensor or key that is missing or has the wrong shape.
  static std::unique_ptr<MoeModel> load(const std::filesystem::path& path,
                                        const std::string& kernel = "reference");
  ~MoeModel();

  const TinyModelConfig& config() const { return cfg_; }
  const std::string& path() const { return path_; }
  const std::string& kernel_name() const { return kernel_name_; }
  // The ModelSpec the model declares (name "tiny-<family>").
  ModelSpec spec() const;

  // Starts a new sequence (clears the KV cache and any deferred outputs).
  void reset();
  // A sequence's state between tokens (position and KV cache): saved after
  // a prompt, restored to run several decodes from the same prefill.
  struct State {
    int64_t pos = 0;
    std::vector<std::vector<float>> kcache, vcache;  // per layer, [pos][hidden]
  };
  State save() const;
  void restore(const State& s);
  int64_t position() const { return pos_; }
  // Feeds the next token; returns its logits [vocab]. When `rec` is given,
  // fills its ids / weights ([L][k], rank order), probs ([L][E]) and
  // gate_input ([L][hidden]: the router's input) from this token.
  const std::vector<float>& step(int token, const ForwardOptions& opt = {},
                                 TokenRecord* rec = nullptr);

  // The routers as trace gate weights (logits = W h, no bias).
  GateWeights gate_weights() const;

 private:
  MoeModel() = default;
  struct Layer;
  TinyModelConfig cfg_;
  std::string path_, kernel_name_;
  std::vector<float> embed_, norm_, head_;  // [V][H], [H], [V][H]
  std::vector<Layer> layers_;
  std::unique_ptr<ExpertKernel> kernel_;
  int64_t pos_ = 0;
  // Scratch and state.
  std::vector<float> x_, h_, q_, k_, v_, att_, y_, moe_, logits_, pending_, next_pending_,
      expert_out_, probs_;
  std::vector<int> order_;  // experts by router probability, highest first
};

}  // namespace moebench
