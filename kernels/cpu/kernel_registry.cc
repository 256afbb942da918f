// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/kernel_registry.h"

#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/util/error.h"
#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/kernel_choice.h"

namespace moebench {

namespace {

using enum WeightDtype;

bool any_cpu(const CpuInfo&) {
  return true;
}
bool avx512_bf16(const CpuInfo& c) {
  return c.avx512f && c.avx512bw && c.avx512_bf16;
}
bool avx512_bf16_vl(const CpuInfo& c) {
  return avx512_bf16(c) && c.avx512vl;
}
bool amx_bf16(const CpuInfo& c) {
  return avx512_bf16_vl(c) && c.amx_tile && c.amx_bf16;
}
bool avx512_vnni(const CpuInfo& c) {
  return c.avx512f && c.avx512bw && c.avx512_vnni;
}
bool amx_quant(const CpuInfo& c) {
  return amx_bf16(c) && c.avx512_vnni;
}
bool amx_int8(const CpuInfo& c) {
  return avx512_vnni(c) && c.avx512vl && c.amx_tile && c.amx_int8;
}
bool avx2_fma(const CpuInfo& c) {
  return c.avx2 && c.fma;
}
bool onednn_bf16(const CpuInfo&) {
  return onednn_bf16_available();
}

template <std::unique_ptr<ExpertKernel> (*F)()>
std::unique_ptr<ExpertKernel> plain(const std::string&) {
  return F();
}

// N from "base:N", or the row's default for "base".
int64_t switch_point(const std::string& name, const ExpertKernelInfo& k) {
  if (name == k.name) return k.switch_tokens;
  int64_t n = 0;
  const std::string arg = name.substr(k.name.size() + 1);
  const auto [p, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), n);
  if (ec != std::errc() || p != arg.data() + arg.size() || n < 0) {
    throw Error(fmt::format(
        "expert kernel '{}': expected {} or {}:N with N >= 0 tokens per expert (the last count "
        "the few-token kernel runs), found '{}' after the colon",
        name, k.name, k.name, arg));
  }
  return n;
}

// A switching row's kernel: its `few` kernel up to the switch point, its
// `many` kernel above (kernel_choice.h's switch), both made from their rows.
std::unique_ptr<ExpertKernel> switching(const std::string& name);

std::vector<ExpertKernelInfo> build() {
  // The auto ranks reproduce the rule measured in docs/KERNELS.md: with AMX
  // the switching kernels (vector kernel for few tokens, tiles for many;
  // amx-int8 before amx-quant, faster at every count measured on a 2-vCPU
  // Xeon), else the packed AVX-512 kernels (the fastest at every count
  // measured without AMX), the unpacked ones, AVX2 and, for bf16, oneDNN;
  // never "hybrid" (oneDNN's OpenMP threads keep spinning after a call and
  // slow the next task on a small machine). The switching kernels switch as
  // KTransformers switches between its AVX-512 and AMX kernels (section
  // 3.2: AVX-512 wins at four or fewer tokens per expert on their Xeon);
  // their switch points are expert_ffn.h's, measured there.
  return {
      {.name = "reference",
       .dtypes = {kBf16, kInt8, kInt4},
       .supported = any_cpu,
       .make = plain<make_reference_kernel>,
       .benchmarked = false,
       .summary = "plain loops, fp64 sums: the ground truth"},
      {.name = "avx512-bf16",
       .dtypes = {kBf16},
       .supported = avx512_bf16,
       .make = plain<make_avx512_bf16_kernel>,
       .auto_rank = 60,
       .summary = "bf16 dot products, gate and up fused"},
      {.name = "avx512-bf16-gemm",
       .dtypes = {kBf16},
       .supported = avx512_bf16_vl,
       .make = plain<make_avx512_bf16_gemm_kernel>,
       .auto_rank = 70,
       .auto_candidate = true,
       .summary = "bf16 packed at load, register tiles of 12 tokens"},
      {.name = "amx-bf16",
       .dtypes = {kBf16},
       .supported = amx_bf16,
       .make = plain<make_amx_bf16_kernel>,
       .auto_candidate = true,
       .summary = "bf16 packed at load, AMX tiles"},
      {.name = "avx512-amx-bf16",
       .dtypes = {kBf16},
       .supported = amx_bf16,
       .make = switching,
       .takes_switch_point = true,
       .composite = true,
       .auto_rank = 90,
       .few = "avx512-bf16-gemm",
       .many = "amx-bf16",
       .switch_tokens = kAmxSwitchTokens,
       .summary = "avx512-bf16-gemm up to kAmxSwitchTokens, amx-bf16 above"},
      {.name = "avx512-vnni",
       .dtypes = {kInt8, kInt4},
       .supported = avx512_vnni,
       .make = plain<make_avx512_vnni_kernel>,
       .auto_rank = 60,
       .summary = "int8/int4, activations quantised per token, vpdpbusd"},
      {.name = "avx512-vnni-gemm",
       .dtypes = {kInt8, kInt4},
       .supported = avx512_vnni,
       .make = plain<make_avx512_vnni_gemm_kernel>,
       .auto_rank = 70,
       .auto_candidate = true,
       .summary = "int8/int4 packed at load, register tiles of 6 tokens"},
      {.name = "amx-quant",
       .dtypes = {kInt8, kInt4},
       .supported = amx_quant,
       .make = plain<make_amx_quant_kernel>,
       .auto_candidate = true,
       .summary = "int8/int4 dequantised to bf16 per task, AMX bf16 tiles"},
      {.name = "avx512-amx-quant",
       .dtypes = {kInt8, kInt4},
       .supported = amx_quant,
       .make = switching,
       .takes_switch_point = true,
       .composite = true,
       .auto_rank = 80,
       .few = "avx512-vnni-gemm",
       .many = "amx-quant",
       .switch_tokens = kAmxQuantSwitchTokens,
       .summary = "avx512-vnni-gemm up to kAmxQuantSwitchTokens, amx-quant above"},
      {.name = "amx-int8",
       .dtypes = {kInt8, kInt4},
       .supported = amx_int8,
       .make = plain<make_amx_int8_kernel>,
       .auto_candidate = true,
       .summary = "int8/int4 on AMX int8 tiles (TDPBSUD)"},
      {.name = "avx512-amx-int8",
       .dtypes = {kInt8, kInt4},
       .supported = amx_int8,
       .make = switching,
       .takes_switch_point = true,
       .composite = true,
       .auto_rank = 90,
       .few = "avx512-vnni-gemm",
       .many = "amx-int8",
       .switch_tokens = kAmxInt8SwitchTokens,
       .summary = "avx512-vnni-gemm up to kAmxInt8SwitchTokens, amx-int8 above"},
      {.name = "avx2-gemm",
       .dtypes = {kBf16, kInt8, kInt4},
       .supported = avx2_fma,
       .make = plain<make_avx2_gemm_kernel>,
       .auto_rank = 50,
       .auto_candidate = true,
       .summary = "packed at load, for CPUs with AVX2 and FMA only"},
      {.name = "onednn",
       .dtypes = {kBf16},
       .supported = onednn_bf16,
       .make = plain<make_onednn_kernel>,
       .auto_rank = 40,
       .summary = "two oneDNN bf16 matmuls"},
      {.name = "hybrid",
       .dtypes = {kBf16},
       .supported = avx512_bf16,
       .make = switching,
       .takes_switch_point = true,
       .composite = true,
       .few = "avx512-bf16",
       .many = "onednn",
       .switch_tokens = kHybridSwitchTokens,
       .summary = "avx512-bf16 up to kHybridSwitchTokens, oneDNN above"},
  };
}

}  // namespace

