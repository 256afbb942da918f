// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/config/strategy_spec.h"

#include <cmath>
#include <utility>

#include "core/config/validate.h"

namespace moebench {

int64_t ResidencySpec::slots(int64_t experts) const {
  if (slots_per_layer >= 0) return std::min(slots_per_layer, experts);
  return std::min<int64_t>(experts,
                           static_cast<int64_t>(std::floor(cache_ratio * double(experts) + 1e-9)));
}

const cfg::Schema<ResidencySpec>& ResidencySpec::schema() {
  using S = ResidencySpec;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("strategy.residency");
    s.number("cache_ratio", &S::cache_ratio,
             "Fraction of each layer's routed experts the GPU may hold (floor(ratio * E) slots).",
             fraction())
        .integer("slots_per_layer", &S::slots_per_layer,
                 "GPU expert slots per MoE layer; >= 0 overrides cache_ratio.", at_least(-1),
                 "experts")
        .boolean("cache_fill", &S::cache_fill,
                 "The expert cache takes the GPU memory that the non-expert weights, the KV cache "
                 "of batch_size sequences and the runtime reserve leave (overrides cache_ratio; "
                 "not with slots_per_layer).")
        .choice("pool", &S::pool, {"per-layer", "global"},
                "Capacity per layer, or one pool of layers x slots shared by all layers.")
        .boolean(
            "pin_active_token", &S::pin_active_token,
            "Experts used by the token in flight cannot be evicted to admit a co-activated expert.")
        .boolean("admit_on_demand", &S::admit_on_demand,
                 "Experts loaded on demand are admitted to the cache (else used once and dropped).")
        .string(
            "admission", &S::admission,
            "When an activated expert counts as a hit: a rule of core/engine/variants/ by name "
            "(moebench config list). at-gate: every expert the layer activates is judged at the "
            "layer's gate, before any load, and a load never evicts an activated expert before "
            "it has run. one-at-a-time: the layer's experts are taken in routing order (tokens "
            "in order, each token's experts by rank), each judged when its turn comes and, if it "
            "runs on the GPU, loaded if absent and computed before the next; a load may evict "
            "any unpinned expert, including one the same token needs later, which then misses "
            "and is loaded again. Needs pin_active_token = false.")
        .boolean(
            "prefetch_buffer", &S::prefetch_buffer,
            "Each layer gets as many extra slots as the prefetcher requests per layer at most (a "
            "prefetch buffer beside the cache share, counted in GPU memory); placement fills only "
            "the cache share; a prefetched expert leaves once its layer is done (a copy not "
            "started is "
            "cancelled), unless its layer used it and the cache policy admits it into the cache "
            "share (the arc cache). Prefetchers "
            "that state no maximum (all but next-layer) get no buffer.")
        .choice("link_order", &S::link_order, {"demand-first", "fifo"},
                "Host-to-device lane order: on-demand loads overtake queued prefetches, or FIFO.")
        .boolean("cancel_stale_prefetch", &S::cancel_stale_prefetch,
                 "Queued prefetches whose target layer has already started are dropped.")
        .string(
            "late_prefetch", &S::late_prefetch,
            "When a prefetch request is dropped before it evicts anything: a rule of "
            "core/engine/variants/ by name (moebench config list). before-demand (the default): "
            "its copy, queued behind the link's work, would land after a demand load issued at "
            "its target layer's gate would; before-gate: after that gate; gates are estimated "
            "from the previous step's gate-to-gate time. issue: every request is issued.")
        .string("attention", &S::attention,
                "Where decode attention runs and the KV cache lives: a path of "
                "core/engine/variants/ by name (moebench config list). gpu (the default): on the "
                "GPU, the KV cache in GPU memory. cpu: the KV cache in host memory and each "
                "decode layer's attention over it on the CPU (QKV projections on the GPU, Q/K/V "
                "copied to the CPU, the output copied back, output projection and router on the "
                "GPU; MoE-Lightning's A_g = 0, FlexGen's CPU delegation). gpu-host-kv: the KV "
                "cache in host memory, each decode layer's entries of a micro-batch copied to "
                "the GPU (on the link, as a demand copy) for its attention there and the new "
                "entries copied back (FlexGen without CPU delegation). With either host cache, "
                "prefill attention stays on the GPU and its KV entries are copied to the host. "
                "Simulated backend only.")
        .integer("micro_batches", &S::micro_batches,
                 "A decode step's sequences in this many micro-batches (at most one per "
                 "sequence): each runs a layer's attention, routing, experts and decisions in "
                 "turn, the next micro-batch's attention issued before this one's experts so the "
                 "CPU's attention overlaps the GPU's experts (MoE-Lightning's CGOPipe order); "
                 "1: the whole batch at once. Simulated backend only.",
                 at_least(1), "micro-batches")
        .choice("attention_order", &S::attention_order, {"ahead", "serial"},
                "With micro_batches > 1, when a micro-batch's attention is issued. ahead: before "
                "the previous micro-batch's experts, so one micro-batch's attention (on the CPU "
                "with attention = \"cpu\") overlaps another's experts (MoE-Lightning's CGOPipe). "
                "serial: after them, each micro-batch through its attention and experts before "
                "the next one starts, nothing of the two overlapping (FlexGen's loop over GPU "
                "batches, which synchronises after each). Simulated backend only.")
        .boolean("writeback", &S::writeback,
                 "An expert evicted to make room for a copy is copied back to host memory first, "
                 "in the same copy stream as the copy that replaces it, which therefore also "
                 "takes the device-to-host copy's time (Mixtral-Offloading's swap: each expert "
                 "lives in one place, GPU or host memory). Not with a cache that takes used "
                 "prefetches into its share (that eviction has no copy to ride on).")
        .boolean("one_stream", &S::one_stream,
                 "Expert copies and GPU work run in one stream, in the order they are issued: a "
                 "copy starts after the GPU work submitted before it and GPU work after the "
                 "copies issued before it, so copies and kernels never overlap "
                 "(Mixtral-Offloading's code, which runs everything on PyTorch's default CUDA "
                 "stream). Needs link_order = \"fifo\".")
        .number("reduced_copy_ratio", &S::reduced_copy_ratio,
                "Bytes of a reduced-precision expert copy over the expert's bytes (Fate's INT2 "
                "transfers beside its INT4 cache: 0.8 in its code's formats); the copy takes the "
                "link latency plus this fraction of the full copy's transfer time. 1: no copy is "
                "reduced. Reduced copies: every demand load when reduced_demand_loads, and the "
                "prefetches the prefetcher asks reduced (next-layer's reduced_share).",
                open_closed_unit())
        .boolean("reduced_demand_loads", &S::reduced_demand_loads,
                 "Every on-demand copy is a reduced-precision copy (Fate). Needs "
                 "reduced_copy_ratio < 1.")
        .integer("recopy_from_layer", &S::recopy_from_layer,
                 "From this MoE layer (0-based) on, every expert computed on the GPU that stays "
                 "in the cache is copied again from host memory, whole, once its layer's GPU work "
                 "is done, and cannot run again before that copy lands (Fate's code: it "
                 "dequantises a cached expert in place before computing and reloads its INT4 "
                 "weights afterwards, from the second MoE layer on). -1: never. Needs "
                 "micro_batches = 1.",
                 at_least(-1), "layer");
    return s;
  }();
  return s;
}

