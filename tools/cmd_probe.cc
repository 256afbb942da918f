// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// moebench probe: measures this CPU and prints a [cpu] section.
// moebench kernels: the CPU expert kernel table (kernels/cpu/kernel_registry.cc)
// and which of its kernels this CPU runs.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/results/provenance.h"
#include "core/util/cpu_info.h"
#include "kernels/cpu/kernel_registry.h"
#include "kernels/cpu/probe.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"

namespace moebench::tools {

void add_probe_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "probe",
      "Measure this CPU (memory bandwidth, FMA peaks, task dispatch) and print a [cpu] "
      "section for configs/hardware/");
  static ProbeOptions opt;
  cmd->add_option("--threads", opt.threads, "Threads (0 = all usable CPUs)")->check(cli::whole(0));
  cmd->add_option("--gib", opt.bandwidth_gib, "Bandwidth buffer size in GiB")
      ->check(cli::real(0.05, 64.0));
  cmd->add_option("--repeats", opt.repeats, "Best of N")->check(cli::whole(1, 100));
  cmd->callback([] {
    const ProbeResult r = run_probe(opt);
    const CpuInfo& c = cpu_info();
    fmt::print("# measured by `moebench probe --threads {} --gib {} --repeats {}` on {}\n",
               r.threads, opt.bandwidth_gib, opt.repeats, utc_now_iso());
    fmt::print("# cpu flags: {}\n", fmt::join(c.flag_names(), " "));
    fmt::print("[cpu]\n");
    fmt::print("model = \"{}\"\n", c.model);
    fmt::print("cores = {}\nthreads = {}\n", r.threads, r.threads);
    fmt::print(
        "mem_bw_gbps = {:.1f}        # [measured] sustained read, all threads, one stream each\n",
        r.read_bw_gbps);
    fmt::print(
        "# STREAM-like ceiling {:.1f} GB/s [measured]: four streams per thread {:.1f}, triad "
        "{:.1f} "
        "(STREAM's counting)\n",
        r.ceiling_bw_gbps, r.read4_bw_gbps, r.triad_bw_gbps);
    fmt::print("peak_gflops_fp32 = {:.1f}   # [measured] {} FMA, all threads\n", r.fp32_gflops,
               r.fp32_isa);
    fmt::print(
        "peak_gflops_bf16 = {:.1f}   # [measured] avx512_bf16 vdpbf16ps (0 = not available)\n",
        r.bf16_gflops);
    fmt::print(
        "peak_gflops_int8 = {:.1f}   # [measured] avx512_vnni vpdpbusd (0 = not available)\n",
        r.int8_gops);
    if (r.int8_avx2_gops > 0) {
      fmt::print("# avx2 vpmaddubsw int8 product peak: {:.1f} GOP/s [measured] (no VNNI here)\n",
                 r.int8_avx2_gops);
    }
    fmt::print(
        "# amx_bf16 TDPBF16PS peak: {:.1f} GFLOP/s [measured] (0 = no usable AMX; the cost "
        "model reads peak_gflops_bf16)\n",
        r.amx_bf16_gflops);
    fmt::print("# amx_int8 TDPBSSD peak: {:.1f} GOP/s [measured] (0 = no usable AMX-INT8)\n",
               r.amx_int8_gops);
    fmt::print(
        "task_overhead_us = {:.2f}   # [measured] median round trip of a call to the kernels' "
        "thread pool\n",
        r.dispatch_us);
  });
}

void add_kernels_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "kernels",
      "List the CPU expert kernels (the table in kernels/cpu/kernel_registry.cc): which this "
      "CPU runs, \"auto\"'s candidates and rule, the switching kernels");
  static bool json = false;
  cmd->add_flag("--json", json, "The table as JSON (what analysis/kernels.py reads)");
  cmd->callback([] {
    const std::string text = expert_kernel_table_json();
    if (json) {
      fmt::print("{}\n", text);
      return;
    }
    const auto j = nlohmann::json::parse(text);
    fmt::print("CPU: {}\n", cpu_info().model);
    fmt::print("{:<18} {:<16} {:<5} {:>4} {:<9} {}\n", "kernel", "dtypes", "here", "auto",
               "candidate", "what");
    for (const auto& k : j["kernels"]) {
      std::string what = k["summary"];
      if (k["takes_switch_point"].get<bool>())
        what += fmt::format(" (name:N switches above N; default {})",
                            k["switch_tokens"].get<int64_t>());
      fmt::print("{:<18} {:<16} {:<5} {:>4} {:<9} {}\n", k["name"].get<std::string>(),
                 fmt::format("{}", fmt::join(k["dtypes"].get<std::vector<std::string>>(), ",")),
                 k["runs_here"].get<bool>() ? "yes" : "no", k["auto_rank"].get<int>(),
                 k["auto_candidate"].get<bool>() ? "yes" : "no", what);
    }
    for (const auto& [dtype, pick] : j["auto"].items())
      fmt::print("auto for {}: {}\n", dtype, pick.get<std::string>());
  });
}

}  // namespace moebench::tools
