// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/config/hardware_profile.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/config/validate.h"

namespace moebench {

namespace {

const cfg::Schema<CpuSpec>& cpu_schema() {
  using S = CpuSpec;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("hardware.cpu");
    s.string("model", &S::model, "CPU model name.")
        .integer("sockets", &S::sockets, "Sockets used.", between(1, 16))
        .integer("cores", &S::cores, "Physical cores used for expert compute.", between(1, 4096))
        .integer("threads", &S::threads, "Worker threads.", between(1, 8192))
        .number("mem_bw_gbps", &S::mem_bw_gbps,
                "Sustained memory read bandwidth of the used cores.", positive(), "GB/s")
        .number("peak_gflops_fp32", &S::peak_gflops_fp32, "Peak fp32 rate of the used cores.",
                positive(), "GFLOP/s")
        .number("peak_gflops_bf16", &S::peak_gflops_bf16,
                "Peak bf16 rate (0 = no native bf16; the fp32 rate is used).", non_negative(),
                "GFLOP/s")
        .number("peak_gflops_int8", &S::peak_gflops_int8,
                "Peak int8 dot-product rate (0 = none; the fp32 rate is used).", non_negative(),
                "GOP/s")
        .number("gemm_efficiency", &S::gemm_efficiency,
                "Fraction of peak reached by expert matmuls when compute-bound.",
                open_closed_unit())
        .number("task_overhead_us", &S::task_overhead_us, "Fixed cost of one expert task.",
                non_negative(), "us")
        .number("first_task_warmup_us", &S::first_task_warmup_us,
                "Extra cost of the first expert task of a layer (cold caches).", non_negative(),
                "us")
        .number(
            "expert_bw_efficiency", &S::expert_bw_efficiency,
            "Fraction of mem_bw_gbps that routed-expert kernels read at (a [[cpu_kernel]] entry "
            "sets it for the strategy's kernel family).",
            open_closed_unit())
        .number("expert_gflops", &S::expert_gflops,
                "Effective rate of routed-expert kernels when compute-bound, all used cores (-1 = "
                "the dtype's "
                "peak x gemm_efficiency; a [[cpu_kernel]] entry sets it for the strategy's kernel "
                "family).",
                NumRange{-1.0}, "GFLOP/s");
    return s;
  }();
  return s;
}

const cfg::Schema<GpuSpec>& gpu_schema() {
  using S = GpuSpec;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("hardware.gpu");
    s.integer("count", &S::count, "GPUs (0 = CPU-only machine; moebench models one).",
              between(0, 1))
        .string("model", &S::model, "GPU model name.")
        .number("mem_gib", &S::mem_gib, "Device memory.", non_negative(), "GiB")
        .number("runtime_reserved_gib", &S::runtime_reserved_gib,
                "Memory taken by the CUDA context, workspaces and activations.", non_negative(),
                "GiB")
        .number("hbm_gbps", &S::hbm_gbps, "Device memory bandwidth.", non_negative(), "GB/s")
        .number("peak_tflops_bf16", &S::peak_tflops_bf16, "Dense tensor-core bf16 rate.",
                non_negative(), "TFLOP/s")
        .number("peak_tflops_int8", &S::peak_tflops_int8, "Dense tensor-core int8 rate.",
                non_negative(), "TOP/s")
        .number("gemm_efficiency", &S::gemm_efficiency,
                "Fraction of peak reached by expert matmuls when compute-bound.",
                open_closed_unit())
        .number("kernel_launch_us", &S::kernel_launch_us, "Launch overhead per GPU task.",
                non_negative(), "us")
        .integer("layer_kernels", &S::layer_kernels,
                 "Kernel launches of one layer's attention, norms and router (each costs "
                 "kernel_launch_us).",
                 between(0, 1000))
        .number("layer_overhead_us", &S::layer_overhead_us,
                "Host time per layer that the layer's GPU work waits on (interpreter, "
                "synchronisation); "
                "a [[stack]] entry sets it for the strategy's software stack.",
                non_negative(), "us")
        .number("hbm_efficiency", &S::hbm_efficiency,
                "Fraction of hbm_gbps that memory-bound kernels (decode matmuls, attention) reach; "
                "a [[stack]] entry sets it for the strategy's kernels.",
                open_closed_unit());
    return s;
  }();
  return s;
}

const cfg::Schema<LinkSpec>& link_schema() {
  using S = LinkSpec;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("hardware.link");
    s.string("kind", &S::kind, "Interconnect, e.g. pcie4-x16.")
        .number("h2d_gbps", &S::h2d_gbps, "Effective host-to-device bandwidth.", non_negative(),
                "GB/s")
        .number("d2h_gbps", &S::d2h_gbps, "Effective device-to-host bandwidth.", non_negative(),
                "GB/s")
        .number("latency_us", &S::latency_us, "Fixed cost per transfer.", non_negative(), "us")
        .boolean("duplex", &S::duplex, "Both directions can transfer at once.");
    return s;
  }();
  return s;
}

