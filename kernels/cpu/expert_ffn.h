// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// One routed expert's feed-forward on the CPU (first part): for
// each token t of a step,
//
//     out[t] += w[t] * down( silu(gate x_t) * (up x_t) )
//
// with weights gate and up [inter x hidden], down [hidden x inter],
// row-major, in bf16, int8 or int4; x and out are fp32 [tokens x hidden],
// w the tokens' combine weights. Implementations behind one interface,
// chosen by name:
//
//   reference     plain loops, fp64 accumulation, fp32 activations, the
//                 weights dequantised exactly: the ground truth every other
//                 kernel is checked against (every dtype)
//   avx512-bf16   own kernel, bf16: bf16 dot products (vdpbf16ps) with fp32
//                 accumulation, gate and up fused in one pass over x, the
//                 activations rounded to bf16 as the weights are
//   avx512-bf16-gemm  own kernel, bf16 packed at load (pack()), for many
//                 tokens: 16 rows per vector, each token's activation pair
//                 broadcast, 12 tokens per register tile, no horizontal sums
//   amx-bf16      own kernel, bf16 packed at load (the same packing), for
//                 many tokens: AMX tiles, 16 tokens x 32 columns times 32
//                 columns x 16 rows per TDPBF16PS (kernels/cpu/expert_ffn_amx.cc)
//   avx512-amx-bf16  bf16: avx512-bf16-gemm up to kAmxSwitchTokens tokens
//                 per expert, amx-bf16 above ("avx512-amx-bf16:N": above N),
//                 KTransformers' switch between its AVX-512 and AMX kernels
//   amx-quant     own kernel, int8 and int4 packed at load (the vnni-gemm
//                 packing): each task dequantises its row blocks to bf16
//                 (kernels/cpu/dequant.h) and runs amx-bf16's tile loops on
//                 them, fp32 sums over whole rows (expert_ffn_amx_quant.cc)
//   avx512-amx-quant  int8 and int4: avx512-vnni-gemm up to
//                 kAmxQuantSwitchTokens tokens, amx-quant above (":N")
//   amx-int8      own kernel, int8 and int4 packed at load (the vnni-gemm
//                 packing; int4 unpacked to bytes per task): TDPBSUD on the
//                 codes, one tile product per group, its int32 sums scaled
//                 into fp32 per group as avx512-vnni-gemm does, whose output
//                 it equals bit for bit (expert_ffn_amx_int8.cc)
//   avx512-amx-int8  int8 and int4: avx512-vnni-gemm up to
//                 kAmxInt8SwitchTokens tokens, amx-int8 above (":N")
//   avx512-vnni-gemm  own kernel, int8 and int4 packed at load: 16 rows per
//                 vector, each token's 4 activation bytes broadcast into
//                 vpdpbusd, int32 sums per group scaled by a vector of the
//                 16 rows' scales, 6 tokens per register tile
//   avx512-vnni   own kernel, int8 and int4: the activations quantised to
//                 int8 per token, u8 x s8 dot products (vpdpbusd) into int32
//                 per group of kQuantGroup weights, scaled into fp32
//   avx2-gemm     own kernel, bf16, int8 and int4 packed at load as above,
//                 for a CPU with AVX2 and FMA but no AVX-512: 8 rows per
//                 vector, bf16 widened to fp32 for FMA, int8/int4 through
//                 vpmaddubsw and vpmaddwd (kernels/cpu/expert_ffn_avx2.cc)
//   hybrid        bf16: avx512-bf16 up to kHybridSwitchTokens tokens per
//                 expert, onednn above ("hybrid:N": above N), the switch
//                 KTransformers makes between its AVX-512 and AMX kernels
//   onednn        two oneDNN matmuls (gate|up, then down), bf16 inputs,
//                 fp32 outputs, primitives cached per token count (bf16
//                 only: Debian's oneDNN 2.6 has no group-wise scales or int4;
//                 offered only where oneDNN can create its bf16 matmul, which
//                 2.6 cannot without AVX-512)
//
// Quantised weights are symmetric with one fp32 scale per group of
// kQuantGroup consecutive weights of a row (the input dimension), stored as
// offset-binary codes: int8 value + 128 in a byte, int4 value + 8 in a
// nibble, a group's 64 nibbles in 32 bytes (byte j holds weight j in its
// low nibble and weight j + 32 in its high one). Rows are padded with zero
// weights to a whole number of groups.
//
// The own kernels run on a ThreadPool's dynamic task queue when given one
// (kernels/cpu/thread_pool.h). Which kernels this CPU can run is read at
// run time (core/util/cpu_info.h): the AMX ones only where the CPU has AMX
// and the OS grants the tile state.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/dtype.h"