const cfg::Schema<ImplementationSpec>& ImplementationSpec::schema() {
  using S = ImplementationSpec;
  static const cfg::Schema<S> s = [] {
    cfg::Schema<S> s("strategy.implementation");
    s.string("stack", &S::stack,
             "Software stack around the experts (launches, host time per layer); the hardware "
             "profile's "
             "[[stack]] entry of this name says what it costs there.")
        .string("cpu_kernel", &S::cpu_kernel,
                "CPU expert-kernel family; the hardware profile's [[cpu_kernel]] entry of this "
                "name (and the "
                "expert dtype) says what it achieves there.")
        .string("source", &S::source, "Why the strategy runs on this stack and kernel.");
    return s;
  }();
  return s;
}

const std::vector<std::string>& StrategySpec::top_level_keys() {
  static const std::vector<std::string> k = {"preset",  "name",   "description", "system",
                                             "variant", "source", "residency",   "implementation"};
  return k;
}

ComponentSpec& StrategySpec::component(const std::string& family) {
  if (family == "placement") return placement;
  if (family == "assigner") return assigner;
  if (family == "cache") return cache;
  if (family == "prefetcher") return prefetcher;
  if (family == "predictor") return predictor;
  if (family == "deferral") return deferral;
  throw InternalError("unknown component family " + family);
}

const ComponentSpec& StrategySpec::component(const std::string& family) const {
  return const_cast<StrategySpec*>(this)->component(family);
}