const cfg::Schema<PlanningSpec>& planning_schema() {
  using S = PlanningSpec;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("hardware.planning");
    s.string("preset", &S::preset,
             "A hardware preset or file whose costs the components plan with (e.g. the machine "
             "a plan was made on); empty: this profile's.")
        .number("cpu_expert", &S::cpu_expert,
                "The planners' estimate of a routed expert's CPU time over the time it takes.",
                positive())
        .number("gpu_expert", &S::gpu_expert,
                "The planners' estimate of a routed expert's GPU time over the time it takes.",
                positive())
        .number("expert_copy", &S::expert_copy,
                "The planners' estimate of an expert copy's time over the time it takes.",
                positive());
    return s;
  }();
  return s;
}

const cfg::Schema<CostTable>& table_schema() {
  using S = CostTable;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("hardware.table");
    s.choice("lane", &S::lane,
             {"cpu-expert", "cpu-shared", "gpu-expert", "h2d-expert", "gpu-layer", "cpu-attention",
              "cpu-dense-ffn", "cpu-lm-head", "gpu-shared", "gpu-dense-ffn", "gpu-lm-head"},
             "Which task this table times (cpu-shared: a layer's shared experts on a machine "
             "without a GPU; cpu-attention: a block's attention, norms and router, cpu-dense-ffn "
             "and cpu-lm-head, on a machine without a GPU, by tokens in the step; gpu-layer: a "
             "block's attention, norms and router on the GPU, by tokens, at one context; "
             "gpu-shared, gpu-dense-ffn and gpu-lm-head: those tasks on the GPU, by tokens).")
        .required()
        .integer("context", &S::context,
                 "gpu-layer only: the KV entries each new token read, one new token per sequence "
                 "(tables at several contexts are interpolated between; unset: not by context).",
                 between(1, int64_t(1) << 30), "tokens")
        .string("model", &S::model, "Model preset it was measured on (\"*\" = any).")
        .string("dtype", &S::dtype, "Expert dtype it was measured with (\"*\" = any).")
        .number_list("tokens", &S::tokens, "Tokens per expert (ascending).", non_negative(),
                     "tokens")
        .required()
        .number_list("time_us", &S::time_us, "Measured time per task.", non_negative(), "us")
        .required();
    return s;
  }();
  return s;
}

const cfg::Schema<KernelTime>& kernel_time_schema() {
  using S = KernelTime;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("hardware.kernel_time");
    s.string("model", &S::model, "Model preset whose routed expert shape was timed.")
        .required()
        .string("dtype", &S::dtype, "Expert dtype (bf16, int8, int4).")
        .required()
        .string("kernel", &S::kernel, "Own CPU expert kernel (kernels/cpu/expert_ffn.h).")
        .required()
        .number_list("tokens", &S::tokens, "Tokens per expert (ascending, >= 1).", non_negative(),
                     "tokens")
        .required()
        .number_list("time_us", &S::time_us, "Measured time per task.", non_negative(), "us")
        .required();
    return s;
  }();
  return s;
}

const std::vector<std::string>& evidence_kinds() {
  static const std::vector<std::string> k = {"paper", "measured", "fitted", "spec", "assumption"};
  return k;
}

constexpr double kUnset = -1.0;

const cfg::Schema<CpuKernelSpec>& cpu_kernel_schema() {
  using S = CpuKernelSpec;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("hardware.cpu_kernel");
    s.string("family", &S::family,
             "CPU expert-kernel family, as a strategy names it in implementation.cpu_kernel.")
        .required()
        .string("dtype", &S::dtype, "Expert dtype this entry applies to (\"*\" = any).")
        .number("bw_efficiency", &S::bw_efficiency,
                "Fraction of cpu.mem_bw_gbps the family's expert reads reach (-1 = "
                "cpu.expert_bw_efficiency).",
                NumRange{kUnset, 1.0})
        .number(
            "compute_gflops", &S::compute_gflops,
            "Effective rate when compute-bound, all used cores (-1 = peak x cpu.gemm_efficiency).",
            NumRange{kUnset}, "GFLOP/s")
        .number("task_overhead_us", &S::task_overhead_us,
                "Fixed cost per expert task (-1 = cpu.task_overhead_us).", NumRange{kUnset}, "us")
        .number("first_task_warmup_us", &S::first_task_warmup_us,
                "Extra cost of a layer's first expert task (-1 = cpu.first_task_warmup_us).",
                NumRange{kUnset}, "us")
        .choice("evidence", &S::evidence, evidence_kinds(),
                "Where the numbers come from: the paper's measurement, our measurement, a fit on a "
                "declared "
                "calibration target, a datasheet, or an assumption.")
        .required()
        .string("source", &S::source, "The publication, section and reasoning behind the numbers.")
        .required()
        .string("measured_on", &S::measured_on,
                "The strategy system whose measured times the numbers were fitted on (required "
                "with evidence = \"fitted\"; provenance: the entry applies to every system that "
                "runs this kernel family).")
        .boolean("testbed_default", &S::testbed_default,
                 "The testbed's CPU rate for a kernel family without an entry of its own here "
                 "(at most one entry per dtype).");
    return s;
  }();
  return s;
}