namespace moebench {

// bf16 as the upper half of an fp32 (round to nearest even; NaN kept NaN).
uint16_t to_bf16(float f);
float from_bf16(uint16_t b);

struct ExpertShape {
  int64_t hidden = 0;  // model width (x and out)
  int64_t inter = 0;   // the expert's intermediate width
};

// The kernels run bf16, int8 and int4 weights (WeightDtype from
// core/config/dtype.h; fp16 is not supported by any of them).
inline const char* dtype_name(WeightDtype d) {
  return to_string(d);
}
// "bf16", "int8" or "int4"; throws moebench::Error naming them otherwise.
WeightDtype parse_weight_dtype(const std::string& s);

// The last token count "hybrid" gives the vector kernel (avx512-bf16);
// above it oneDNN runs. Measured on the development machine (docs/KERNELS.md).
inline constexpr int64_t kHybridSwitchTokens = 16;

// The switch points below are the named kernels' defaults and the fixed rule
// "auto" falls back on; with a calibrated profile "auto" switches where this
// machine's measurements say (kernels/cpu/kernel_choice.h).
// The last token count "avx512-amx-bf16" gives avx512-bf16-gemm; above it
// amx-bf16 runs. Measured on a 16-core Xeon with AMX (docs/KERNELS.md): the
// vector kernel faster at 1-3 tokens per expert, the tiles from 4 on
// (KTransformers, section 3.2: AVX-512 wins at four or fewer on theirs).
inline constexpr int64_t kAmxSwitchTokens = 3;
// The same for "avx512-amx-quant" (avx512-vnni-gemm up to it, amx-quant
// above), int8 and int4: on the same Xeon the VNNI kernel was faster or
// level at 8 tokens and the tiles faster from 16 on, for both dtypes, in
// both runs (docs/KERNELS.md).
inline constexpr int64_t kAmxQuantSwitchTokens = 8;
// The same for "avx512-amx-int8" (avx512-vnni-gemm up to it, amx-int8
// above), int8 and int4: on a 2-vCPU Xeon with AMX (2026-11-26,
// docs/KERNELS.md) amx-int8 was faster than the VNNI kernel from 3 tokens
// for int8 and from 16 for int4; 4 leaves each dtype at most 1.11x from
// the faster of the two at every count measured (8 would leave int8 1.35x
// at 8 tokens). A calibrated profile switches per dtype where the machine
// says (kernel_choice.h).
inline constexpr int64_t kAmxInt8SwitchTokens = 4;

// Column pairs per row block in the packed bf16 layout: the columns padded
// to whole blocks of 32 (one AMX tile's depth) with zero weights.
inline constexpr int64_t packed_pairs(int64_t cols) {
  return (cols + 31) / 32 * 16;
}

// Weights per quantisation group (one 512-bit VNNI operand of int8 codes).
inline constexpr int64_t kQuantGroup = 64;

// A [rows x cols] matrix of group-wise quantised weights (see above).
struct QuantMatrix {
  WeightDtype dtype = WeightDtype::kInt8;
  int64_t rows = 0, cols = 0;
  int64_t groups = 0;          // per row: ceil(cols / kQuantGroup)
  int64_t row_bytes = 0;       // groups * kQuantGroup (int8) or half that (int4)
  std::vector<uint8_t> codes;  // [rows x row_bytes]
  std::vector<float> scale;    // [rows x groups]
  // Quantises v ([rows x cols], row-major): scale = max |v| of the group
  // over 127 (int8) or 7 (int4), code = round(v / scale).
  static QuantMatrix quantise(const std::vector<float>& v, int64_t rows, int64_t cols,
                              WeightDtype dtype);
  int code(int64_t r, int64_t c) const;  // the signed value, -127..127 or -7..7
  float value(int64_t r, int64_t c) const {
    return float(code(r, c)) * scale[size_t(r * groups + c / kQuantGroup)];
  }
  // For the many-token kernel (avx512-vnni-gemm), filled by pack(): rows in
  // blocks of 16, each group's 64 columns as 16 quads of 4, the codes of a
  // quad [16 rows][4] (64 bytes) at [row block][group][quad]; int4: 32
  // bytes a quad, quads 2p and 2p + 1 interleaved in 64 bytes, byte j
  // holding code j of quad 2p in its low nibble and of quad 2p + 1 in its
  // high one (one load and three instructions unpack two quads); scales
  // [row block][group][16 rows]. Padding
  // rows and columns hold the offset (the value 0) and scale 0.
  std::vector<uint8_t> pcodes;
  std::vector<float> pscale;
  void pack();
};

struct ExpertWeights {
  ExpertShape shape;
  WeightDtype dtype = WeightDtype::kBf16;
  std::vector<uint16_t> gate, up;  // bf16: [inter x hidden]
  std::vector<uint16_t> down;      // bf16: [hidden x inter]
  QuantMatrix qgate, qup, qdown;   // int8 / int4, the same shapes
  // bf16, for the many-token kernel (avx512-bf16-gemm), packed once at load
  // by pack(): each matrix's rows in blocks of 16 and its columns in pairs,
  // [row block][column pair][16 rows][2 columns], rows padded to a multiple
  // of 16 and columns to a multiple of 32 (packed_pairs) with zeros; the
  // 16 pairs from a multiple of 16 on are one AMX B tile as they lie. int8 / int4: pack() fills
  // QuantMatrix::pcodes and pscale instead. Empty until packed; the
  // row-major arrays are kept (the reference reads them) unless the caller
  // drops them (release_unpacked).
  std::vector<uint16_t> pgate, pup, pdown;
  void pack();
  bool packed() const {
    return dtype == WeightDtype::kBf16 ? !pgate.empty() : !qgate.pcodes.empty();
  }
  // Frees the row-major weights once packed (only packed kernels can run then).
  void release_unpacked();
  // Weights uniform in +-1 / sqrt(fan-in), from a seeded generator, then
  // rounded to bf16 or quantised.
  static ExpertWeights random(ExpertShape s, WeightDtype dtype, uint64_t seed);
  // Bytes a kernel reads for one pass over the expert (codes and scales).
  int64_t weight_bytes() const;
  // Weight values as the kernels see them (the reference reads these).
  float gate_at(int64_t r, int64_t c) const;
  float up_at(int64_t r, int64_t c) const;
  float down_at(int64_t r, int64_t c) const;
};

class ThreadPool;
class ExpertKernel;
// Throws moebench::Error when `k` does not support `d`, naming both.
void require_dtype(const ExpertKernel& k, WeightDtype d);
// Throws moebench::Error when `k` reads packed weights and `e` is not packed.
void require_packed(const ExpertKernel& k, const ExpertWeights& e);

class ExpertKernel {
 public:
  virtual ~ExpertKernel() = default;
  virtual std::string name() const = 0;
  virtual bool supports(WeightDtype d) const = 0;
  // True when the kernel reads the packed weights (ExpertWeights::pack at load).
  virtual bool needs_packed() const { return false; }
  // out[t * hidden + i] += w[t] * FFN(x_t)[i] for t < tokens. Throws
  // moebench::Error when the kernel does not support e.dtype. With a pool,
  // the own kernels split the expert's rows across its threads (the result
  // is the same bit for bit); "onednn" uses oneDNN's own threads and
  // "reference" runs on the caller.
  void run(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
           ThreadPool* pool = nullptr) {
    require_dtype(*this, e.dtype);
    require_packed(*this, e);
    compute(e, x, tokens, w, out, pool);
  }

 protected:
  virtual void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w,
                       float* out, ThreadPool* pool) = 0;
};

// The kernels this CPU can run, in a fixed order ("reference" always).
std::vector<std::string> expert_kernels_available();

// Throws moebench::Error naming the kernels available here when `name` is
// unknown or needs an instruction set this CPU lacks.
std::unique_ptr<ExpertKernel> make_expert_kernel(const std::string& name);

// ||a - b|| / ||b|| over n values (0 when both are zero).
double normalised_error(const float* a, const float* b, int64_t n);

}  // namespace moebench
