// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// prefetcher = "paged-weights": MoE-Lightning's paged weights (the next
// layer's experts copied while this layer computes). docs/STRATEGIES.md,
// "MoE-Lightning".
#include "baselines/moe_lightning/components.h"

#include <fmt/format.h>

#include "baselines/moe_lightning/hrm.h"

namespace moebench {

const cfg::Schema<PagedWeightsPrefetcher::Params>& PagedWeightsPrefetcher::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.prefetcher");
    s.boolean("decode_only", &Params::decode_only,
              "Page weights in decode steps only (prefill steps load on demand).")
        .choice("policy", &Params::policy, {"fixed", "hrm", "flexgen"},
                "fixed: the strategy's residency settings run. hrm: before the run, "
                "MoE-Lightning's policy search (a hierarchical roofline model of the decode "
                "step, baselines/moe_lightning/hrm.h) chooses residency.attention, "
                "micro_batches and cache_ratio among the candidates that fit in GPU memory; "
                "the rows record the choice (run_attention, run_micro_batches, "
                "run_cache_ratio) and its estimate. flexgen: the same candidates, each "
                "layer's time by FlexGen's cost model instead (the host-to-device copies plus "
                "the longer of the device-to-host copies and the GPU's and CPU's work "
                "together: FlexGen's own policy search).")
        .integer("max_micro_batches", &Params::max_micro_batches,
                 "policy = \"hrm\" or \"flexgen\": the most micro-batches a candidate has (1, "
                 "2, 4, ... up to this and the batch).",
                 cfg::at_least(1), "micro-batches")
        .number("cache_ratio_step", &Params::cache_ratio_step,
                "policy = \"hrm\" or \"flexgen\": the candidates' cache ratios are 0, this, "
                "twice this, ... up to 1.",
                cfg::open_closed_unit())
        .choice("host_kv_attention", &Params::host_kv_attention, {"cpu", "gpu-host-kv"},
                "policy = \"hrm\" or \"flexgen\": the candidates with the KV cache in host "
                "memory compute the attention on the CPU (\"cpu\": MoE-Lightning's A_g = 0, "
                "FlexGen's CPU delegation) or on the GPU after copying the layer's entries in "
                "(\"gpu-host-kv\": FlexGen without delegation); the other candidates keep the "
                "KV cache on the GPU.");
    return s;
  }();
  return s;
}

void PagedWeightsPrefetcher::after_gate(const Context& ctx, std::vector<PrefetchRequest>& out) {
  if (!ctx.cost->has_gpu()) return;
  if (p_.decode_only && ctx.phase != Phase::kDecode) return;
  // The last layer pages the first layer of the next step.
  const bool wrap = ctx.layer + 1 >= ctx.moe_layers;
  const int32_t target = wrap ? 0 : ctx.layer + 1;
  for (int32_t e = 0; e < ctx.experts; ++e) {
    if (!ctx.residency->cached(target, e)) out.push_back({target, e, wrap ? 1 : 0});
  }
}

std::optional<ResidencyChoice> PagedWeightsPrefetcher::choose_residency(
    const ResidencyQuestion& q) const {
  if (p_.policy == "fixed") return std::nullopt;
  const bool flexgen = p_.policy == "flexgen";
  const HrmSearch s =
      hrm_search(q, p_.max_micro_batches, p_.cache_ratio_step,
                 flexgen ? LayerModel::kFlexGen : LayerModel::kRoofline, p_.host_kv_attention);
  // None fits (or no GPU): the strategy's own settings stand, and the core's
  // memory check reports them.
  if (s.best < 0) return std::nullopt;
  const HrmEstimate& e = s.candidates[size_t(s.best)];
  ResidencyChoice c;
  c.residency = q.base;
  c.residency.attention = e.policy.attention;
  c.residency.micro_batches = e.policy.micro_batches;
  c.residency.cache_ratio = e.policy.cache_ratio;
  c.estimate_ns_per_step = e.step_ns;
  c.why = fmt::format(
      "{} over {} candidates: attention {}, {} micro-batches, cache ratio "
      "{:g}; per MoE layer link {:.3f} ms, GPU {:.3f} ms, CPU {:.3f} ms, D2H {:.3f} ms; {:.1f} "
      "GiB of GPU memory",
      flexgen ? "FlexGen's cost model" : "hierarchical roofline", s.candidates.size(),
      e.policy.attention, e.policy.micro_batches, e.policy.cache_ratio, e.link_ns / 1e6,
      e.gpu_ns / 1e6, e.cpu_ns / 1e6, e.d2h_ns / 1e6, e.gpu_gib);
  return c;
}

}  // namespace moebench