const cfg::Schema<StackSpec>& stack_schema() {
  using S = StackSpec;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("hardware.stack");
    s.string("name", &S::name, "Software stack, as a strategy names it in implementation.stack.")
        .required()
        .boolean(
            "cuda_graph", &S::cuda_graph,
            "The step is replayed from a CUDA Graph: GPU work costs no per-kernel launch time.")
        .integer("launches_per_layer", &S::launches_per_layer,
                 "Kernel launches of one layer's non-MoE work (-1 = gpu.layer_kernels).",
                 at_least(-1))
        .number("launch_us", &S::launch_us,
                "Host cost per kernel launch (-1 = gpu.kernel_launch_us).", NumRange{kUnset}, "us")
        .number("layer_overhead_us", &S::layer_overhead_us,
                "Host time per layer the GPU waits on (-1 = gpu.layer_overhead_us).",
                NumRange{kUnset}, "us")
        .number("gpu_bw_efficiency", &S::gpu_bw_efficiency,
                "Fraction of gpu.hbm_gbps the stack's memory-bound kernels reach (-1 = "
                "gpu.hbm_efficiency).",
                NumRange{kUnset, 1.0})
        .choice("evidence", &S::evidence, evidence_kinds(),
                "Where the numbers come from (as in [[cpu_kernel]]).")
        .required()
        .string("source", &S::source, "The publication, section and reasoning behind the numbers.")
        .required()
        .string("measured_on", &S::measured_on,
                "The strategy system whose measured times the numbers were fitted on (as in "
                "[[cpu_kernel]]: provenance; the entry applies to every system on this stack).")
        .string_list("differs", &S::differs,
                     "Systems whose papers say their implementation of this stack differs in "
                     "host time (cited in source): they pay differs_share of layer_overhead_us.")
        .number("differs_share", &S::differs_share,
                "The share of layer_overhead_us the systems in differs pay (an unknown: give "
                "its range in an [[unknown]] entry; required with differs).",
                NumRange{kUnset});
    return s;
  }();
  return s;
}

// The fields of a [[calibration]] target (a baseline's published number the
// fit is made on) and of a [[feasibility]] bound (the proposed system's, never
// a target) are the same but for a target's tolerance and fitted keys.
void testbed_target_fields(cfg::Schema<TestbedTarget>& s, bool target) {
  using S = TestbedTarget;
  using namespace cfg;
  s.string("id", &S::id, "Row id in analysis/testbeds.py.")
      .required()
      .string("system", &S::system,
              target
                  ? "The baseline system the paper measured (never the proposed system)."
                  : "The proposed system whose published number this is (a bound, never a target).")
      .required()
      .string("model", &S::model, "Model preset.")
      .required()
      .string("quantity", &S::quantity, "What was measured.")
      .required()
      .string("unit", &S::unit, "Its unit.")
      .required()
      .number("value", &S::value, "The paper's number.", positive())
      .required();
  if (target) {
    s.number("tolerance", &S::tolerance, "Relative tolerance the fitted profile must meet.",
             open_closed_unit())
        .string_list("fits", &S::fits, "Profile keys fitted on this target.");
  }
  s.string("source", &S::source, "Publication, table or figure.")
      .required()
      .string("suite", &S::suite,
              target ? "Suite part that runs the baseline in this setting (scripts/fit-testbed)."
                     : "Suite part that runs the system in this setting (scripts/fit-testbed).")
      .required()
      .string("strategy", &S::strategy,
              target ? "The baseline's strategy name in that suite."
                     : "The system's strategy name in that suite.")
      .required()
      .choice("metric", &S::metric,
              {"decode_tokens_per_s", "tbt_mean_ms", "ttft_mean_ms", "total_time_s"},
              target ? "Results column compared with the value (seed mean)."
                     : "Results column compared with the value.")
      .required()
      .boolean("per_sequence", &S::per_sequence, "The column is divided by the batch size.")
      .string_list(
          "where", &S::where,
          "The rows of one setting: \"column=value\" each (results columns, e.g. "
          "\"strategy.residency.cache_ratio=0.25\"); none: the mean over the strategy's rows.");
}

const cfg::Schema<TestbedTarget>& calibration_schema() {
  static const cfg::Schema<TestbedTarget> s = [] {
    cfg::Schema<TestbedTarget> s("hardware.calibration");
    testbed_target_fields(s, true);
    return s;
  }();
  return s;
}

const cfg::Schema<TestbedTarget>& feasibility_schema() {
  static const cfg::Schema<TestbedTarget> s = [] {
    cfg::Schema<TestbedTarget> s("hardware.feasibility");
    testbed_target_fields(s, false);
    return s;
  }();
  return s;
}

const cfg::Schema<TestbedUnknown>& unknown_schema() {
  static const cfg::Schema<TestbedUnknown> s = [] {
    using S = TestbedUnknown;
    using namespace cfg;
    cfg::Schema<S> s("hardware.unknown");
    s.string("key", &S::key,
             "The profile key: cpu.<k>, gpu.<k>, link.<k>, stack.<name>.<k> or "
             "cpu_kernel.<family>.<k>.")
        .required()
        .choice("role", &S::role, {"sampled", "solved"},
                "sampled: spread over the range; solved: fitted on the [[calibration]] targets at "
                "every sample (it must be one of their fits).")
        .number("low", &S::low,
                "Smallest value the evidence allows (above 0 on the log scale; 0 allowed on the "
                "linear one).",
                non_negative())
        .required()
        .number("high", &S::high, "Largest value the evidence allows.", positive())
        .required()
        .choice("scale", &S::scale, {"log", "linear"}, "How samples spread over the range.")
        .string_list("tied", &S::tied, "Keys that always take this key's value.")
        .string("source", &S::source, "Where the range comes from.")
        .required();
    return s;
  }();
  return s;
}

