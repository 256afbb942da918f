// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Two kernels behind one name, switching at a token count per expert, as
// KTransformers switches between its AVX-512 and AMX kernels (section 3.2:
// AVX-512 wins at four or fewer tokens per expert on their Xeon):
//   "hybrid" (bf16): the own vector kernel (avx512-bf16) for few tokens,
//       oneDNN (which uses AMX tiles where the CPU has them) for many;
//       above kHybridSwitchTokens, "hybrid:N" above N tokens;
//   "avx512-amx-bf16" (bf16, packed weights): avx512-bf16-gemm for few
//       tokens, amx-bf16 for many; above kAmxSwitchTokens, or N;
//   "avx512-amx-quant" (int8 and int4, packed weights): avx512-vnni-gemm
//       for few tokens, amx-quant for many; above kAmxQuantSwitchTokens, or N;
//   "avx512-amx-int8" (int8 and int4, packed weights): avx512-vnni-gemm
//       for few tokens, amx-int8 for many; above kAmxInt8SwitchTokens, or N.
#include <charconv>
#include <utility>

#include <fmt/format.h>

#include "core/util/error.h"
#include "kernels/cpu/expert_ffn_impl.h"
#include "kernels/cpu/kernel_choice.h"

namespace moebench {
namespace {

// N from "base:N", or `fallback` for "base".
int64_t switch_tokens(const std::string& name, const std::string& base, int64_t fallback) {
  if (name == base) return fallback;
  int64_t n = 0;
  const std::string arg = name.substr(base.size() + 1);
  const auto [p, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), n);
  if (ec != std::errc() || p != arg.data() + arg.size() || n < 0) {
    throw Error(fmt::format(
        "expert kernel '{}': expected {} or {}:N with N >= 0 tokens per expert (the last count "
        "the few-token kernel runs), found '{}' after the colon",
        name, base, base, arg));
  }
  return n;
}

}  // namespace

std::unique_ptr<ExpertKernel> make_hybrid_kernel(const std::string& name) {
  return make_switch_kernel(name, switch_tokens(name, "hybrid", kHybridSwitchTokens),
                            make_avx512_bf16_kernel(), make_onednn_kernel());
}

std::unique_ptr<ExpertKernel> make_switch_kernel(const std::string& name) {
  if (name.rfind("avx512-amx-int8", 0) == 0) {
    return make_switch_kernel(name, switch_tokens(name, "avx512-amx-int8", kAmxInt8SwitchTokens),
                              make_avx512_vnni_gemm_kernel(), make_amx_int8_kernel());
  }
  if (name.rfind("avx512-amx-quant", 0) == 0) {
    return make_switch_kernel(name, switch_tokens(name, "avx512-amx-quant", kAmxQuantSwitchTokens),
                              make_avx512_vnni_gemm_kernel(), make_amx_quant_kernel());
  }
  return make_switch_kernel(name, switch_tokens(name, "avx512-amx-bf16", kAmxSwitchTokens),
                            make_avx512_bf16_gemm_kernel(), make_amx_bf16_kernel());
}

}  // namespace moebench
