// expert kernel "hybrid" (bf16): the own vector kernel (avx512-bf16) for
// few tokens per expert, the matrix kernel (oneDNN, which uses AMX tiles
// where the CPU has them) for many, switching at a token count measured on
// the machine, as KTransformers switches between its AVX-512 and AMX
// kernels (section 3.2: AVX-512 wins at four or fewer tokens per expert on
// their Xeon). "hybrid" switches above kHybridSwitchTokens; "hybrid:N"
// above N tokens.
#include <charconv>
#include <utility>

#include <fmt/format.h>

#include "core/util/error.h"
#include "kernels/cpu/expert_ffn_impl.h"

namespace moebench {
namespace {

class HybridKernel final : public ExpertKernel {
 public:
  HybridKernel(std::string name, int64_t switch_tokens)
      : name_(std::move(name)),
        switch_(switch_tokens),
        vec_(make_avx512_bf16_kernel()),
        mat_(make_onednn_kernel()) {}
  std::string name() const override { return name_; }
  bool supports(WeightDtype d) const override { return d == WeightDtype::kBf16; }

 protected:
  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool* pool) override {
    if (tokens <= switch_) {
      vec_->run(e, x, tokens, w, out, pool);
    } else {
      mat_->run(e, x, tokens, w, out, pool);
    }
  }

 private:
  std::string name_;
  int64_t switch_;
  std::unique_ptr<ExpertKernel> vec_, mat_;
};

}  // namespace

std::unique_ptr<ExpertKernel> make_hybrid_kernel(const std::string& name) {
  int64_t n = kHybridSwitchTokens;
  if (name != "hybrid") {
    const std::string arg = name.substr(std::string("hybrid:").size());
    const auto [p, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), n);
    if (ec != std::errc() || p != arg.data() + arg.size() || n < 0) {
      throw Error(fmt::format(
          "expert kernel '{}': expected hybrid or hybrid:N with N >= 0 tokens per expert "
          "(the last count the vector kernel runs), found '{}' after the colon",
          name, arg));
    }
  }
  return std::make_unique<HybridKernel>(name, n);
}

}  // namespace moebench
