// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/config/model_spec.h"

#include "core/config/validate.h"
#include "core/util/json_text.h"
#include "core/util/sha256.h"

namespace moebench {

const char* to_string(RoutingFunction r) {
  switch (r) {
    case RoutingFunction::kSoftmaxTopK:
      return "softmax-topk";
    case RoutingFunction::kSoftmaxGroupLimited:
      return "softmax-group-limited";
    case RoutingFunction::kSigmoidGroupedBias:
      return "sigmoid-grouped-bias";
  }
  return "?";
}

const char* to_string(WeightDtype d) {
  switch (d) {
    case WeightDtype::kBf16:
      return "bf16";
    case WeightDtype::kFp16:
      return "fp16";
    case WeightDtype::kInt8:
      return "int8";
    case WeightDtype::kInt4:
      return "int4";
  }
  return "?";
}

const char* to_string(AttentionKind a) {
  return a == AttentionKind::kGqa ? "gqa" : "mla";
}

int64_t ModelSpec::matrix_bytes(int64_t elems, WeightDtype dtype) const {
  const int64_t groups = (elems + quant_group_size - 1) / quant_group_size;
  switch (dtype) {
    case WeightDtype::kBf16:
    case WeightDtype::kFp16:
      return 2 * elems;
    case WeightDtype::kInt8:
      return elems + groups * quant_scale_bytes;
    case WeightDtype::kInt4:
      return (elems + 1) / 2 + groups * quant_scale_bytes;
  }
  return 0;
}

int64_t ModelSpec::expert_bytes() const {
  return 3 * matrix_bytes(hidden_size * expert_intermediate, expert_dtype);
}

int64_t ModelSpec::shared_bytes() const {
  return shared_experts * 3 * matrix_bytes(hidden_size * shared_intermediate, expert_dtype);
}

int64_t ModelSpec::attention_params() const {
  const int64_t h = hidden_size;
  if (attention == AttentionKind::kGqa) {
    return h * num_heads * head_dim           // q
           + 2 * h * num_kv_heads * head_dim  // k, v
           + num_heads * head_dim * h;        // o
  }
  const int64_t qk = qk_nope_head_dim + qk_rope_head_dim;
  const int64_t q =
      q_lora_rank > 0 ? h * q_lora_rank + q_lora_rank * num_heads * qk : h * num_heads * qk;
  const int64_t kv_a = h * (kv_lora_rank + qk_rope_head_dim);
  const int64_t kv_b = kv_lora_rank * num_heads * (qk_nope_head_dim + v_head_dim);
  const int64_t o = num_heads * v_head_dim * h;
  return q + kv_a + kv_b + o;
}

int64_t ModelSpec::attention_flops_per_token(int64_t context) const {
  int64_t score_dim, value_dim;
  if (attention == AttentionKind::kGqa) {
    score_dim = num_heads * head_dim;
    value_dim = num_heads * head_dim;
  } else {
    score_dim = num_heads * (qk_nope_head_dim + qk_rope_head_dim);
    value_dim = num_heads * v_head_dim;
  }
  return 2 * (attention_params() + gate_params()) + 2 * context * (score_dim + value_dim);
}

int64_t ModelSpec::kv_bytes_per_token() const {
  if (attention == AttentionKind::kGqa) return 2 * num_kv_heads * head_dim * kv_cache_elem_bytes;
  return (kv_lora_rank + qk_rope_head_dim) * kv_cache_elem_bytes;
}

int64_t ModelSpec::non_expert_params() const {
  const int64_t norms = 2 * hidden_size;
  return num_layers * (attention_params() + norms) +
         moe_layers() * (gate_params() + shared_params()) +
         first_dense_layers * dense_ffn_params() + 2 * vocab_size * hidden_size + hidden_size;
}

int64_t ModelSpec::non_expert_bytes() const {
  const int64_t dense = non_expert_params() - moe_layers() * shared_params();
  return matrix_bytes(dense, dense_dtype) + moe_layers() * shared_bytes();
}

const cfg::Schema<ModelSpec>& ModelSpec::schema() {
  using S = ModelSpec;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("model");
    s.reserved("preset");
    s.string("name", &S::name, "Preset name; written into every result row.")
        .choice("family", &S::family,
                {"mixtral", "deepseek-v2", "deepseek-v3", "qwen2-moe", "qwen3-moe", "custom"},
                "Model family; selects the synthetic-workload preset.")
        .string("description", &S::description, "Free text.")
        .string("source", &S::source, "Where the numbers come from (config URL, paper table).")
        .integer("num_layers", &S::num_layers, "Transformer blocks.", between(1, 1024))
        .integer("first_dense_layers", &S::first_dense_layers,
                 "Leading blocks with a dense FFN instead of an MoE layer.", between(0, 1023))
        .integer(
            "hidden_size", &S::hidden_size,
            "Hidden (model) dimension; at least 16 (the smallest model here, tiny-*, has 128).",
            between(16, 1 << 20), "elements")
        .integer("vocab_size", &S::vocab_size,
                 "Vocabulary size (embedding and lm head); at least 2.", between(2, 1 << 24),
                 "tokens")
        .integer("context_length", &S::context_length,
                 "Tokens one sequence may hold, prompt and output together (the config's "
                 "max_position_embeddings); a workload with a longer sequence is refused. 0: not "
                 "stated (not checked).",
                 between(0, int64_t(1) << 40), "tokens")
        .integer("routed_experts", &S::routed_experts, "Routed experts per MoE layer.",
                 between(1, 65536))
        .integer("top_k", &S::top_k, "Routed experts activated per token.", between(1, 64))
        .enumeration<RoutingFunction>(
            "routing", &S::routing,
            {{"softmax-topk", RoutingFunction::kSoftmaxTopK},
             {"softmax-group-limited", RoutingFunction::kSoftmaxGroupLimited},
             {"sigmoid-grouped-bias", RoutingFunction::kSigmoidGroupedBias}},
            "Routing function.")
        .integer("n_group", &S::n_group, "Expert groups (grouped routing).", between(1, 1024))
        .integer("topk_group", &S::topk_group, "Groups kept per token (grouped routing).",
                 between(1, 1024))
        .boolean("norm_topk_prob", &S::norm_topk_prob, "Renormalise the top-k weights to sum to 1.")
        .number("routed_scaling_factor", &S::routed_scaling_factor,
                "Scale applied to routed expert outputs.", positive())
        .integer("expert_intermediate", &S::expert_intermediate, "Routed expert FFN width.",
                 between(1, 1 << 20), "elements")
        .integer("shared_experts", &S::shared_experts, "Shared experts per MoE layer.",
                 between(0, 64))
        .integer("shared_intermediate", &S::shared_intermediate, "FFN width of each shared expert.",
                 between(0, 1 << 20), "elements")
        .boolean("shared_expert_gated", &S::shared_expert_gated,
                 "Shared expert output passes a sigmoid gate (Qwen2-MoE).")
        .integer("dense_intermediate", &S::dense_intermediate,
                 "FFN width of the leading dense layers.", between(0, 1 << 20), "elements")
        .enumeration<AttentionKind>("attention", &S::attention,
                                    {{"gqa", AttentionKind::kGqa}, {"mla", AttentionKind::kMla}},
                                    "Attention type: grouped-query or multi-head latent.")
        .integer("num_heads", &S::num_heads, "Attention (query) heads.", between(1, 4096))
        .integer("num_kv_heads", &S::num_kv_heads, "Key/value heads (GQA).", between(0, 4096))
        .integer("head_dim", &S::head_dim, "Head dimension (GQA).", between(0, 4096), "elements")
        .integer("q_lora_rank", &S::q_lora_rank, "MLA query compression rank (0 = none).",
                 between(0, 1 << 16), "elements")
        .integer("kv_lora_rank", &S::kv_lora_rank, "MLA key/value compression rank.",
                 between(0, 1 << 16), "elements")
        .integer("qk_nope_head_dim", &S::qk_nope_head_dim, "MLA non-rotary q/k head dimension.",
                 between(0, 4096), "elements")
        .integer("qk_rope_head_dim", &S::qk_rope_head_dim, "MLA rotary q/k head dimension.",
                 between(0, 4096), "elements")
        .integer("v_head_dim", &S::v_head_dim, "MLA value head dimension.", between(0, 4096),
                 "elements")
        .enumeration<WeightDtype>("expert_dtype", &S::expert_dtype,
                                  {{"bf16", WeightDtype::kBf16},
                                   {"fp16", WeightDtype::kFp16},
                                   {"int8", WeightDtype::kInt8},
                                   {"int4", WeightDtype::kInt4}},
                                  "Storage format of expert weights (same on CPU and GPU).")
        .integer("quant_group_size", &S::quant_group_size,
                 "Elements sharing one scale in int8/int4 formats.", between(1, 1 << 20),
                 "elements")
        .integer("quant_scale_bytes", &S::quant_scale_bytes, "Bytes per group scale.",
                 between(0, 16), "bytes")
        .enumeration<WeightDtype>(
            "dense_dtype", &S::dense_dtype,
            {{"bf16", WeightDtype::kBf16},
             {"fp16", WeightDtype::kFp16},
             {"int8", WeightDtype::kInt8},
             {"int4", WeightDtype::kInt4}},
            "Storage format of non-expert weights (attention, gate, lm head).")
        .integer("kv_cache_elem_bytes", &S::kv_cache_elem_bytes, "Bytes per KV-cache element.",
                 between(1, 8), "bytes");
    return s;
  }();
  return s;
}