const std::vector<ExpertKernelInfo>& expert_kernel_registry() {
  static const std::vector<ExpertKernelInfo> table = build();
  return table;
}

namespace {

std::unique_ptr<ExpertKernel> switching(const std::string& name) {
  const ExpertKernelInfo& k = *find_expert_kernel(name);
  const ExpertKernelInfo* few = find_expert_kernel(k.few);
  const ExpertKernelInfo* many = find_expert_kernel(k.many);
  return make_switch_kernel(name, switch_point(name, k), few->make(k.few), many->make(k.many));
}

}  // namespace

const ExpertKernelInfo* find_expert_kernel(const std::string& name) {
  for (const auto& k : expert_kernel_registry()) {
    if (name == k.name) return &k;
    if (k.takes_switch_point && name.size() > k.name.size() && name.rfind(k.name + ":", 0) == 0)
      return &k;
  }
  return nullptr;
}

std::vector<std::string> expert_kernels_available() {
  std::vector<std::string> v;
  const CpuInfo& c = cpu_info();
  for (const auto& k : expert_kernel_registry()) {
    if (k.supported(c)) v.push_back(k.name);
  }
  return v;
}

std::unique_ptr<ExpertKernel> make_expert_kernel(const std::string& name) {
  const ExpertKernelInfo* k = find_expert_kernel(name);
  if (k == nullptr || !k->supported(cpu_info())) {
    throw Error(fmt::format("expert kernel: expected one of {} (what this CPU can run), found '{}'",
                            fmt::join(expert_kernels_available(), ", "), name));
  }
  return k->make(name);
}