const cfg::Schema<ContentionTerm>& contention_schema() {
  static const cfg::Schema<ContentionTerm> s = [] {
    using S = ContentionTerm;
    using namespace cfg;
    cfg::Schema<S> s("hardware.contention");
    s.choice("term", &S::term, contention_terms(),
             "The task kind: gpu-expert, cpu-expert, expert-copy (an expert's H2D copy), "
             "act-to-cpu, act-to-gpu (hidden states across the link), gpu-layer (attention, "
             "norms and router, shared experts, dense FFN, lm head, predictor matmuls), handoff "
             "(a task waiting for a task of another lane starts per_task_us after its end; no "
             "factor), cpu-under-copy, gpu-under-copy (a CPU or GPU expert runs factor times "
             "slower for the part of it during which the link copies experts; no per_task_us).")
        .required()
        .number("factor", &S::factor, "Times the cost model's time of such a task.", positive())
        .number("per_task_us", &S::per_task_us, "Added to every such task.", non_negative(), "us")
        .string("source", &S::source, "Where the term was fitted and checked.")
        .required();
    return s;
  }();
  return s;
}

}  // namespace

const std::vector<std::string>& contention_terms() {
  static const std::vector<std::string> t = {"gpu-expert", "cpu-expert",     "expert-copy",
                                             "act-to-cpu", "act-to-gpu",     "gpu-layer",
                                             "handoff",    "cpu-under-copy", "gpu-under-copy"};
  return t;
}

nlohmann::ordered_json HardwareProfile::to_json() const {
  nlohmann::ordered_json j = schema().to_json(*this);
  if (contention.empty()) j.erase("contention");
  if (planning.exact()) {
    j.erase("planning");
  } else if (planning.estimate) {
    j["planning"]["estimate"] = planning.estimate->to_json();
  }
  // A target without `where` keeps the JSON (and the cases their ids) it had
  // before targets could name a setting.
  for (const char* k : {"calibration", "feasibility"})
    if (j.contains(k))
      for (auto& t : j[k])
        if (t.contains("where") && t["where"].empty()) t.erase("where");
  // A table not by context keeps the JSON (and the cases their ids) it had
  // before tables could be.
  if (j.contains("table"))
    for (auto& t : j["table"])
      if (t.contains("context") && t["context"].get<int64_t>() < 0) t.erase("context");
  return j;
}

const cfg::Schema<HardwareProfile>& HardwareProfile::schema() {
  using S = HardwareProfile;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("hardware");
    s.reserved("preset");
    s.string("name", &S::name, "Preset name; written into every result row.")
        .string("description", &S::description, "Free text.")
        .string("source", &S::source, "Where the numbers come from.")
        .table("cpu", &S::cpu, cpu_schema(), "Host CPU.")
        .table("gpu", &S::gpu, gpu_schema(), "Accelerator.")
        .table("link", &S::link, link_schema(), "Host-device interconnect.")
        .table_list("table", &S::tables, table_schema(),
                    "Measured cost tables that override the roofline formulas.")
        .table_list("kernel_time", &S::kernel_times, kernel_time_schema(),
                    "Own CPU expert kernels' measured times by tokens per expert (moebench "
                    "calibrate): the real backend's \"auto\" runs the fastest at each count.")
        .table_list("cpu_kernel", &S::cpu_kernels, cpu_kernel_schema(),
                    "What each CPU expert-kernel family achieves here (docs/COST_MODEL.md, "
                    "implementations).")
        .table_list("stack", &S::stacks, stack_schema(),
                    "What each software stack costs here around the experts (launches, host time "
                    "per layer).")
        .table_list("calibration", &S::calibration, calibration_schema(),
                    "Baseline measurements on this testbed the profile was fitted on "
                    "(analysis/testbeds.py).")
        .table_list(
            "feasibility", &S::feasibility, feasibility_schema(),
            "The proposed systems' published numbers here: bounds a fit must leave attainable "
            "(scripts/fit-testbed), never targets.")
        .table_list("unknown", &S::unknowns, unknown_schema(),
                    "Quantities of this testbed its evidence leaves unknown, with their ranges "
                    "(scripts/testbed-region).")
        .string_list("region_suites", &S::region_suites,
                     "Suites whose claims scripts/testbed-region judges across the region.")
        .table_list("contention", &S::contention, contention_schema(),
                    "What a task costs inside a run of every lane beyond its table (fitted on "
                    "the GPU replays: analysis/gpu_contention.py); none by default.")
        .table("planning", &S::planning, planning_schema(),
               "What the strategies' components plan with: another profile's costs and the "
               "estimate's error per expert task; by default this profile's own costs.");
    return s;
  }();
  return s;
}

