// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// assigner = "smoe".
#include <algorithm>

#include "baselines/smoe/components.h"

namespace moebench {

const cfg::Schema<SmoeAssigner::Params>& SmoeAssigner::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.assigner");
    s.choice("prefill", &Params::prefill, {"cost", "all-cpu"},
             "Prefill: the CPU-vs-GPU cost rule with pipelined loads (paper), or every expert on "
             "the CPU (code).")
        .integer("staging_buffers", &Params::staging_buffers,
                 "Ping-pong buffers for prefill loads.", cfg::at_least(1))
        .integer("gpu_max", &Params::gpu_max,
                 "At most this many cached experts per decode layer-step run on the GPU, the rest "
                 "on the CPU (the public script's gpu_compute_max_num; -1: no cap).",
                 cfg::at_least(-1));
    return s;
  }();
  return s;
}

void SmoeAssigner::plan(const Context& ctx, LayerPlan& out) {
  const bool gpu = ctx.cost->has_gpu();
  auto cached = [&](int32_t e) { return gpu && ctx.residency->cached(ctx.layer, e); };
  if (ctx.phase == Phase::kDecode) {
    // gpu_max: the code marks its first gpu_compute_max_num cache slots for
    // the GPU; the harness keeps no slot order, so the cap keeps the cached
    // experts with the most tokens (ties: lower id; ctx.active is by id).
    std::vector<const ActiveExpert*> hits;
    for (const auto& a : ctx.active) {
      if (cached(a.expert))
        hits.push_back(&a);
      else
        out.cpu.push_back(a.expert);
    }
    if (p_.gpu_max >= 0 && int64_t(hits.size()) > p_.gpu_max) {
      std::stable_sort(hits.begin(), hits.end(), [](const ActiveExpert* x, const ActiveExpert* y) {
        return x->tokens > y->tokens;
      });
      for (size_t i = size_t(p_.gpu_max); i < hits.size(); ++i) out.cpu.push_back(hits[i]->expert);
      hits.resize(size_t(p_.gpu_max));
    }
    for (const auto* a : hits) out.gpu.push_back(a->expert);
    out.wait_layer_transfers = true;
    return;
  }
  if (p_.prefill == "all-cpu" || !gpu) {
    for (const auto& a : ctx.active) out.cpu.push_back(a.expert);
    return;
  }
  std::vector<const ActiveExpert*> loaded;
  for (const auto& a : ctx.active) {
    const bool c = cached(a.expert);
    const double t_gpu = ctx.cost->gpu_expert_ns(a.tokens) + (c ? 0.0 : ctx.cost->h2d_expert_ns());
    const double t_cpu = ctx.cost->cpu_expert_ns(a.tokens, false);
    if (t_cpu > t_gpu) {
      if (c)
        out.gpu.push_back(a.expert);
      else
        loaded.push_back(&a);
    } else {
      out.cpu.push_back(a.expert);
    }
  }
  std::stable_sort(loaded.begin(), loaded.end(), [](const ActiveExpert* x, const ActiveExpert* y) {
    return x->tokens > y->tokens;
  });
  for (const auto* a : loaded) {
    out.gpu.push_back(a->expert);
    out.load.push_back(a->expert);
  }
  out.staging_buffers = int32_t(p_.staging_buffers);
}

}  // namespace moebench
