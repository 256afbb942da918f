// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// A strategy's components built from its spec and checked together, what
// they need of the workload, and what a case holds in GPU and host memory
// (core/engine/engine.h).
#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "core/engine/engine.h"
#include "core/engine/run_modes.h"
#include "core/engine/variants/attention_path.h"
#include "core/util/error.h"
#include "core/util/memory.h"
#include "core/util/strings.h"

namespace moebench {

// ---------------------------------------------------------------- strategy

StrategyInstance StrategyInstance::create(const StrategySpec& spec, const Registry& registry) {
  StrategyInstance s;
  s.name = spec.name;
  s.residency = spec.residency;
  s.placement = registry.make<Placement>("placement", spec.placement, "strategy.placement");
  s.assigner = registry.make<Assigner>("assigner", spec.assigner, "strategy.assigner");
  s.cache = registry.make<CachePolicy>("cache", spec.cache, "strategy.cache");
  s.prefetcher = registry.make<Prefetcher>("prefetcher", spec.prefetcher, "strategy.prefetcher");
  s.predictor = registry.make<Predictor>("predictor", spec.predictor, "strategy.predictor");
  s.deferral = registry.make<Deferral>("deferral", spec.deferral, "strategy.deferral");
  if (spec.residency.admission == "one-at-a-time" && spec.residency.pin_active_token) {
    throw Error(
        fmt::format("strategy '{}': strategy.residency.admission = \"one-at-a-time\" lets a load "
                    "evict an expert the same "
                    "token needs later; expected pin_active_token = false, found true (pinned, the "
                    "token's experts are "
                    "judged as at the gate: use admission = \"at-gate\")",
                    spec.name));
  }
  if (spec.residency.writeback &&
      (s.cache->admits_prefetched() || spec.residency.cancel_stale_prefetch)) {
    throw Error(fmt::format(
        "strategy '{}': strategy.residency.writeback = true charges an evicted expert's copy back "
        "to host memory to the copy that replaces it; expected every eviction to come with such a "
        "copy, found {} (an eviction without a copy, or a copy cancelled after its eviction)",
        spec.name,
        s.cache->admits_prefetched()
            ? fmt::format("strategy.cache = \"{}\", which takes used prefetches into its share",
                          spec.cache.kind)
            : std::string("strategy.residency.cancel_stale_prefetch = true")));
  }
  if (spec.residency.one_stream && spec.residency.link_order != "fifo") {
    throw Error(fmt::format(
        "strategy '{}': strategy.residency.one_stream = true runs copies in the order they are "
        "issued, between the GPU work around them; expected link_order = \"fifo\", found \"{}\"",
        spec.name, spec.residency.link_order));
  }
  const bool reduces = spec.residency.reduced_copy_ratio < 1.0;
  if (!reduces && (spec.residency.reduced_demand_loads || s.prefetcher->requests_reduced())) {
    throw Error(fmt::format(
        "strategy '{}': {} asks for reduced-precision copies; expected "
        "strategy.residency.reduced_copy_ratio < 1 (the fraction of an expert's bytes such a "
        "copy moves), found {} (every copy full: the setting would do nothing)",
        spec.name,
        spec.residency.reduced_demand_loads
            ? std::string("strategy.residency.reduced_demand_loads = true")
            : fmt::format("strategy.prefetcher = \"{}\"", spec.prefetcher.kind),
        spec.residency.reduced_copy_ratio));
  }
  if (reduces && !spec.residency.reduced_demand_loads && !s.prefetcher->requests_reduced()) {
    throw Error(fmt::format(
        "strategy '{}': strategy.residency.reduced_copy_ratio = {} sizes reduced-precision "
        "copies; expected reduced_demand_loads = true or a prefetcher that asks for reduced "
        "copies (next-layer's reduced_share > 0), found neither (no copy would be reduced)",
        spec.name, spec.residency.reduced_copy_ratio));
  }
  if (spec.residency.recopy_from_layer >= 0 && spec.residency.micro_batches > 1) {
    throw Error(fmt::format(
        "strategy '{}': strategy.residency.recopy_from_layer = {} copies a layer's computed "
        "experts again when its GPU work is done; expected micro_batches = 1 (one GPU pass per "
        "layer, as Fate's code runs), found {}",
        spec.name, spec.residency.recopy_from_layer, spec.residency.micro_batches));
  }
  if (s.prefetcher->asks_later_layers() && !s.predictor->scores_later_layers()) {
    // Found at run time before ("asked for layer 1 of the current token at
    // layer 0"), after --dry-run and config validate had accepted it.
    throw Error(fmt::format(
        "strategy '{}': strategy.prefetcher = \"{}\" asks for later layers of the token being "
        "routed; expected a predictor that can score them, found strategy.predictor = \"{}\", "
        "which only repeats layers already routed (use it with prefetcher = \"token-wise\", or "
        "choose another predictor)",
        spec.name, spec.prefetcher.kind, spec.predictor.kind));
  }
  if (s.prefetcher->predicts() && spec.predictor.kind == "none") {
    throw Error(
        fmt::format("strategy '{}': strategy.prefetcher = \"{}\" loads the experts "
                    "strategy.predictor scores; expected a "
                    "predictor, found \"none\" (it would prefetch nothing; for no prefetching set "
                    "prefetcher = \"none\")",
                    spec.name, spec.prefetcher.kind));
  }
  return s;
}

Needs StrategyInstance::needs(const ModelSpec& m) const {
  Needs n;
  for (const auto& [family, c] : components()) {
    const Needs x = c->needs(m);
    n.top_p = std::max(n.top_p, x.top_p);
    n.gate_inputs = n.gate_inputs || x.gate_inputs;
    n.calibration = n.calibration || x.calibration;
    n.future = n.future || x.future;
  }
  return n;
}

int64_t prefetch_buffer_slots(const StrategyInstance& st) {
  return st.residency.prefetch_buffer && st.prefetcher
             ? std::max<int64_t>(0, st.prefetcher->max_per_layer())
             : 0;
}

CaseFootprint case_footprint(const ModelSpec& model, const HardwareProfile& hw,
                             const StrategyInstance& st, const RunShape& shape) {
  CaseFootprint f;
  const int64_t L = model.moe_layers(), E = model.routed_experts, k = model.top_k;
  const int64_t cache = std::min<int64_t>(E, st.residency.slots(E));
  const int64_t per_layer = std::min<int64_t>(E, cache + prefetch_buffer_slots(st));
  const int64_t buffer = per_layer - cache;
  f.slots_per_layer = per_layer;
  // The prefetch buffer's entries leave after their layer: at most two
  // layers' worth (the one computing and the next one loading) at a time.
  f.gpu_cache_slots = cache * L + 2 * buffer;
  const int64_t B = std::min<int64_t>(shape.batch_size, shape.sequences);
  const double gib = 1024.0 * 1024.0 * 1024.0;
  f.gpu_weights_gib = double(model.non_expert_bytes()) / gib;
  f.gpu_cache_gib = double(f.gpu_cache_slots) * double(model.expert_bytes()) / gib;
  // Where the KV cache lives is the attention path's (residency.attention).
  const int64_t mb = std::max<int64_t>(1, std::min<int64_t>(st.residency.micro_batches, B));
  f.gpu_kv_gib =
      make_attention_path(st.residency.attention)
          ->gpu_kv_bytes(B, mb, shape.max_tokens, model.num_layers, model.kv_bytes_per_token()) /
      gib;
  f.gpu_runtime_gib = hw.gpu.runtime_reserved_gib;
  f.gpu_total_gib = f.gpu_weights_gib + f.gpu_cache_gib + f.gpu_kv_gib + f.gpu_runtime_gib;

  // Host: the arrays a run holds whole (core/engine/routing_data.h, the
  // per-expert state here and in Residency, the generator's structure).
  const Needs n = st.needs(model);
  const double T = double(shape.total_tokens), LE = double(L) * double(E);
  const double routing = T * double(L) * double(k) * 8.0 * (n.future ? 2.0 : 1.0) +
                         T * double(L) * double(std::min<int64_t>(n.top_p, E)) * 8.0;
  const double experts = LE * 64.0;
  const double generator = shape.synthetic
                               ? LE * 40.0 + double(E) * double(shape.h_trace) * 4.0 +
                                     (n.gate_inputs ? LE * double(shape.h_trace) * 4.0 : 0.0)
                               : 0.0;
  f.host_gib = (routing + experts + generator) / gib;
  f.host_breakdown = fmt::format(
      "routing of {} tokens x {} MoE layers {:.2f} + per-expert state of {} x {} experts {:.2f}{}",
      shape.total_tokens, L, routing / gib, L, E, experts / gib,
      shape.synthetic ? fmt::format(" + synthetic generator {:.2f}{}", generator / gib,
                                    n.gate_inputs ? " (with gate weights)" : "")
                      : std::string());
  return f;
}

void apply_cache_fill(const ModelSpec& model, const HardwareProfile& hw, StrategyInstance& st,
                      const RunShape& shape) {
  if (!st.residency.cache_fill || !hw.has_gpu()) return;
  const int64_t L = model.moe_layers(), E = model.routed_experts;
  st.residency.slots_per_layer = 0;
  const CaseFootprint empty = case_footprint(model, hw, st, shape);  // weights, KV, runtime, buffer
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const double left = (hw.gpu.mem_gib - empty.gpu_total_gib) * gib;
  const double per_layer = left / (double(model.expert_bytes()) * double(std::max<int64_t>(1, L)));
  st.residency.slots_per_layer =
      per_layer <= 0 ? 0 : std::min<int64_t>(E, int64_t(std::floor(per_layer)));
}

void check_footprint(const CaseFootprint& f, const ModelSpec& model, const HardwareProfile& hw,
                     const StrategyInstance& st, bool host) {
  if (!hw.has_gpu()) {
    if (f.gpu_cache_slots > 0) {
      throw Error(fmt::format(
          "strategy '{}': expected no GPU expert cache on hardware '{}' (it has no GPU), "
          "found {} slots per layer",
          st.name, hw.name, f.slots_per_layer));
    }
  } else if (f.gpu_total_gib > hw.gpu.mem_gib) {
    throw Error(
        fmt::format("case does not fit: expected at most {:.1f} GiB of GPU memory ({}), found "
                    "{:.1f} GiB needed: "
                    "non-expert weights {:.1f} ({}) + expert cache {:.1f} ({} slots of {:.1f} MiB, "
                    "{}) + KV cache {:.1f} "
                    "+ runtime {:.1f}; use a smaller cache, fewer sequences per batch or a smaller "
                    "dense_dtype/expert_dtype",
                    hw.gpu.mem_gib, hw.gpu.model, f.gpu_total_gib, f.gpu_weights_gib,
                    to_string(model.dense_dtype), f.gpu_cache_gib, f.gpu_cache_slots,
                    double(model.expert_bytes()) / (1024.0 * 1024.0), to_string(model.expert_dtype),
                    f.gpu_kv_gib, f.gpu_runtime_gib));
  }
  if (!host) return;
  const double avail = double(available_memory_bytes()) / (1024.0 * 1024.0 * 1024.0);
  if (f.host_gib > avail) {
    throw Error(fmt::format(
        "case does not fit in host memory: expected at most {:.2f} GiB (the memory available "
        "now), found about {:.2f} GiB needed by the simulation itself: {} GiB; use fewer or "
        "shorter sequences, or a model with fewer layers or experts",
        avail, f.host_gib, f.host_breakdown));
  }
}

void apply_residency_choice(const ModelSpec& model, const HardwareProfile& hw, StrategyInstance& st,
                            const RunShape& shape, int64_t prompt_len, int64_t decode_len) {
  const CostModel cost = planning_cost_model(model, hw);
  ResidencyQuestion q;
  q.model = &model;
  q.cost = &cost;
  q.base = st.residency;
  q.batch = std::max<int64_t>(1, std::min(shape.batch_size, shape.sequences));
  q.prompt_len = prompt_len;
  q.decode_len = decode_len;
  q.gpu_capacity_gib = hw.has_gpu() ? hw.gpu.mem_gib : 0.0;
  // The footprint of other settings: the instance's own, swapped in and back.
  q.gpu_gib = [&](const ResidencySpec& r) {
    const ResidencySpec keep = st.residency;
    st.residency = r;
    const double gib = case_footprint(model, hw, st, shape).gpu_total_gib;
    st.residency = keep;
    return gib;
  };
  std::optional<ResidencyChoice> chosen;
  std::string who;
  for (const auto& [family, comp] : st.components()) {
    if (!comp) continue;
    std::optional<ResidencyChoice> c = comp->choose_residency(q);
    if (!c) continue;
    const std::string me = fmt::format("strategy.{} = \"{}\"", family, comp->name());
    if (chosen) {
      throw Error(
          fmt::format("strategy '{}': expected at most one component choosing the "
                      "residency settings, found {} and {}",
                      st.name, who, me));
    }
    chosen = std::move(c);
    who = me;
  }
  if (!chosen) return;
  const ResidencySpec& r = chosen->residency;
  auto refuse = [&](const std::string& expected, const std::string& found) {
    throw Error(
        fmt::format("strategy '{}': {} chose residency settings the core refuses: "
                    "expected {}, found {}",
                    st.name, who, expected, found));
  };
  nlohmann::ordered_json a = ResidencySpec::schema().to_json(q.base);
  nlohmann::ordered_json b = ResidencySpec::schema().to_json(r);
  for (const char* k : {"attention", "micro_batches", "cache_ratio"}) {
    a.erase(k);
    b.erase(k);
  }
  if (a != b) refuse("only attention, micro_batches and cache_ratio changed", b.dump());
  if (const auto names = attention_path_names();
      std::find(names.begin(), names.end(), r.attention) == names.end())
    refuse("attention one of " + join(names, ", "), fmt::format("\"{}\"", r.attention));
  if (r.micro_batches < 1 || r.micro_batches > q.batch)
    refuse(fmt::format("micro_batches in [1, {}] (the batch)", q.batch),
           std::to_string(r.micro_batches));
  if (!(r.cache_ratio >= 0.0 && r.cache_ratio <= 1.0))
    refuse("cache_ratio in [0, 1]", fmt::format("{}", r.cache_ratio));
  if (r.attention != "gpu" && !hw.has_gpu())
    refuse("attention \"gpu\" on hardware without a GPU", fmt::format("\"{}\"", r.attention));
  const double need = q.gpu_gib(r);
  if (hw.has_gpu() && need > hw.gpu.mem_gib)
    refuse(fmt::format("at most {:.1f} GiB of GPU memory", hw.gpu.mem_gib),
           fmt::format("{:.1f} GiB needed", need));
  st.residency = r;
  st.residency_chosen_by = who;
  st.residency_estimate_ns = chosen->estimate_ns_per_step;
  st.residency_why = chosen->why;
}

RunModes run_modes(const StrategyInstance& st, const HardwareProfile& hw, bool real_backend,
                   const AttentionPath& attention) {
  RunModes m;
  m.attention_ahead = st.residency.attention_order != "serial";
  m.real_backend = real_backend;
  // Where attention runs (core/engine/variants/attention_path.h).
  const bool kv_on_host = attention.kv_on_host();
  m.pipelined = kv_on_host || st.residency.micro_batches > 1;
  if (m.pipelined && m.real_backend) {
    throw Error(fmt::format(
        "strategy '{}': residency.attention = \"{}\", micro_batches = {}: expected the "
        "simulated backend (a host-memory KV cache and micro-batches are simulated only), found "
        "the real backend",
        st.name, st.residency.attention, st.residency.micro_batches));
  }
  if (kv_on_host && !hw.has_gpu()) {
    throw Error(fmt::format(
        "strategy '{}': residency.attention = \"{}\" keeps the KV cache in host memory for "
        "a GPU; expected hardware with a GPU, found '{}' with none (without a GPU every layer "
        "already runs on the CPU)",
        st.name, st.residency.attention, hw.name));
  }
  return m;
}

}  // namespace moebench
