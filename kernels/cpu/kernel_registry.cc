// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/kernel_registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/util/error.h"
#include "kernels/cpu/expert_ffn_impl.h"

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

std::vector<ExpertKernelInfo> build() {
  // The auto ranks reproduce the rule measured in docs/KERNELS.md: with AMX
  // the switching kernels (vector kernel for few tokens, tiles for many;
  // amx-int8 before amx-quant, faster at every count measured on a 2-vCPU
  // Xeon), else the packed AVX-512 kernels (the fastest at every count
  // measured without AMX), the unpacked ones, AVX2 and, for bf16, oneDNN;
  // never "hybrid" (oneDNN's OpenMP threads keep spinning after a call and
  // slow the next task on a small machine).
  return {
      {"reference",
       {kBf16, kInt8, kInt4},
       any_cpu,
       plain<make_reference_kernel>,
       false,
       false,
       0,
       false,
       false,
       "plain loops, fp64 sums: the ground truth"},
      {"avx512-bf16",
       {kBf16},
       avx512_bf16,
       plain<make_avx512_bf16_kernel>,
       false,
       false,
       60,
       false,
       true,
       "bf16 dot products, gate and up fused"},
      {"avx512-bf16-gemm",
       {kBf16},
       avx512_bf16_vl,
       plain<make_avx512_bf16_gemm_kernel>,
       false,
       false,
       70,
       true,
       true,
       "bf16 packed at load, register tiles of 12 tokens"},
      {"amx-bf16",
       {kBf16},
       amx_bf16,
       plain<make_amx_bf16_kernel>,
       false,
       false,
       0,
       true,
       true,
       "bf16 packed at load, AMX tiles"},
      {"avx512-amx-bf16",
       {kBf16},
       amx_bf16,
       make_switch_kernel,
       true,
       true,
       90,
       false,
       true,
       "avx512-bf16-gemm up to kAmxSwitchTokens, amx-bf16 above"},
      {"avx512-vnni",
       {kInt8, kInt4},
       avx512_vnni,
       plain<make_avx512_vnni_kernel>,
       false,
       false,
       60,
       false,
       true,
       "int8/int4, activations quantised per token, vpdpbusd"},
      {"avx512-vnni-gemm",
       {kInt8, kInt4},
       avx512_vnni,
       plain<make_avx512_vnni_gemm_kernel>,
       false,
       false,
       70,
       true,
       true,
       "int8/int4 packed at load, register tiles of 6 tokens"},
      {"amx-quant",
       {kInt8, kInt4},
       amx_quant,
       plain<make_amx_quant_kernel>,
       false,
       false,
       0,
       true,
       true,
       "int8/int4 dequantised to bf16 per task, AMX bf16 tiles"},
      {"avx512-amx-quant",
       {kInt8, kInt4},
       amx_quant,
       make_switch_kernel,
       true,
       true,
       80,
       false,
       true,
       "avx512-vnni-gemm up to kAmxQuantSwitchTokens, amx-quant above"},
      {"amx-int8",
       {kInt8, kInt4},
       amx_int8,
       plain<make_amx_int8_kernel>,
       false,
       false,
       0,
       true,
       true,
       "int8/int4 on AMX int8 tiles (TDPBSUD)"},
      {"avx512-amx-int8",
       {kInt8, kInt4},
       amx_int8,
       make_switch_kernel,
       true,
       true,
       90,
       false,
       true,
       "avx512-vnni-gemm up to kAmxInt8SwitchTokens, amx-int8 above"},
      {"avx2-gemm",
       {kBf16, kInt8, kInt4},
       avx2_fma,
       plain<make_avx2_gemm_kernel>,
       false,
       false,
       50,
       true,
       true,
       "packed at load, for CPUs with AVX2 and FMA only"},
      {"onednn",
       {kBf16},
       onednn_bf16,
       plain<make_onednn_kernel>,
       false,
       false,
       40,
       false,
       true,
       "two oneDNN bf16 matmuls"},
      {"hybrid",
       {kBf16},
       avx512_bf16,
       make_hybrid_kernel,
       true,
       true,
       0,
       false,
       true,
       "avx512-bf16 up to kHybridSwitchTokens, oneDNN above"},
  };
}

}  // namespace

const std::vector<ExpertKernelInfo>& expert_kernel_registry() {
  static const std::vector<ExpertKernelInfo> table = build();
  return table;
}

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

}  // namespace moebench
