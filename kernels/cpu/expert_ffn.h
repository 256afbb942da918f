#pragma once
// One routed expert's feed-forward on the CPU (issue 14, first part): for
// each token t of a step,
//
//     out[t] += w[t] * down( silu(gate x_t) * (up x_t) )
//
// with bf16 weights: gate and up [inter x hidden], down [hidden x inter],
// row-major; x and out are fp32 [tokens x hidden], w the tokens' combine
// weights. Implementations behind one interface, chosen by name:
//
//   reference     plain loops, fp64 accumulation, fp32 activations: the
//                 ground truth every other kernel is checked against
//   avx512-bf16   own kernel: bf16 dot products (vdpbf16ps) with fp32
//                 accumulation, gate and up fused in one pass over x, the
//                 activations rounded to bf16 as the weights are
//   onednn        two oneDNN matmuls (gate|up, then down), bf16 inputs,
//                 fp32 outputs, primitives cached per token count
//
// Kernels run single-threaded for now (the task queue across threads, int8
// and int4 weights and the AMX tile kernel are the next parts of issue 14).
// Which kernels this CPU can run is read at run time (core/util/cpu_info.h).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace moebench {

// bf16 as the upper half of an fp32 (round to nearest even; NaN kept NaN).
uint16_t to_bf16(float f);
float from_bf16(uint16_t b);

struct ExpertShape {
  int64_t hidden = 0;  // model width (x and out)
  int64_t inter = 0;   // the expert's intermediate width
};

struct Bf16Expert {
  ExpertShape shape;
  std::vector<uint16_t> gate, up;  // [inter x hidden]
  std::vector<uint16_t> down;      // [hidden x inter]
  // Weights uniform in +-scale / sqrt(fan-in), from a seeded generator.
  static Bf16Expert random(ExpertShape s, uint64_t seed);
};

class ExpertKernel {
 public:
  virtual ~ExpertKernel() = default;
  virtual std::string name() const = 0;
  // out[t * hidden + i] += w[t] * FFN(x_t)[i] for t < tokens.
  virtual void run(const Bf16Expert& e, const float* x, int64_t tokens, const float* w,
                   float* out) = 0;
};

// The kernels this CPU can run, in a fixed order ("reference" always).
std::vector<std::string> expert_kernels_available();

// Throws moebench::Error naming the kernels available here when `name` is
// unknown or needs an instruction set this CPU lacks.
std::unique_ptr<ExpertKernel> make_expert_kernel(const std::string& name);

// ||a - b|| / ||b|| over n values (0 when both are zero).
double normalised_error(const float* a, const float* b, int64_t n);

}  // namespace moebench
