// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The GPU layer's shapes from the model, and its attention's CPU reference
// (kernels/cuda/gpu_layer.h). Built with and without CUDA.
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "core/util/error.h"
#include "kernels/cuda/gpu_layer_shape.h"

#include "core/config/model_spec.h"

namespace moebench::gpu {

namespace {

void need(bool ok, const ModelSpec& m, const char* field, int64_t found, const char* expected) {
  if (!ok) {
    throw Error(fmt::format("GPU layer of model '{}': model.{}: expected {}, found {}", m.name,
                            field, expected, found));
  }
}

}  // namespace

LayerShape layer_shape(const ModelSpec& m) {
  LayerShape s;
  need(m.hidden_size > 0, m, "hidden_size", m.hidden_size, "> 0");
  need(m.num_heads > 0, m, "num_heads", m.num_heads, "> 0");
  s.hidden = m.hidden_size;
  s.q_heads = m.num_heads;
  if (m.attention == AttentionKind::kGqa) {
    need(m.head_dim > 0, m, "head_dim", m.head_dim, "> 0");
    need(m.num_kv_heads > 0 && m.num_heads % m.num_kv_heads == 0, m, "num_kv_heads", m.num_kv_heads,
         "a divisor of num_heads");
    s.kv_heads = m.num_kv_heads;
    s.score_dim = s.value_dim = m.head_dim;
    s.kv_entry_elems = 2 * s.kv_heads * m.head_dim;
    s.v_offset = s.kv_heads * m.head_dim;
    s.out_proj_in = m.num_heads * m.head_dim;
  } else {
    // Absorbed MLA: every head's query against one latent per token.
    need(m.kv_lora_rank > 0, m, "kv_lora_rank", m.kv_lora_rank, "> 0");
    need(m.v_head_dim > 0, m, "v_head_dim", m.v_head_dim, "> 0");
    s.kv_heads = 1;
    s.score_dim = m.kv_lora_rank + m.qk_rope_head_dim;
    s.value_dim = m.kv_lora_rank;
    s.kv_entry_elems = s.score_dim;
    s.v_offset = 0;
    s.out_proj_in = m.num_heads * m.v_head_dim;
    // The output projection reads each head's first v_head_dim values.
    need(m.v_head_dim <= m.kv_lora_rank, m, "v_head_dim", m.v_head_dim, "<= kv_lora_rank");
  }
  // The input projection holds the rest of the attention's parameters.
  const int64_t in_params = m.attention_params() - s.out_proj_in * m.hidden_size;
  s.in_proj = std::max<int64_t>(1, (in_params + m.hidden_size - 1) / m.hidden_size);
  s.experts = m.routed_experts;
  s.top_k = std::min(m.top_k, m.routed_experts);
  s.shared_inter = m.shared_experts * m.shared_intermediate;
  s.dense_inter = m.first_dense_layers > 0 ? m.dense_intermediate : 0;
  s.vocab = m.vocab_size;
  return s;
}

void attention_reference(const LayerShape& s, const float* q, int64_t head, const float* entries,
                         int64_t context, float* out) {
  const int64_t g = head / (s.q_heads / s.kv_heads);
  const float* k0 = entries + g * s.score_dim;
  const float* v0 = entries + s.v_offset + g * s.value_dim;
  const double scale = 1.0 / std::sqrt(double(s.score_dim));
  std::vector<double> p(static_cast<size_t>(context));
  double most = -INFINITY;
  for (int64_t j = 0; j < context; ++j) {
    double a = 0;
    for (int64_t d = 0; d < s.score_dim; ++d) a += double(q[d]) * k0[j * s.kv_entry_elems + d];
    p[size_t(j)] = a * scale;
    most = std::max(most, p[size_t(j)]);
  }
  double sum = 0;
  for (double& x : p) sum += (x = std::exp(x - most));
  for (int64_t d = 0; d < s.value_dim; ++d) {
    double a = 0;
    for (int64_t j = 0; j < context; ++j) a += p[size_t(j)] * v0[j * s.kv_entry_elems + d];
    out[d] = float(a / sum);
  }
}

}  // namespace moebench::gpu