std::string auto_expert_kernel(WeightDtype dtype) {
  if (dtype == kFp16) {
    throw Error(fmt::format(
        "model.expert_dtype: expected bf16, int8 or int4 for the real backend, found {}",
        to_string(dtype)));
  }
  const CpuInfo& c = cpu_info();
  const ExpertKernelInfo* best = nullptr;
  for (const auto& k : expert_kernel_registry()) {
    if (k.auto_rank <= 0 || !k.supported(c)) continue;
    bool has = false;
    for (WeightDtype d : k.dtypes) has = has || d == dtype;
    if (has && (best == nullptr || k.auto_rank > best->auto_rank)) best = &k;
  }
  if (best != nullptr) return best->name;
  throw Error(fmt::format(
      "suite.real_kernel = \"auto\": expected a CPU with AVX2 and FMA or AVX-512 for {} experts, "
      "found neither (kernels here: {}); set real_kernel = \"reference\" to run the slow "
      "reference kernel anyway",
      to_string(dtype), fmt::join(expert_kernels_available(), ", ")));
}

std::vector<std::string> auto_candidates(WeightDtype dtype) {
  std::vector<std::string> out;
  const CpuInfo& c = cpu_info();
  for (const auto& k : expert_kernel_registry()) {
    if (!k.auto_candidate || !k.supported(c)) continue;
    for (WeightDtype d : k.dtypes) {
      if (d == dtype) out.push_back(k.name);
    }
  }
  return out;
}

std::string expert_kernel_table_json() {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  const CpuInfo& c = cpu_info();
  for (const auto& k : expert_kernel_registry()) {
    nlohmann::ordered_json d = nlohmann::ordered_json::array();
    for (WeightDtype t : k.dtypes) d.push_back(to_string(t));
    rows.push_back({{"name", k.name},
                    {"dtypes", d},
                    {"runs_here", k.supported(c)},
                    {"takes_switch_point", k.takes_switch_point},
                    {"composite", k.composite},
                    {"auto_rank", k.auto_rank},
                    {"auto_candidate", k.auto_candidate},
                    {"benchmarked", k.benchmarked},
                    {"few", k.few},
                    {"many", k.many},
                    {"switch_tokens", k.switch_tokens},
                    {"summary", k.summary}});
  }
  nlohmann::ordered_json autos = nlohmann::ordered_json::object();
  for (WeightDtype t : {kBf16, kInt8, kInt4}) {
    try {
      autos[to_string(t)] = auto_expert_kernel(t);
    } catch (const Error& e) {
      autos[to_string(t)] = std::string("none: ") + e.what();
    }
  }
  return nlohmann::ordered_json{{"kernels", rows}, {"auto", autos}}.dump();
}

}  // namespace moebench
