#include "core/config/hardware_profile.h"

#include "core/config/validate.h"

namespace moebench {

int64_t HardwareProfile::gpu_mem_bytes() const {
  return static_cast<int64_t>(gpu.mem_gib * 1024.0 * 1024.0 * 1024.0);
}

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
                "us");
    return s;
  }();
  return s;
}

const cfg::Schema<GpuSpec>& gpu_schema() {
  using S = GpuSpec;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("hardware.gpu");
    s.integer("count", &S::count, "GPUs (0 = CPU-only machine; moebench models one).", between(0, 1))
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
                 "Kernel launches of one layer's attention, norms and router (each costs kernel_launch_us).",
                 between(0, 1000));
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
        .number("h2d_gbps", &S::h2d_gbps, "Effective host-to-device bandwidth.", non_negative(), "GB/s")
        .number("d2h_gbps", &S::d2h_gbps, "Effective device-to-host bandwidth.", non_negative(), "GB/s")
        .number("latency_us", &S::latency_us, "Fixed cost per transfer.", non_negative(), "us")
        .boolean("duplex", &S::duplex, "Both directions can transfer at once.");
    return s;
  }();
  return s;
}

const cfg::Schema<CostTable>& table_schema() {
  using S = CostTable;
  using namespace cfg;
  static const Schema<S> s = [] {
    Schema<S> s("hardware.table");
    s.choice("lane", &S::lane, {"cpu-expert", "gpu-expert", "h2d-expert", "gpu-layer"},
             "Which task this table times.")
        .required()
        .string("model", &S::model, "Model preset it was measured on (\"*\" = any).")
        .string("dtype", &S::dtype, "Expert dtype it was measured with (\"*\" = any).")
        .number_list("tokens", &S::tokens, "Tokens per expert (ascending).", non_negative(), "tokens")
        .required()
        .number_list("time_us", &S::time_us, "Measured time per task.", non_negative(), "us")
        .required();
    return s;
  }();
  return s;
}

}  // namespace

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
                    "Measured cost tables that override the roofline formulas.");
    return s;
  }();
  return s;
}

void HardwareProfile::validate(const cfg::Value& src, const std::string& prefix) const {
  using cfg::require_key;
  const cfg::Value* cpu_v = src.find("cpu");
  const cfg::Value& cpu_src = cpu_v ? *cpu_v : src;
  const std::string cpu_prefix = cfg::join_key(prefix, "cpu");
  require_key(cpu_src, cpu_prefix, "mem_bw_gbps", cpu.mem_bw_gbps > 0, "a number > 0", "no value");
  require_key(cpu_src, cpu_prefix, "peak_gflops_fp32", cpu.peak_gflops_fp32 > 0, "a number > 0",
              "no value");
  if (has_gpu()) {
    const cfg::Value* gpu_v = src.find("gpu");
    const cfg::Value& gpu_src = gpu_v ? *gpu_v : src;
    const std::string gpu_prefix = cfg::join_key(prefix, "gpu");
    require_key(gpu_src, gpu_prefix, "mem_gib", gpu.mem_gib > 0, "a number > 0 when count = 1",
                fmt::format("{}", gpu.mem_gib));
    require_key(gpu_src, gpu_prefix, "hbm_gbps", gpu.hbm_gbps > 0, "a number > 0 when count = 1",
                fmt::format("{}", gpu.hbm_gbps));
    require_key(gpu_src, gpu_prefix, "peak_tflops_bf16", gpu.peak_tflops_bf16 > 0,
                "a number > 0 when count = 1", fmt::format("{}", gpu.peak_tflops_bf16));
    require_key(gpu_src, gpu_prefix, "runtime_reserved_gib",
                gpu.runtime_reserved_gib < gpu.mem_gib, fmt::format("less than mem_gib ({})", gpu.mem_gib),
                fmt::format("{}", gpu.runtime_reserved_gib));
    const cfg::Value* link_v = src.find("link");
    const cfg::Value& link_src = link_v ? *link_v : src;
    require_key(link_src, cfg::join_key(prefix, "link"), "h2d_gbps", link.h2d_gbps > 0,
                "a number > 0 when a GPU is present", fmt::format("{}", link.h2d_gbps));
  }
  const cfg::Value* tables_v = src.find("table");
  for (size_t i = 0; i < tables.size(); ++i) {
    const auto& t = tables[i];
    const cfg::Value& tv = tables_v && i < tables_v->items().size() ? tables_v->items()[i] : src;
    const std::string tp = fmt::format("{}.table[{}]", prefix, i);
    require_key(tv, tp, "time_us", t.time_us.size() == t.tokens.size() && !t.tokens.empty(),
                fmt::format("a non-empty array as long as tokens ({} items)", t.tokens.size()),
                fmt::format("{} items", t.time_us.size()));
    for (size_t j = 1; j < t.tokens.size(); ++j) {
      require_key(tv, tp, "tokens", t.tokens[j] > t.tokens[j - 1], "strictly ascending values",
                  fmt::format("{} after {}", t.tokens[j], t.tokens[j - 1]));
    }
  }
}

}  // namespace moebench