namespace {

// A measured curve (a [[table]] or a [[kernel_time]]): time_us as long as
// tokens and not empty, tokens strictly ascending from at least `first_min`.
void check_curve(const cfg::Value& v, const std::string& where, const std::vector<double>& tokens,
                 const std::vector<double>& time_us, double first_min, const char* rule) {
  cfg::require_key(v, where, "time_us", time_us.size() == tokens.size() && !tokens.empty(),
                   fmt::format("a non-empty array as long as tokens ({} items)", tokens.size()),
                   fmt::format("{} items", time_us.size()));
  for (size_t j = 0; j < tokens.size(); ++j) {
    cfg::require_key(v, where, "tokens",
                     j == 0 ? tokens[0] >= first_min : tokens[j] > tokens[j - 1], rule,
                     j == 0 ? fmt::format("{} first", tokens[0])
                            : fmt::format("{} after {}", tokens[j], tokens[j - 1]));
  }
}

// The source of entry i of an array of tables (for the error position).
const cfg::Value& item_of(const cfg::Value& src, const cfg::Value* list, size_t i) {
  return list && i < list->items().size() ? list->items()[i] : src;
}

// The machine's rates and bandwidths: real machines (positive, above floors).
void validate_rates(const HardwareProfile& h, const cfg::Value& src, const std::string& prefix) {
  using cfg::require_key;
  const cfg::Value* cpu_v = src.find("cpu");
  const cfg::Value& cpu_src = cpu_v ? *cpu_v : src;
  const std::string cpu_prefix = cfg::join_key(prefix, "cpu");
  // Rates and bandwidths below these floors are not machines: a task would
  // outlast what the simulated clock can hold (1e-308 GB/s made TTFT
  // infinite), and a zero would be taken as infinitely fast.
  constexpr double kMinGbps = 1e-3, kMinGflops = 1e-3;
  auto rate = [](double x, double floor) { return std::isfinite(x) && x >= floor; };
  const std::string gbps_rule = fmt::format("a bandwidth of at least {} GB/s (1 MB/s)", kMinGbps);
  const std::string flops_rule = fmt::format("a rate of at least {} GFLOP/s", kMinGflops);
  require_key(cpu_src, cpu_prefix, "mem_bw_gbps", rate(h.cpu.mem_bw_gbps, kMinGbps), gbps_rule,
              h.cpu.mem_bw_gbps > 0 ? fmt::format("{}", h.cpu.mem_bw_gbps) : "no value");
  require_key(cpu_src, cpu_prefix, "peak_gflops_fp32", rate(h.cpu.peak_gflops_fp32, kMinGflops),
              flops_rule,
              h.cpu.peak_gflops_fp32 > 0 ? fmt::format("{}", h.cpu.peak_gflops_fp32) : "no value");
  for (const auto& [key, x] :
       {std::pair<const char*, double>{"peak_gflops_bf16", h.cpu.peak_gflops_bf16},
        {"peak_gflops_int8", h.cpu.peak_gflops_int8}}) {
    require_key(cpu_src, cpu_prefix, key, x == 0 || rate(x, kMinGflops),
                "0 (none) or " + flops_rule, fmt::format("{}", x));
  }
  if (h.has_gpu()) {
    const cfg::Value* gpu_v = src.find("gpu");
    const cfg::Value& gpu_src = gpu_v ? *gpu_v : src;
    const std::string gpu_prefix = cfg::join_key(prefix, "gpu");
    require_key(gpu_src, gpu_prefix, "mem_gib", h.gpu.mem_gib > 0, "a number > 0 when count = 1",
                fmt::format("{}", h.gpu.mem_gib));
    require_key(gpu_src, gpu_prefix, "hbm_gbps", rate(h.gpu.hbm_gbps, kMinGbps),
                gbps_rule + " when count = 1", fmt::format("{}", h.gpu.hbm_gbps));
    require_key(gpu_src, gpu_prefix, "peak_tflops_bf16",
                rate(h.gpu.peak_tflops_bf16, kMinGflops / 1e3),
                fmt::format("a rate of at least {} TFLOP/s when count = 1", kMinGflops / 1e3),
                fmt::format("{}", h.gpu.peak_tflops_bf16));
    require_key(gpu_src, gpu_prefix, "runtime_reserved_gib",
                h.gpu.runtime_reserved_gib < h.gpu.mem_gib,
                fmt::format("less than mem_gib ({})", h.gpu.mem_gib),
                fmt::format("{}", h.gpu.runtime_reserved_gib));
    const cfg::Value* link_v = src.find("link");
    const cfg::Value& link_src = link_v ? *link_v : src;
    // Both directions: a d2h of 0 was once taken as infinitely fast.
    require_key(link_src, cfg::join_key(prefix, "link"), "h2d_gbps",
                rate(h.link.h2d_gbps, kMinGbps), gbps_rule + " when a GPU is present",
                fmt::format("{}", h.link.h2d_gbps));
    require_key(link_src, cfg::join_key(prefix, "link"), "d2h_gbps",
                rate(h.link.d2h_gbps, kMinGbps), gbps_rule + " when a GPU is present",
                fmt::format("{}", h.link.d2h_gbps));
  }
  require_key(cpu_src, cpu_prefix, "expert_gflops",
              h.cpu.expert_gflops == kUnset || h.cpu.expert_gflops > 0,
              "-1 (peak x gemm_efficiency) or a number > 0",
              fmt::format("{}", h.cpu.expert_gflops));
}

// The implementations' entries: values unset or in range, a fit naming
// what it was measured on, one entry per family (stack) and measured_on.
void validate_implementations(const HardwareProfile& h, const cfg::Value& src,
                              const std::string& prefix) {
  using cfg::require_key;
  auto item = [&](const cfg::Value* list, size_t i) -> const cfg::Value& {
    return item_of(src, list, i);
  };
  auto unset_or = [&](const cfg::Value* list, size_t i, const std::string& what,
                      const std::string& key, double x, bool ok) {
    require_key(item(list, i), fmt::format("{}.{}[{}]", prefix, what, i), key, x == kUnset || ok,
                "-1 (unset) or a value in range", fmt::format("{}", x));
  };
  const cfg::Value* kernels_v = src.find("cpu_kernel");
  for (size_t i = 0; i < h.cpu_kernels.size(); ++i) {
    const auto& k = h.cpu_kernels[i];
    unset_or(kernels_v, i, "cpu_kernel", "bw_efficiency", k.bw_efficiency, k.bw_efficiency > 0);
    unset_or(kernels_v, i, "cpu_kernel", "compute_gflops", k.compute_gflops, k.compute_gflops > 0);
    unset_or(kernels_v, i, "cpu_kernel", "task_overhead_us", k.task_overhead_us,
             k.task_overhead_us >= 0);
    unset_or(kernels_v, i, "cpu_kernel", "first_task_warmup_us", k.first_task_warmup_us,
             k.first_task_warmup_us >= 0);
    // A fit describes the implementation it was fitted on.
    require_key(item(kernels_v, i), fmt::format("{}.cpu_kernel[{}]", prefix, i), "measured_on",
                k.evidence != "fitted" || !k.measured_on.empty(),
                "the system whose measured times the fit describes (evidence = \"fitted\")",
                "none");
    for (size_t j = 0; j < i; ++j) {
      const auto& o = h.cpu_kernels[j];
      require_key(item(kernels_v, i), fmt::format("{}.cpu_kernel[{}]", prefix, i), "family",
                  !(o.family == k.family && o.dtype == k.dtype), "one entry per family and dtype",
                  fmt::format("'{}' for dtype '{}' again (cpu_kernel[{}])", k.family, k.dtype, j));
      require_key(item(kernels_v, i), fmt::format("{}.cpu_kernel[{}]", prefix, i),
                  "testbed_default",
                  !(k.testbed_default && o.testbed_default && o.dtype == k.dtype),
                  "one testbed default per dtype",
                  fmt::format("a second for dtype '{}' (cpu_kernel[{}] is one)", k.dtype, j));
    }
  }
  const cfg::Value* stacks_v = src.find("stack");
  for (size_t i = 0; i < h.stacks.size(); ++i) {
    const auto& st = h.stacks[i];
    unset_or(stacks_v, i, "stack", "launch_us", st.launch_us, st.launch_us >= 0);
    unset_or(stacks_v, i, "stack", "layer_overhead_us", st.layer_overhead_us,
             st.layer_overhead_us >= 0);
    unset_or(stacks_v, i, "stack", "gpu_bw_efficiency", st.gpu_bw_efficiency,
             st.gpu_bw_efficiency > 0);
    unset_or(stacks_v, i, "stack", "differs_share", st.differs_share, st.differs_share >= 0);
    require_key(item(stacks_v, i), fmt::format("{}.stack[{}]", prefix, i), "measured_on",
                st.evidence != "fitted" || !st.measured_on.empty(),
                "the system whose measured times the fit describes (evidence = \"fitted\")",
                "none");
    require_key(
        item(stacks_v, i), fmt::format("{}.stack[{}]", prefix, i), "differs_share",
        st.differs.empty() == (st.differs_share == kUnset),
        st.differs.empty() ? "none without differs"
                           : "the share of layer_overhead_us the systems in differs pay",
        st.differs_share == kUnset ? std::string("none") : fmt::format("{}", st.differs_share));
    for (size_t j = 0; j < i; ++j) {
      require_key(item(stacks_v, i), fmt::format("{}.stack[{}]", prefix, i), "name",
                  h.stacks[j].name != st.name, "one entry per stack",
                  fmt::format("'{}' again (stack[{}])", st.name, j));
    }
  }
}

// The measured tables and kernel times: ascending curves, contexts on
// gpu-layer tables only, one entry per what they time.
void validate_tables(const HardwareProfile& h, const cfg::Value& src, const std::string& prefix) {
  using cfg::require_key;
  auto item = [&](const cfg::Value* list, size_t i) -> const cfg::Value& {
    return item_of(src, list, i);
  };
  const cfg::Value* tables_v = src.find("table");
  for (size_t i = 0; i < h.tables.size(); ++i) {
    const auto& t = h.tables[i];
    const cfg::Value& tv = item(tables_v, i);
    const std::string tp = fmt::format("{}.table[{}]", prefix, i);
    check_curve(tv, tp, t.tokens, t.time_us, -std::numeric_limits<double>::infinity(),
                "strictly ascending values");
    require_key(tv, tp, "context", t.context < 0 || t.lane == "gpu-layer",
                "a context on gpu-layer tables only",
                fmt::format("context {} on a {} table", t.context, t.lane));
    for (size_t j = 0; j < i; ++j) {
      const auto& o = h.tables[j];
      require_key(tv, tp, "context",
                  !(t.context >= 0 && o.lane == t.lane && o.model == t.model &&
                    o.dtype == t.dtype && o.context == t.context),
                  "one gpu-layer table per model, dtype and context",
                  fmt::format("context {} again (table[{}])", t.context, j));
      require_key(tv, tp, "context",
                  !(t.lane == "gpu-layer" && o.lane == t.lane && o.model == t.model &&
                    o.dtype == t.dtype && (o.context < 0) != (t.context < 0)),
                  "gpu-layer tables of one model and dtype all by context or none",
                  fmt::format("{} beside table[{}] {}",
                              t.context < 0 ? "none" : fmt::format("context {}", t.context), j,
                              o.context < 0 ? "without one" : "with one"));
    }
  }
  const cfg::Value* ktimes_v = src.find("kernel_time");
  for (size_t i = 0; i < h.kernel_times.size(); ++i) {
    const auto& t = h.kernel_times[i];
    const cfg::Value& tv = item(ktimes_v, i);
    const std::string tp = fmt::format("{}.kernel_time[{}]", prefix, i);
    require_key(tv, tp, "dtype", t.dtype == "bf16" || t.dtype == "int8" || t.dtype == "int4",
                "bf16, int8 or int4", "'" + t.dtype + "'");
    check_curve(tv, tp, t.tokens, t.time_us, 1.0, "strictly ascending values >= 1");
    for (size_t j = 0; j < i; ++j) {
      const auto& o = h.kernel_times[j];
      require_key(
          tv, tp, "kernel", !(o.model == t.model && o.dtype == t.dtype && o.kernel == t.kernel),
          "one entry per model, dtype and kernel",
          fmt::format("'{}' for {} {} again (kernel_time[{}])", t.kernel, t.model, t.dtype, j));
    }
  }
}

// The unknowns (a range, solved only by a target that fits them) and the
// contention terms (one per term; no factor for the hand-off).
void validate_unknowns_and_terms(const HardwareProfile& h, const cfg::Value& src,
                                 const std::string& prefix) {
  using cfg::require_key;
  auto item = [&](const cfg::Value* list, size_t i) -> const cfg::Value& {
    return item_of(src, list, i);
  };
  const cfg::Value* unknowns_v = src.find("unknown");
  for (size_t i = 0; i < h.unknowns.size(); ++i) {
    const auto& u = h.unknowns[i];
    const std::string up = fmt::format("{}.unknown[{}]", prefix, i);
    require_key(item(unknowns_v, i), up, "high", u.high > u.low,
                fmt::format("a value above low ({})", u.low), fmt::format("{}", u.high));
    require_key(item(unknowns_v, i), up, "low", u.low > 0 || u.scale == "linear",
                "a value above 0 (the log scale), or scale = \"linear\"", fmt::format("{}", u.low));
    bool fitted = false;
    for (const auto& t : h.calibration) {
      fitted = fitted || std::find(t.fits.begin(), t.fits.end(), u.key) != t.fits.end();
    }
    require_key(item(unknowns_v, i), up, "role", u.role != "solved" || fitted,
                "'sampled' for a key no [[calibration]] target fits",
                fmt::format("'solved' for '{}'", u.key));
    for (size_t j = 0; j < i; ++j) {
      require_key(item(unknowns_v, i), up, "key", h.unknowns[j].key != u.key, "one entry per key",
                  fmt::format("'{}' again (unknown[{}])", u.key, j));
    }
  }
  const cfg::Value* contention_v = src.find("contention");
  for (size_t i = 0; i < h.contention.size(); ++i) {
    require_key(item(contention_v, i), fmt::format("{}.contention[{}]", prefix, i), "factor",
                h.contention[i].term != "handoff" || h.contention[i].factor == 1.0,
                "no factor for the handoff term (a wait across lanes costs per_task_us)",
                fmt::format("{}", h.contention[i].factor));
    const bool under_copy = h.contention[i].term.find("under-copy") != std::string::npos;
    require_key(item(contention_v, i), fmt::format("{}.contention[{}]", prefix, i), "per_task_us",
                !under_copy || h.contention[i].per_task_us == 0.0,
                "no per_task_us for an under-copy term (it scales the overlapped part: factor)",
                fmt::format("{}", h.contention[i].per_task_us));
    for (size_t j = 0; j < i; ++j) {
      require_key(item(contention_v, i), fmt::format("{}.contention[{}]", prefix, i), "term",
                  h.contention[j].term != h.contention[i].term, "one entry per term",
                  fmt::format("'{}' again (contention[{}])", h.contention[i].term, j));
    }
  }
}

}  // namespace

