// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// MoE-Lightning's hierarchical-roofline policy search (hrm.h).
#include "baselines/moe_lightning/hrm.h"

#include <algorithm>
#include <cmath>

namespace moebench {

HrmEstimate hrm_estimate(const ResidencyQuestion& q, const HrmPolicy& p, LayerModel model) {
  const CostModel& c = *q.cost;
  const ModelSpec& m = *q.model;
  HrmEstimate e;
  e.policy = p;
  ResidencySpec r = q.base;
  r.attention = p.attention;
  r.micro_batches = p.micro_batches;
  r.cache_ratio = p.cache_ratio;
  e.gpu_gib = q.gpu_gib ? q.gpu_gib(r) : 0.0;
  e.fits = c.has_gpu() && e.gpu_gib <= q.gpu_capacity_gib;

  const int64_t n_all = std::max<int64_t>(1, q.batch);
  const int64_t groups = std::max<int64_t>(1, std::min(p.micro_batches, n_all));
  const int64_t E = m.routed_experts, k = m.top_k;
  // Mean context a decode step's new token attends to.
  const int64_t ctx = q.prompt_len + q.decode_len / 2;
  const bool cpu_attn = p.attention == "cpu";
  const bool host_kv = p.attention == "gpu-host-kv";
  double gpu = 0, cpu = 0, d2h = 0, act = 0, kv = 0;
  for (int64_t g = 0; g < groups; ++g) {
    // The engine's split: sizes differing by at most one.
    const int64_t n = n_all / groups + (g < n_all % groups ? 1 : 0);
    if (cpu_attn) {
      gpu += c.attention_pre_ns(n) + c.attention_post_ns(n);
      d2h += c.qkv_d2h_ns(n);
      cpu += c.cpu_attention_ns(n, n, ctx);
      act += c.h2d_activations_ns(n);
    } else {
      gpu += c.layer_nonmoe_ns(n, n, ctx);
      if (host_kv) {  // the KV entries in, the new ones out
        kv += c.kv_h2d_ns(n, ctx);
        d2h += c.kv_d2h_ns(n);
      }
    }
    // Expected distinct experts of n tokens' top-k under uniform routing.
    const double active = double(E) * (1.0 - std::pow(1.0 - double(k) / double(E), double(n)));
    const int64_t per = std::max<int64_t>(1, std::llround(double(n * k) / std::max(1.0, active)));
    gpu += active * c.gpu_expert_ns(per) + c.gpu_shared_ns(n);
  }
  const int64_t cached = std::min<int64_t>(E, r.slots(E));
  const double weights = double(E - cached) * c.h2d_expert_ns();
  e.link_ns = weights + act + kv;
  e.d2h_ns = d2h;
  e.gpu_ns = gpu;
  e.cpu_ns = cpu;
  if (model == LayerModel::kFlexGen) {
    e.layer_ns = e.link_ns + std::max(d2h, gpu + cpu);
  } else {
    const double busiest = std::max({gpu, cpu, d2h});
    const double pipeline = busiest + (gpu + cpu + d2h - busiest) / double(groups);
    e.layer_ns = std::max(e.link_ns, pipeline);
  }
  const int64_t dense = std::max<int64_t>(0, m.num_layers - m.moe_layers());
  e.step_ns = double(m.moe_layers()) * e.layer_ns +
              double(dense) * (c.layer_nonmoe_ns(n_all, n_all, ctx) + c.dense_ffn_ns(n_all)) +
              c.lm_head_ns(n_all);
  e.tokens_per_s = e.step_ns > 0 ? double(n_all) / (e.step_ns / 1e9) : 0.0;
  return e;
}

HrmSearch hrm_search(const ResidencyQuestion& q, int64_t max_micro_batches, double cache_ratio_step,
                     LayerModel model, const std::string& host_kv_attention) {
  HrmSearch s;
  if (!q.cost->has_gpu()) return s;
  const int64_t n = std::max<int64_t>(1, q.batch);
  // residency.slots_per_layer fixes the cache share: only the base's ratio.
  const bool fixed_share = q.base.slots_per_layer >= 0;
  const int64_t ratios =
      fixed_share ? 0 : std::max<int64_t>(1, int64_t(std::ceil(1.0 / cache_ratio_step - 1e-9)));
  for (const std::string& a : {host_kv_attention, std::string("gpu")}) {
    for (int64_t mb = 1; mb <= std::min(max_micro_batches, n); mb *= 2) {
      for (int64_t i = 0; i <= ratios; ++i) {
        HrmPolicy p;
        p.attention = a;
        p.micro_batches = mb;
        p.cache_ratio =
            fixed_share ? q.base.cache_ratio : std::min(1.0, double(i) * cache_ratio_step);
        s.candidates.push_back(hrm_estimate(q, p, model));
        const HrmEstimate& e = s.candidates.back();
        if (e.fits && (s.best < 0 || e.step_ns < s.candidates[size_t(s.best)].step_ns))
          s.best = int64_t(s.candidates.size()) - 1;
      }
    }
  }
  return s;
}

}  // namespace moebench