void ModelSpec::validate(const cfg::Value& src, const std::string& prefix) const {
  using cfg::require_key;
  require_key(src, prefix, "num_layers", num_layers > 0, "an integer >= 1", "no value");
  require_key(src, prefix, "hidden_size", hidden_size > 0, "an integer in [16, 1048576]",
              "no value");
  require_key(src, prefix, "vocab_size", vocab_size > 0, "an integer in [2, 16777216]", "no value");
  require_key(src, prefix, "routed_experts", routed_experts > 0, "an integer >= 1", "no value");
  require_key(src, prefix, "expert_intermediate", expert_intermediate > 0, "an integer >= 1",
              "no value");
  require_key(src, prefix, "first_dense_layers", first_dense_layers < num_layers,
              fmt::format("an integer < num_layers ({})", num_layers),
              std::to_string(first_dense_layers));
  require_key(src, prefix, "top_k", top_k >= 1 && top_k <= routed_experts,
              fmt::format("an integer in [1, routed_experts = {}]", routed_experts),
              std::to_string(top_k));
  if (routing != RoutingFunction::kSoftmaxTopK) {
    require_key(src, prefix, "n_group", routed_experts % n_group == 0,
                fmt::format("a divisor of routed_experts ({})", routed_experts),
                std::to_string(n_group));
    require_key(src, prefix, "topk_group", topk_group <= n_group,
                fmt::format("an integer in [1, n_group = {}]", n_group),
                std::to_string(topk_group));
    const int64_t reachable = topk_group * (routed_experts / n_group);
    require_key(src, prefix, "top_k", top_k <= reachable,
                fmt::format("at most topk_group * routed_experts / n_group = {}", reachable),
                std::to_string(top_k));
  }
  if (shared_experts > 0) {
    require_key(src, prefix, "shared_intermediate", shared_intermediate > 0,
                "an integer >= 1 when shared_experts > 0", std::to_string(shared_intermediate));
  }
  if (first_dense_layers > 0) {
    require_key(src, prefix, "dense_intermediate", dense_intermediate > 0,
                "an integer >= 1 when first_dense_layers > 0", std::to_string(dense_intermediate));
  }
  if (attention == AttentionKind::kGqa) {
    require_key(src, prefix, "num_kv_heads", num_kv_heads >= 1 && num_heads % num_kv_heads == 0,
                fmt::format("a divisor of num_heads ({}) for GQA", num_heads),
                std::to_string(num_kv_heads));
    require_key(src, prefix, "head_dim", head_dim >= 1, "an integer >= 1 for GQA",
                std::to_string(head_dim));
  } else {
    require_key(src, prefix, "kv_lora_rank", kv_lora_rank >= 1, "an integer >= 1 for MLA",
                std::to_string(kv_lora_rank));
    require_key(src, prefix, "qk_nope_head_dim", qk_nope_head_dim >= 1, "an integer >= 1 for MLA",
                std::to_string(qk_nope_head_dim));
    require_key(src, prefix, "v_head_dim", v_head_dim >= 1, "an integer >= 1 for MLA",
                std::to_string(v_head_dim));
  }
}

nlohmann::ordered_json ModelSpec::to_json() const {
  nlohmann::ordered_json j = schema().to_json(*this);
  if (context_length == 0) j.erase("context_length");
  return j;
}

// The hashes leave out context_length: a limit that refuses a workload, never
// a different shape (traces and synthetic seeds keep their identity).
std::string ModelSpec::hash() const {
  nlohmann::ordered_json j = to_json();
  j.erase("context_length");
  return sha256_hex(json_text(j));
}

std::string ModelSpec::routing_hash() const {
  nlohmann::ordered_json j = to_json();
  for (const char* storage :
       {"description", "source", "context_length", "expert_dtype", "dense_dtype",
        "quant_group_size", "quant_scale_bytes", "kv_cache_elem_bytes"})
    j.erase(storage);
  return sha256_hex(json_text(j));
}

}  // namespace moebench
