// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "harness/backend/real_cpu_blocks.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/util/cancel.h"
#include "core/util/error.h"
#include "core/util/memory.h"
#include "harness/backend/real_cpu_executor.h"
#include "kernels/cpu/thread_pool.h"

namespace moebench {

namespace {

// Tokens per pass through a block's attention: projections, cache writes
// and attention run chunk by chunk (causal, so a chunk's keys are in the
// cache before its queries attend), which bounds the scratch of a long
// prefill (DeepSeek-V3: 128 heads x 576 floats per token).
constexpr int64_t kChunk = 128;

}  // namespace

struct RealCpuBlocks::Block {
  Linear q, q_a, q_b, kv_a, k, v, o, router;
  std::vector<Linear> uk, uv;    // MLA, per head: [kv_lora x nope] and [v x kv_lora]
  std::vector<uint16_t> kc, vc;  // KV cache rows (MLA: kc only, [c | r] per row)
  int64_t weight_bytes() const {
    int64_t b = q.bytes() + q_a.bytes() + q_b.bytes() + kv_a.bytes() + k.bytes() + v.bytes() +
                o.bytes() + router.bytes();
    for (const auto& l : uk) b += l.bytes();
    for (const auto& l : uv) b += l.bytes();
    return b;
  }
};

BlocksFootprint blocks_footprint(const ModelSpec& m, double budget_gib, int64_t max_sequences,
                                 int64_t max_positions, int64_t max_step_tokens) {
  const bool mla = m.attention == AttentionKind::kMla;
  const int64_t H = m.hidden_size;
  const int64_t kv_row = mla ? m.kv_lora_rank + m.qk_rope_head_dim : m.num_kv_heads * m.head_dim;
  const int64_t rows = std::max<int64_t>(1, max_sequences) * std::max<int64_t>(1, max_positions);
  BlocksFootprint f;
  f.kv_cache = uint64_t(rows * kv_row * 2 * (mla ? 1 : 2));
  f.block_weights =
      uint64_t(m.matrix_bytes(m.attention_params() + m.gate_params(), WeightDtype::kBf16));
  const double budget = budget_gib * double(int64_t(1) << 30);
  f.buffers =
      std::clamp<int64_t>(int64_t(budget / double(f.block_weights + f.kv_cache)), 1, m.num_layers);
  f.lm_head = uint64_t(m.vocab_size * H * 2);
  f.dense_ffn = m.first_dense_layers > 0 ? uint64_t(3 * H * m.dense_intermediate * 2) : 0;
  f.scratch = uint64_t(std::max<int64_t>(1, max_step_tokens) *
                       (4 * H + std::max<int64_t>(m.vocab_size, 1) / 8) * 4);
  f.packing = std::max(f.lm_head, f.dense_ffn);
  return f;
}

RealCpuBlocks::RealCpuBlocks(const ModelSpec& m, double budget_gib, int64_t max_sequences,
                             int64_t max_positions, int64_t max_step_tokens, ThreadPool* pool,
                             uint64_t seed)
    : model_(m),
      pool_(pool),
      isa_(best_dense_isa()),
      max_seqs_(std::max<int64_t>(1, max_sequences)),
      max_pos_(std::max<int64_t>(1, max_positions)),
      max_tokens_(std::max<int64_t>(1, max_step_tokens)) {
  if (m.dense_dtype != WeightDtype::kBf16) {
    throw Error(fmt::format(
        "model.dense_dtype: expected bf16 for the real backend's attention, dense FFN and lm "
        "head, found {} (model '{}')",
        to_string(m.dense_dtype), m.name));
  }
  const bool mla = m.attention == AttentionKind::kMla;
  const int64_t H = m.hidden_size, nh = m.num_heads;
  const int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim,
                lat = m.kv_lora_rank + m.qk_rope_head_dim;
  const int64_t kv_row =
      mla ? lat : m.num_kv_heads * m.head_dim;  // elements per cache row (K; V the same in GQA)
  const int64_t rows = max_seqs_ * max_pos_;
  const BlocksFootprint f = blocks_footprint(m, budget_gib, max_seqs_, max_pos_, max_tokens_);
  const int64_t n = f.buffers;
  check_allocation(
      f.total() + (uint64_t(1) << 30),
      fmt::format(
          "the real backend's attention, dense FFN and lm head (model '{}': {} block buffers of "
          "{:.1f} MiB weights and {:.1f} MiB KV cache for {} sequences x {} positions, lm head "
          "{:.0f} MiB; suite.real_weights_gib = {} bounds the blocks; plus 1 GiB for the rest)",
          m.name, n, double(f.block_weights) / (1 << 20), double(f.kv_cache) / (1 << 20), max_seqs_,
          max_pos_, double(f.lm_head) / (1 << 20), budget_gib));
  uint64_t sd = seed * 1000003;
  for (int64_t i = 0; i < n; ++i) {
    throw_if_cancelled();
    auto b = std::make_unique<Block>();
    if (mla) {
      if (m.q_lora_rank > 0) {
        b->q_a = Linear::random(m.q_lora_rank, H, ++sd, isa_);
        b->q_b = Linear::random(nh * qk, m.q_lora_rank, ++sd, isa_);
      } else {
        b->q = Linear::random(nh * qk, H, ++sd, isa_);
      }
      b->kv_a = Linear::random(lat, H, ++sd, isa_);
      for (int64_t h = 0; h < nh; ++h) {
        b->uk.push_back(Linear::random(m.kv_lora_rank, m.qk_nope_head_dim, ++sd, isa_));
        b->uv.push_back(Linear::random(m.v_head_dim, m.kv_lora_rank, ++sd, isa_));
      }
      b->o = Linear::random(H, nh * m.v_head_dim, ++sd, isa_);
    } else {
      b->q = Linear::random(nh * m.head_dim, H, ++sd, isa_);
      b->k = Linear::random(kv_row, H, ++sd, isa_);
      b->v = Linear::random(kv_row, H, ++sd, isa_);
      b->o = Linear::random(H, nh * m.head_dim, ++sd, isa_);
    }
    if (m.routed_experts > 0) b->router = Linear::random(m.routed_experts, H, ++sd, isa_);
    // Zero-filled now, so that no page of the cache is first touched inside a timed step.
    b->kc.assign(size_t(rows * kv_row), 0);
    if (!mla) b->vc.assign(size_t(rows * kv_row), 0);
    blocks_.push_back(std::move(b));
  }
  lm_head_ = Linear::random(m.vocab_size, H, ++sd, isa_);
  if (m.first_dense_layers > 0) {
    ffn_kernel_ = make_expert_kernel(auto_expert_kernel(WeightDtype::kBf16));
    ExpertWeights e = ExpertWeights::random({H, m.dense_intermediate}, WeightDtype::kBf16, ++sd);
    if (ffn_kernel_->needs_packed()) {
      e.pack();
      e.release_unpacked();
    }
    ffn_ = std::make_unique<ExpertWeights>(std::move(e));
  }
  const int64_t T = max_tokens_, C = std::min(T, kChunk);
  x_.assign(size_t(T * H), 0.01f);
  h_.assign(size_t(T * H), 0.0f);
  y_.assign(size_t(T * H), 0.0f);
  const int64_t qw = mla ? nh * std::max({qk, lat, m.v_head_dim}) : nh * m.head_dim;
  q_.assign(size_t(C * std::max(qw, m.q_lora_rank)), 0.0f);
  kv_.assign(size_t(C * 2 * std::max(kv_row, qw)), 0.0f);
  att_.assign(size_t(C * std::max(nh * std::max({m.kv_lora_rank, m.v_head_dim, m.head_dim}),
                                  m.q_lora_rank)),
              0.0f);
  logits_.assign(size_t(std::min(T, kChunk) * std::max<int64_t>(m.vocab_size, m.routed_experts)),
                 0.0f);
  top_.assign(size_t(T * std::max<int64_t>(1, m.top_k)), 0);
  ones_.assign(size_t(T), 1.0f);
  row0_.assign(size_t(T), 0);
}

RealCpuBlocks::~RealCpuBlocks() = default;

double RealCpuBlocks::gib() const {
  double b = double(lm_head_.bytes()) + (ffn_ ? double(ffn_->weight_bytes()) : 0.0);
  for (const auto& bl : blocks_)
    b += double(bl->weight_bytes()) + 2.0 * double(bl->kc.size() + bl->vc.size());
  return b / double(int64_t(1) << 30);
}

std::string RealCpuBlocks::dense_kernel() const {
  return ffn_kernel_ ? ffn_kernel_->name() : std::string("none");
}

void RealCpuBlocks::attention(int32_t block, const StepTokens& st) {
  const int64_t T = st.size();
  if (T > max_tokens_ || st.sequences > max_seqs_) {
    throw InternalError(fmt::format(
        "RealCpuBlocks::attention: a step of {} tokens in {} sequences, prepared for {} "
        "and {}",
        T, st.sequences, max_tokens_, max_seqs_));
  }
  for (int64_t t = 0; t < T; ++t) {
    if (st.pos[size_t(t)] >= max_pos_) {
      throw InternalError(
          fmt::format("RealCpuBlocks::attention: position {} beyond the {} prepared",
                      st.pos[size_t(t)], max_pos_));
    }
    row0_[size_t(t)] = int64_t(st.slot[size_t(t)]) * max_pos_;
  }
  Block& b = *blocks_[size_t(block) % blocks_.size()];
  const int64_t H = model_.hidden_size;
  std::copy(x_.begin(), x_.begin() + T * H, h_.begin());
  rms_norm(h_.data(), T, H);
  if (model_.attention == AttentionKind::kMla) {
    mla(b, st);
  } else {
    gqa(b, st);
  }
  // The residual, the second norm and, on MoE blocks, the router.
  for (int64_t i = 0; i < T * H; ++i) x_[size_t(i)] = 0.5f * (x_[size_t(i)] + y_[size_t(i)]);
  if (block >= model_.first_dense_layers && model_.routed_experts > 0) {
    std::copy(x_.begin(), x_.begin() + T * H, h_.begin());
    rms_norm(h_.data(), T, H);
    for (int64_t t0 = 0; t0 < T; t0 += kChunk) {
      const int64_t c = std::min(kChunk, T - t0);
      b.router.apply(h_.data() + t0 * H, c, logits_.data(), pool_);
      softmax_top_k(logits_.data(), c, model_.routed_experts, model_.top_k,
                    top_.data() + t0 * model_.top_k);
    }
  }
}

void RealCpuBlocks::gqa(Block& b, const StepTokens& st) {
  const ModelSpec& m = model_;
  const int64_t T = st.size(), H = m.hidden_size, d = m.head_dim, nh = m.num_heads;
  const int64_t kvw = m.num_kv_heads * d;
  const AttentionShape s{nh, m.num_kv_heads, d, d, kvw, kvw, float(1.0 / std::sqrt(double(d)))};
  float* kb = kv_.data();
  float* vb = kv_.data() + std::min(T, kChunk) * kvw;
  for (int64_t t0 = 0; t0 < T; t0 += kChunk) {
    const int64_t c = std::min(kChunk, T - t0);
    const float* h = h_.data() + t0 * H;
    b.q.apply(h, c, q_.data(), pool_);
    b.k.apply(h, c, kb, pool_);
    b.v.apply(h, c, vb, pool_);
    for (int64_t t = 0; t < c; ++t) {
      const int64_t row = row0_[size_t(t0 + t)] + st.pos[size_t(t0 + t)];
      to_bf16_row(kb + t * kvw, kvw, b.kc.data() + row * kvw);
      to_bf16_row(vb + t * kvw, kvw, b.vc.data() + row * kvw);
    }
    moebench::attention(s, q_.data(), c, st.pos.data() + t0, row0_.data() + t0, b.kc.data(),
                        b.vc.data(), att_.data(), pool_, isa_);
    b.o.apply(att_.data(), c, y_.data() + t0 * H, pool_);
  }
}

void RealCpuBlocks::mla(Block& b, const StepTokens& st) {
  const ModelSpec& m = model_;
  const int64_t T = st.size(), H = m.hidden_size, nh = m.num_heads;
  const int64_t nope = m.qk_nope_head_dim, rope = m.qk_rope_head_dim, lora = m.kv_lora_rank,
                vd = m.v_head_dim;
  const int64_t qk = nope + rope, lat = lora + rope;
  const AttentionShape s{nh, 1, lat, lora, lat, lat, float(1.0 / std::sqrt(double(qk)))};
  float* kvb = kv_.data();  // [c x lat]: the new rows
  float* qfull =
      kv_.data() + std::min(T, kChunk) * lat;  // [c x nh x lat]: queries in the latent space
  for (int64_t t0 = 0; t0 < T; t0 += kChunk) {
    const int64_t c = std::min(kChunk, T - t0);
    const float* h = h_.data() + t0 * H;
    if (m.q_lora_rank > 0) {
      b.q_a.apply(h, c, att_.data(), pool_);  // att_ as scratch for the compressed query
      rms_norm(att_.data(), c, m.q_lora_rank);
      b.q_b.apply(att_.data(), c, q_.data(), pool_);
    } else {
      b.q.apply(h, c, q_.data(), pool_);
    }
    b.kv_a.apply(h, c, kvb, pool_);
    for (int64_t t = 0; t < c; ++t) {
      rms_norm(kvb + t * lat, 1, lora);
      const int64_t row = row0_[size_t(t0 + t)] + st.pos[size_t(t0 + t)];
      to_bf16_row(kvb + t * lat, lat, b.kc.data() + row * lat);
    }
    // Each head's query into the latent space (its slice of kv_b), its rope
    // part kept: one task per head, the head's small projection on that thread.
    parallel_ranges(pool_, nh, 1, [&](int64_t h0, int64_t h1) {
      thread_local std::vector<float> in, out;
      in.resize(size_t(c * std::max(nope, lora)));
      out.resize(size_t(c * std::max(lora, vd)));
      for (int64_t hd = h0; hd < h1; ++hd) {
        for (int64_t t = 0; t < c; ++t) {
          std::copy_n(q_.data() + (t * nh + hd) * qk, nope, in.data() + t * nope);
        }
        b.uk[size_t(hd)].apply(in.data(), c, out.data(), nullptr);
        for (int64_t t = 0; t < c; ++t) {
          float* dst = qfull + (t * nh + hd) * lat;
          std::copy_n(out.data() + t * lora, lora, dst);
          std::copy_n(q_.data() + (t * nh + hd) * qk + nope, rope, dst + lora);
        }
      }
    });
    moebench::attention(s, qfull, c, st.pos.data() + t0, row0_.data() + t0, b.kc.data(),
                        b.kc.data(), att_.data(), pool_, isa_);
    // Each head's latent output through its value slice of kv_b, into q_ as [c x nh x v].
    parallel_ranges(pool_, nh, 1, [&](int64_t h0, int64_t h1) {
      thread_local std::vector<float> in, out;
      in.resize(size_t(c * lora));
      out.resize(size_t(c * vd));
      for (int64_t hd = h0; hd < h1; ++hd) {
        for (int64_t t = 0; t < c; ++t)
          std::copy_n(att_.data() + (t * nh + hd) * lora, lora, in.data() + t * lora);
        b.uv[size_t(hd)].apply(in.data(), c, out.data(), nullptr);
        for (int64_t t = 0; t < c; ++t)
          std::copy_n(out.data() + t * vd, vd, q_.data() + (t * nh + hd) * vd);
      }
    });
    b.o.apply(q_.data(), c, y_.data() + t0 * H, pool_);
  }
}

void RealCpuBlocks::dense_ffn(int32_t, int64_t tokens) {
  if (!ffn_ || tokens <= 0) return;
  if (tokens > max_tokens_) {
    throw InternalError(
        fmt::format("RealCpuBlocks::dense_ffn: {} tokens, prepared for {}", tokens, max_tokens_));
  }
  const int64_t H = model_.hidden_size;
  std::copy(x_.begin(), x_.begin() + tokens * H, h_.begin());
  rms_norm(h_.data(), tokens, H);
  std::fill(y_.begin(), y_.begin() + tokens * H, 0.0f);
  ffn_kernel_->run(*ffn_, h_.data(), tokens, ones_.data(), y_.data(), pool_);
  for (int64_t i = 0; i < tokens * H; ++i) x_[size_t(i)] = 0.5f * (x_[size_t(i)] + y_[size_t(i)]);
}

void RealCpuBlocks::lm_head(int64_t tokens) {
  if (tokens <= 0) return;
  const int64_t H = model_.hidden_size, V = model_.vocab_size;
  std::copy(x_.begin(), x_.begin() + tokens * H, h_.begin());
  rms_norm(h_.data(), tokens, H);
  // Chunks of kChunk tokens: the logits of a long prefill would not fit.
  for (int64_t t0 = 0; t0 < tokens; t0 += kChunk) {
    const int64_t c = std::min(kChunk, tokens - t0);
    lm_head_.apply(h_.data() + t0 * H, c, logits_.data(), pool_);
    for (int64_t t = 0; t < c; ++t) {  // greedy sampling
      const float* l = logits_.data() + t * V;
      top_[size_t(t0 + t)] = int32_t(std::max_element(l, l + V) - l);
    }
  }
}

}  // namespace moebench
