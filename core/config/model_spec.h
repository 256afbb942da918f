// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// ModelSpec: the shape of an MoE model, everything a cost model or a trace
// generator needs and nothing about weights' values. Presets live in
// configs/models/<name>.toml, each number next to its source.
//
// Sizes are in elements unless a name says bytes; FLOPs count a multiply-add
// as 2.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config/dtype.h"
#include "core/config/schema.h"

namespace moebench {

enum class RoutingFunction {
  kSoftmaxTopK,          // softmax over all experts, then top-k (Mixtral, Qwen, DS-V2-Lite)
  kSoftmaxGroupLimited,  // softmax, top groups by max score, top-k inside them (DS-V2/V2.5)
  kSigmoidGroupedBias,   // sigmoid + selection bias, groups by top-2 sum (DS-V3 "noaux_tc")
};

enum class AttentionKind { kGqa, kMla };

const char* to_string(RoutingFunction r);
const char* to_string(AttentionKind a);

struct ModelSpec {
  // Identity
  std::string name;               // preset name, e.g. "deepseek-v3"
  std::string family = "custom";  // selects the synthetic-workload preset
  std::string description;
  std::string source;  // where the shape comes from

  // Depth and width
  int64_t num_layers = 0;          // transformer blocks
  int64_t first_dense_layers = 0;  // leading blocks whose FFN is dense, not MoE
  int64_t hidden_size = 0;
  int64_t vocab_size = 0;
  // Tokens one sequence may hold, prompt and output together (the config's
  // max_position_embeddings); 0: not stated (nothing is checked). Only
  // refuses a workload: it never changes a result, so it is not part of a
  // case's id or of the model's hashes.
  int64_t context_length = 0;

  // Routed experts and routing
  int64_t routed_experts = 0;  // per MoE layer
  int64_t top_k = 0;
  RoutingFunction routing = RoutingFunction::kSoftmaxTopK;
  int64_t n_group = 1;     // expert groups (grouped routing only)
  int64_t topk_group = 1;  // groups kept per token (grouped routing only)
  bool norm_topk_prob = false;
  double routed_scaling_factor = 1.0;
  int64_t expert_intermediate = 0;  // routed expert FFN width

  // Shared experts and dense FFN
  int64_t shared_experts = 0;
  int64_t shared_intermediate = 0;   // width of each shared expert
  bool shared_expert_gated = false;  // Qwen2-MoE: sigmoid gate on the shared expert
  int64_t dense_intermediate = 0;    // FFN width of the first_dense_layers

  // Attention (the non-MoE per-layer work)
  AttentionKind attention = AttentionKind::kGqa;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // GQA
  int64_t head_dim = 0;      // GQA
  int64_t q_lora_rank = 0;   // MLA (0 = no query compression)
  int64_t kv_lora_rank = 0;  // MLA
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;

  // Storage formats
  WeightDtype expert_dtype = WeightDtype::kBf16;  // routed and shared experts
  int64_t quant_group_size = 128;                 // elements sharing one scale (int8/int4)
  int64_t quant_scale_bytes = 2;                  // bytes per group scale (fp16)
  WeightDtype dense_dtype = WeightDtype::kBf16;   // attention, gate, dense FFN, lm head
  int64_t kv_cache_elem_bytes = 2;

  // ---- derived quantities ----
  int64_t moe_layers() const { return num_layers - first_dense_layers; }
  // Bytes of one weight matrix of `elems` elements in `dtype` (scales included).
  int64_t matrix_bytes(int64_t elems, WeightDtype dtype) const;
  int64_t expert_params() const { return 3 * hidden_size * expert_intermediate; }
  // One routed expert (gate, up, down) in expert_dtype, scales included.
  int64_t expert_bytes() const;
  // All shared experts of one MoE layer.
  int64_t shared_params() const { return 3 * hidden_size * shared_intermediate * shared_experts; }
  int64_t shared_bytes() const;
  int64_t expert_flops_per_token() const { return 2 * expert_params(); }
  int64_t shared_flops_per_token() const { return 2 * shared_params(); }
  int64_t attention_params() const;  // projections of one layer
  int64_t gate_params() const { return hidden_size * routed_experts; }
  // Projections + router of one layer, per token, plus attention over `context` tokens.
  int64_t attention_flops_per_token(int64_t context) const;
  int64_t kv_bytes_per_token() const;  // one layer's KV cache growth per token
  int64_t dense_ffn_params() const { return 3 * hidden_size * dense_intermediate; }
  // Everything that is not a routed expert (what the GPU keeps resident in
  // every strategy): attention, norms, gates, shared experts, dense FFNs,
  // embeddings and lm head. Shared experts are stored in expert_dtype, the
  // rest in dense_dtype.
  int64_t non_expert_params() const;
  int64_t non_expert_bytes() const;
  int64_t total_params() const {
    return non_expert_params() + moe_layers() * routed_experts * expert_params();
  }
  int64_t total_routed_expert_bytes() const {
    return moe_layers() * routed_experts * expert_bytes();
  }

  // Cross-field checks (top_k <= routed_experts, groups divide experts,
  // attention fields present, ...). `src` is the table the spec was parsed
  // from, used to point at the offending key. Throws ConfigError.
  void validate(const cfg::Value& src, const std::string& prefix) const;

  static const cfg::Schema<ModelSpec>& schema();
  // Without context_length when it is not stated (0).
  nlohmann::ordered_json to_json() const;
  // SHA-256 of the canonical resolved JSON: two specs with equal hashes
  // describe the same shape.
  std::string hash() const;
  // The hash of what decides routing: the spec without how the weights are
  // stored (expert_dtype, dense_dtype, quantisation, KV element size) or
  // described. A trace's model_hash: a trace recorded at bf16 is the same
  // routing on the int4 model.
  std::string routing_hash() const;
};

}  // namespace moebench