namespace {

std::vector<std::string> all_strategy_keys() {
  std::vector<std::string> keys = StrategySpec::top_level_keys();
  for (const auto& f : component_families()) keys.push_back(f);
  return keys;
}

ComponentSpec parse_component(const std::string& family, const cfg::Value::Entry& e,
                              const std::string& prefix, const ComponentCatalog* catalog) {
  ComponentSpec c;
  const std::string key = cfg::join_key(prefix, family);
  c.where = e.value.where();
  const cfg::Value* kind_v = nullptr;
  if (e.value.is_string()) {
    kind_v = &e.value;
    c.params = cfg::Value::table(e.value.where());
  } else if (e.value.is_table()) {
    kind_v = e.value.find("kind");
    if (!kind_v) {
      throw ConfigError(e.value.where(), cfg::join_key(key, "kind"), "a component kind (string)",
                        "no value");
    }
    c.params = e.value;
    c.params.erase("kind");
  } else {
    throw ConfigError(e.value.where(), key, "a component kind (string) or a table with 'kind'",
                      e.value.describe());
  }
  const std::string kind_key = e.value.is_string() ? key : cfg::join_key(key, "kind");
  if (!kind_v->is_string()) {
    throw ConfigError(kind_v->where(), kind_key, "a component kind (string)", kind_v->describe());
  }
  c.kind = kind_v->as_string();
  if (catalog) {
    const auto kinds = catalog->kinds(family);
    bool known = false;
    for (const auto& k : kinds) known = known || k == c.kind;
    if (!known) {
      throw ConfigError(kind_v->where(), kind_key,
                        fmt::format("a registered {} ({})", family, join(kinds, ", ")),
                        "'" + c.kind + "'", closest_name(c.kind, kinds));
    }
    catalog->resolve(family, c.kind, c.params, key);  // throws on bad params
  }
  return c;
}

}  // namespace

StrategySpec StrategySpec::parse(const cfg::Value& v, const std::string& prefix,
                                 const ComponentCatalog* catalog) {
  if (!v.is_table()) throw ConfigError(v.where(), prefix, "a table", v.describe());
  StrategySpec s;
  for (const auto& e : v.entries()) {
    const std::string key = cfg::join_key(prefix, e.key);
    auto str = [&](std::string& out) {
      if (!e.value.is_string())
        throw ConfigError(e.value.where(), key, "a string", e.value.describe());
      out = e.value.as_string();
    };
    if (e.key == "preset") continue;
    if (e.key == "name") {
      str(s.name);
      continue;
    }
    if (e.key == "description") {
      str(s.description);
      continue;
    }
    if (e.key == "system") {
      str(s.system);
      continue;
    }
    if (e.key == "source") {
      str(s.source);
      continue;
    }
    if (e.key == "variant") {
      str(s.variant);
      const std::vector<std::string> allowed = {"paper",  "code",     "ablation",
                                                "oracle", "baseline", "user"};
      if (std::find(allowed.begin(), allowed.end(), s.variant) == allowed.end()) {
        throw ConfigError(e.value.where(), key, "one of " + join(allowed, ", ", true),
                          "'" + s.variant + "'", closest_name(s.variant, allowed));
      }
      continue;
    }
    if (e.key == "residency") {
      ResidencySpec::schema().parse(e.value, s.residency, key);
      if (catalog) {
        // The engine's attention paths, admission and prefetch rules, through the
        // catalogue (one list each: core/engine/variants/); each family is named
        // as its residency key.
        const std::pair<const char*, const std::string*> named[] = {
            {"attention", &s.residency.attention},
            {"admission", &s.residency.admission},
            {"late_prefetch", &s.residency.late_prefetch}};
        for (const auto& [family, value] : named) {
          const std::vector<std::string> names = catalog->kinds(family);
          cfg::require_key(e.value, key, family,
                           std::find(names.begin(), names.end(), *value) != names.end(),
                           "one of " + join(names, ", ", true) + " (moebench config list)",
                           "\"" + *value + "\"");
        }
      }
      cfg::require_key(
          e.value, key, "cache_fill", !s.residency.cache_fill || s.residency.slots_per_layer < 0,
          "cache_fill or slots_per_layer, not both",
          fmt::format("slots_per_layer = {} with cache_fill = true", s.residency.slots_per_layer));
      continue;
    }
    if (e.key == "implementation") {
      ImplementationSpec::schema().parse(e.value, s.implementation, key);
      continue;
    }
    bool is_component = false;
    for (const auto& f : component_families()) {
      if (f == e.key) {
        s.component(f) = parse_component(f, e, prefix, catalog);
        is_component = true;
      }
    }
    if (!is_component) cfg::throw_unknown_key(e, prefix, all_strategy_keys());
  }
  cfg::require_key(v, prefix, "name", !s.name.empty(), "a strategy name (string)", "no value");
  return s;
}

nlohmann::ordered_json StrategySpec::to_json(const ComponentCatalog* catalog) const {
  nlohmann::ordered_json j;
  j["name"] = name;
  j["description"] = description;
  j["system"] = system;
  j["variant"] = variant;
  j["source"] = source;
  j["residency"] = ResidencySpec::schema().to_json(residency);
  // Recorded where set (every earlier case keeps its id).
  if (!residency.cache_fill) j["residency"].erase("cache_fill");
  j["implementation"] = ImplementationSpec::schema().to_json(implementation);
  for (const auto& f : component_families()) {
    const ComponentSpec& c = component(f);
    nlohmann::ordered_json cj;
    cj["kind"] = c.kind;
    cj["params"] =
        catalog ? catalog->resolve(f, c.kind, c.params, "strategy." + f) : c.params.to_json();
    j[f] = cj;
  }
  return j;
}

}  // namespace moebench
