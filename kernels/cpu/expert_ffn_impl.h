#pragma once
// Constructors of the expert kernels, one file each (kernels/cpu/expert_ffn.h).

#include <memory>
#include <string>

#include "kernels/cpu/expert_ffn.h"

namespace moebench {

std::unique_ptr<ExpertKernel>
make_avx512_bf16_kernel();  // REQUIRES: avx512f, avx512bw, avx512_bf16
std::unique_ptr<ExpertKernel>
make_avx512_vnni_kernel();  // REQUIRES: avx512f, avx512bw, avx512_vnni
std::unique_ptr<ExpertKernel> make_onednn_kernel();
std::unique_ptr<ExpertKernel>
make_avx512_bf16_gemm_kernel();  // REQUIRES: avx512f, avx512bw, avx512vl, avx512_bf16
// "hybrid" or "hybrid:N".  REQUIRES: avx512-bf16 available
std::unique_ptr<ExpertKernel> make_hybrid_kernel(const std::string& name);

}  // namespace moebench