void HardwareProfile::validate(const cfg::Value& src, const std::string& prefix) const {
  validate_rates(*this, src, prefix);
  validate_implementations(*this, src, prefix);
  validate_tables(*this, src, prefix);
  validate_unknowns_and_terms(*this, src, prefix);
}

namespace {

// The [[cpu_kernel]] entry a kernel family runs on this testbed for `dtype`:
// its own (one for the dtype before one for "*"), else the testbed's default.
const CpuKernelSpec* kernel_entry(const HardwareProfile& hw, const std::string& family,
                                  const std::string& dtype, bool* by_default) {
  auto pick = [&](auto&& matches) -> const CpuKernelSpec* {
    const CpuKernelSpec* any = nullptr;
    for (const auto& e : hw.cpu_kernels) {
      if (!matches(e)) continue;
      if (e.dtype == dtype) return &e;
      if ((e.dtype == "*" || e.dtype.empty()) && !any) any = &e;
    }
    return any;
  };
  *by_default = false;
  if (const auto* k = pick([&](const CpuKernelSpec& e) { return e.family == family; })) return k;
  const auto* d = pick([](const CpuKernelSpec& e) { return e.testbed_default; });
  *by_default = d != nullptr;
  return d;
}

}  // namespace

HardwareProfile with_implementation(const HardwareProfile& hw, const std::string& stack,
                                    const std::string& cpu_kernel, const std::string& dtype,
                                    const std::string& system, nlohmann::ordered_json* used) {
  HardwareProfile out = hw;
  bool by_default = false;
  const CpuKernelSpec* k = kernel_entry(hw, cpu_kernel, dtype, &by_default);
  if (k) {
    if (k->bw_efficiency != kUnset) out.cpu.expert_bw_efficiency = k->bw_efficiency;
    if (k->compute_gflops != kUnset) out.cpu.expert_gflops = k->compute_gflops;
    if (k->task_overhead_us != kUnset) out.cpu.task_overhead_us = k->task_overhead_us;
    if (k->first_task_warmup_us != kUnset) out.cpu.first_task_warmup_us = k->first_task_warmup_us;
  }
  const StackSpec* st = nullptr;
  for (const auto& e : hw.stacks) {
    if (e.name == stack) st = &e;
  }
  const bool differs =
      st && std::find(st->differs.begin(), st->differs.end(), system) != st->differs.end();
  if (st) {
    if (st->launches_per_layer >= 0) out.gpu.layer_kernels = st->launches_per_layer;
    if (st->launch_us != kUnset) out.gpu.kernel_launch_us = st->launch_us;
    if (st->layer_overhead_us != kUnset) {
      out.gpu.layer_overhead_us = st->layer_overhead_us * (differs ? st->differs_share : 1.0);
    }
    if (st->gpu_bw_efficiency != kUnset) out.gpu.hbm_efficiency = st->gpu_bw_efficiency;
    if (st->cuda_graph) out.gpu.kernel_launch_us = 0;
  }
  if (used) {
    auto entry_name = [](const std::string& name, const std::string& measured_on) {
      return measured_on.empty() ? name : fmt::format("{} (measured on {})", name, measured_on);
    };
    nlohmann::ordered_json j;
    j["stack"] = stack;
    j["stack_entry"] =
        !st       ? std::string("profile default")
        : differs ? fmt::format("{}, host time x {} ({} differs)",
                                entry_name(st->name, st->measured_on), st->differs_share, system)
                  : entry_name(st->name, st->measured_on);
    j["stack_evidence"] = st ? st->evidence : "";
    j["cpu_kernel"] = cpu_kernel;
    j["cpu_kernel_entry"] =
        !k ? std::string("profile default")
           : fmt::format("{}{}",
                         entry_name(fmt::format("{} ({})", k->family, k->dtype), k->measured_on),
                         by_default ? ", the testbed's default" : "");
    j["cpu_kernel_evidence"] = k ? k->evidence : "";
    j["cpu_expert_bw_gbps"] = out.cpu.mem_bw_gbps * out.cpu.expert_bw_efficiency;
    j["cpu_expert_gflops"] = out.cpu.expert_gflops;  // -1: peak x gemm_efficiency
    j["cpu_task_overhead_us"] = out.cpu.task_overhead_us;
    j["gpu_launch_us"] = out.gpu.kernel_launch_us;
    j["gpu_layer_launches"] = out.gpu.layer_kernels;
    j["layer_overhead_us"] = out.gpu.layer_overhead_us;
    j["gpu_bw_gbps"] = out.gpu.hbm_gbps * out.gpu.hbm_efficiency;
    *used = std::move(j);
  }
  return out;
}

void replace_kernel_time(HardwareProfile& h, KernelTime t) {
  auto& v = h.kernel_times;
  v.erase(std::remove_if(v.begin(), v.end(),
                         [&](const KernelTime& x) {
                           return x.model == t.model && x.dtype == t.dtype && x.kernel == t.kernel;
                         }),
          v.end());
  v.push_back(std::move(t));
}

std::vector<const KernelTime*> kernel_times_for(const HardwareProfile& h, const std::string& model,
                                                const std::string& dtype) {
  std::vector<const KernelTime*> out;
  for (const auto& t : h.kernel_times) {
    if (t.model == model && t.dtype == dtype) out.push_back(&t);
  }
  return out;
}

void replace_table(HardwareProfile& h, CostTable t) {
  h.tables.erase(
      std::remove_if(h.tables.begin(), h.tables.end(),
                     [&](const CostTable& x) {
                       // The same context, or one not by
                       // context beside one by context.
                       return x.lane == t.lane && x.model == t.model && x.dtype == t.dtype &&
                              (x.context == t.context || (x.context < 0) != (t.context < 0));
                     }),
      h.tables.end());
  h.tables.push_back(std::move(t));
}

}  // namespace moebench
