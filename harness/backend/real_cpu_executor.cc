// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "harness/backend/real_cpu_executor.h"

#include "harness/backend/real_cpu_blocks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "core/util/cancel.h"
#include "core/util/error.h"
#include "core/util/memory.h"

namespace moebench {

RealFootprint real_footprint(const ModelSpec& model, const RealCpuOptions& opt) {
  RealFootprint f;
  const double budget = opt.weights_gib * double(int64_t(1) << 30);
  // As the buffers are sized below: the shared experts take up to a quarter
  // of the budget (at least two), the routed ones the rest (at least two),
  // and one seed of each is built unpacked, then packed.
  const double expert = double(model.expert_bytes());
  const double shared_one = double(model.shared_bytes());
  const double shared =
      model.shared_experts > 0
          ? std::max(2 * shared_one,
                     std::min(0.25 * budget, shared_one * double(model.moe_layers())))
          : 0.0;
  const double routed = std::max(
      2 * expert, std::min(std::max(0.0, budget - shared),
                           expert * double(model.moe_layers()) * double(model.routed_experts)));
  f.experts = routed + shared + 2 * std::max(expert, shared_one);
  const BlocksFootprint b = blocks_footprint(model, opt.weights_gib, opt.plan_sequences,
                                             opt.plan_positions, opt.plan_step_tokens);
  f.block_buffers = b.buffers;
  f.blocks = double(uint64_t(b.buffers) * (b.block_weights + b.kv_cache));
  f.other = double(b.lm_head + b.dense_ffn + b.scratch + b.packing);
#if defined(__SANITIZE_ADDRESS__)
  constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  constexpr bool kAsan = true;
#else
  constexpr bool kAsan = false;
#endif
#else
  constexpr bool kAsan = false;
#endif
  if (kAsan) f.sanitizer = (f.experts + f.blocks + f.other) / 8 + double(int64_t(256) << 20);
  return f;
}

RealCpuExecutor::RealCpuExecutor(const ModelSpec& model, const RealCpuOptions& opt)
    : model_(model), opt_(opt) {
  const WeightDtype dt = model.expert_dtype;
  if (dt == WeightDtype::kFp16) {
    throw Error(fmt::format(
        "model.expert_dtype: expected bf16, int8 or int4 for the real backend, found fp16 "
        "(model '{}')",
        model.name));
  }
  kernel_name_ = opt.kernel == "auto" ? auto_expert_kernel(dt) : opt.kernel;
  try {
    kernel_ = make_expert_kernel(kernel_name_);
    require_dtype(*kernel_, dt);
  } catch (const Error& e) {
    throw Error(fmt::format("suite.real_kernel = \"{}\" (model '{}', expert_dtype {}): {}",
                            opt.kernel, model.name, to_string(dt), e.what()));
  }
  if (opt.kernel == "auto") {
    kernel_note_ = fmt::format(
        "auto: no measured kernel times for {} {} in the hardware profile, the fixed rule's {} "
        "(moebench "
        "calibrate measures them)",
        model.name, to_string(dt), kernel_name_);
    if (!opt.auto_timings.empty()) use_auto_timings(opt.auto_timings);
  }
  if (opt.threads < 1) {
    throw Error(
        fmt::format("suite.real_threads: expected at least 1 thread, found {}", opt.threads));
  }
  pool_ = std::make_unique<ThreadPool>(opt.threads, opt.spin_us);

  // Everything the run will hold against the memory this machine has free,
  // before even the first expert is generated and packed (seconds for a
  // large expert): DeepSeek-V3 at the default 4 GiB once passed a check of
  // 4 + 1 GiB and peaked at 11.8 GB. Checked again below with the packed
  // sizes, and by the blocks when a run begins.
  {
    constexpr double kGiB = double(int64_t(1) << 30);
    const RealFootprint f = real_footprint(model, opt);
    check_allocation(
        uint64_t(std::min(f.total(), 1e18)) + (uint64_t(1) << 30),
        fmt::format(
            "suite.real_weights_gib = {} (model '{}': about {:.2f} GiB of expert buffers, {:.2f} "
            "GiB of attention blocks for {} of {} layers with their KV caches ({} sequences x {} "
            "positions), {:.2f} GiB of lm head, dense FFN, scratch and packing{}, plus 1 GiB for "
            "the rest of the run; lower real_weights_gib or the workload)",
            opt.weights_gib, model.name, f.experts / kGiB, f.blocks / kGiB, f.block_buffers,
            model.num_layers, opt.plan_sequences, opt.plan_positions, f.other / kGiB,
            f.sanitizer > 0 ? fmt::format(", {:.2f} GiB of AddressSanitizer shadow and quarantine",
                                          f.sanitizer / kGiB)
                            : std::string()));
  }
  // One expert's values per shape, copied into every buffer; packed at load
  // for a kernel that reads the packed layout, which is then the only copy.
  auto seed = [&](ExpertShape s, uint64_t sd) {
    ExpertWeights e = ExpertWeights::random(s, dt, sd);
    if (kernel_->needs_packed()) {
      e.pack();
      e.release_unpacked();
    }
    return e;
  };
  const ExpertWeights routed_seed = seed({model.hidden_size, model.expert_intermediate}, opt.seed);
  const double budget = opt.weights_gib * double(int64_t(1) << 30);
  const int64_t experts = int64_t(model.moe_layers()) * model.routed_experts;
  double routed_budget = budget;
  std::unique_ptr<ExpertWeights> shared_seed;
  int64_t n_shared = 0;
  if (model.shared_experts > 0 && model.shared_intermediate > 0) {
    // Shared experts of a layer as one expert of their summed width (the sum
    // of their outputs is that expert's output; Qwen2's scalar sigmoid gate
    // is not executed).
    shared_seed = std::make_unique<ExpertWeights>(
        seed({model.hidden_size, model.shared_intermediate * model.shared_experts}, opt.seed + 1));
    const double bytes = double(shared_seed->weight_bytes());
    n_shared = std::clamp<int64_t>(int64_t(0.25 * budget / bytes), 2,
                                   std::max<int64_t>(2, model.moe_layers()));
    routed_budget = std::max(0.0, budget - double(n_shared) * bytes);
  }
  const int64_t n = std::clamp<int64_t>(int64_t(routed_budget / double(routed_seed.weight_bytes())),
                                        2, std::max<int64_t>(2, experts));
  // The budget against the memory this machine has free, before allocating
  // (100000 GiB once grew to 23.5 GB and was killed), with 1 GiB left for
  // the rest of the run.
  const uint64_t routed_bytes = uint64_t(n) * routed_seed.weight_bytes();
  const uint64_t shared_bytes = shared_seed ? uint64_t(n_shared) * shared_seed->weight_bytes() : 0;
  check_allocation(
      routed_bytes + shared_bytes + (uint64_t(1) << 30),
      fmt::format(
          "suite.real_weights_gib = {} (model '{}': {} routed expert buffers of {:.1f} MiB and "
          "{} shared, {:.2f} GiB, plus 1 GiB for the rest of the run; lower real_weights_gib)",
          opt.weights_gib, model.name, n, double(routed_seed.weight_bytes()) / (1 << 20), n_shared,
          double(routed_bytes + shared_bytes) / double(int64_t(1) << 30)));
  // Copied one buffer at a time so that SIGINT/SIGTERM stops a long
  // allocation promptly (core/util/cancel.h).
  shared_.reserve(size_t(n_shared));
  for (int64_t i = 0; i < n_shared; ++i) {
    throw_if_cancelled();
    shared_.push_back(*shared_seed);
  }
  routed_.reserve(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    throw_if_cancelled();
    routed_.push_back(routed_seed);
  }
}

void RealCpuExecutor::use_auto_timings(const std::vector<KernelTiming>& timings) {
  const std::string where = fmt::format("auto kernel (model '{}', expert_dtype {})", model_.name,
                                        to_string(model_.expert_dtype));
  if (opt_.kernel != "auto") {
    throw InternalError(fmt::format("{}: measured times given to kernel '{}'", where, opt_.kernel));
  }
  try {
    const auto avail = expert_kernels_available();
    for (const auto& t : timings) {
      if (std::find(avail.begin(), avail.end(), t.kernel) == avail.end()) {
        throw Error(
            fmt::format("expected kernels this CPU runs ({}), found measured times of '{}' (a "
                        "profile calibrated on another "
                        "machine? run moebench calibrate on this one)",
                        fmt::join(avail, ", "), t.kernel));
      }
    }
    const auto segs = fastest_kernels(timings);
    auto k = make_segmented_kernel("auto[" + describe(segs) + "]", segs);
    require_dtype(*k, model_.expert_dtype);
    if (k->needs_packed() != kernel_->needs_packed()) {
      throw Error(fmt::format("expected kernels that read the weights as {} does ({}), found {}",
                              kernel_name_, kernel_->needs_packed() ? "packed" : "unpacked",
                              describe(segs)));
    }
    std::vector<std::string> names;
    for (const auto& t : timings) names.push_back(t.kernel);
    kernel_note_ = fmt::format(
        "auto: the fastest at each token count of {} as measured in the hardware profile",
        fmt::join(names, ", "));
    kernel_name_ = k->name();
    kernel_ = std::move(k);
  } catch (const Error& e) {
    throw Error(fmt::format("{}, hardware kernel_time: {}", where, e.what()));
  }
}

double RealCpuExecutor::time_routed_with(ExpertKernel& k, int64_t buffer, int64_t tokens) {
  if (tokens <= 0) return 0;
  throw_if_cancelled();
  ensure_tokens(tokens);
  const ExpertWeights& e = routed_[size_t(buffer % int64_t(routed_.size()))];
  std::fill(out_.begin(), out_.begin() + tokens * model_.hidden_size, 0.0f);
  const auto t0 = std::chrono::steady_clock::now();
  k.run(e, x_.data(), tokens, w_.data(), out_.data(), pool_.get());
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
}

void RealCpuExecutor::ensure_tokens(int64_t tokens) {
  if (tokens <= max_tokens_) return;
  const int64_t H = model_.hidden_size;
  std::mt19937_64 rng(opt_.seed + 7);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  x_.resize(size_t(tokens * H));
  for (auto& v : x_) v = d(rng);
  w_.assign(size_t(tokens), 1.0f / 8.0f);
  out_.assign(size_t(tokens * H), 0.0f);
  max_tokens_ = tokens;
}

template <class F>
double RealCpuExecutor::timed(TaskKind kind, int32_t layer, int32_t expert, int64_t tokens, F&& f) {
  throw_if_cancelled();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const auto t1 = std::chrono::steady_clock::now();
  const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  if (record_) {
    TaskRecord r;
    r.lane = Lane::kCpu;
    r.kind = kind;
    r.start_ns = std::chrono::duration<double, std::nano>(t0 - epoch_).count();
    r.end_ns = std::chrono::duration<double, std::nano>(t1 - epoch_).count();
    r.seq = int64_t(measured_.size());
    r.step = step_;
    r.layer = layer;
    r.expert = expert;
    r.tokens = tokens;
    measured_.push_back(r);
  }
  ++tasks_;
  measured_ns_ += ns;
  return ns;
}

double RealCpuExecutor::run(const ExpertWeights& e, int64_t tokens, TaskKind kind, int32_t layer,
                            int32_t expert) {
  if (tokens <= 0) return 0;
  ensure_tokens(tokens);
  std::fill(out_.begin(), out_.begin() + tokens * model_.hidden_size, 0.0f);
  return timed(kind, layer, expert, tokens,
               [&] { kernel_->run(e, x_.data(), tokens, w_.data(), out_.data(), pool_.get()); });
}

double RealCpuExecutor::cpu_expert_ns(const CostModel&, int32_t layer, int32_t expert,
                                      int64_t tokens, bool) {
  const int64_t slot = (int64_t(layer) * model_.routed_experts + expert) % int64_t(routed_.size());
  return run(routed_[size_t(slot)], tokens, TaskKind::kCpuExpert, layer, expert);
}

double RealCpuExecutor::shared_experts_ns(const CostModel& c, int32_t layer, int64_t tokens) {
  if (shared_.empty()) return c.gpu_shared_ns(tokens);  // 0: the model has none
  return run(shared_[size_t(layer % int64_t(shared_.size()))], tokens, TaskKind::kSharedExperts,
             layer, -1);
}

void RealCpuExecutor::begin_run(int64_t max_sequences, int64_t max_positions,
                                int64_t max_step_tokens, bool record) {
  // The blocks' buffers are kept for the next run of the same shape (the
  // case's repetitions); a larger shape allocates them again.
  if (!blocks_ || blocks_->max_sequences() < max_sequences ||
      blocks_->max_positions() < max_positions || blocks_->max_step_tokens() < max_step_tokens) {
    blocks_.reset();
    blocks_ =
        std::make_unique<RealCpuBlocks>(model_, opt_.weights_gib, max_sequences, max_positions,
                                        max_step_tokens, pool_.get(), opt_.seed);
  }
  record_ = record;
  measured_.clear();
  step_ = -1;
  epoch_ = std::chrono::steady_clock::now();
}

namespace {

RealCpuBlocks& need(const std::unique_ptr<RealCpuBlocks>& b, const char* what) {
  if (!b) throw InternalError(fmt::format("RealCpuExecutor::{} before begin_run", what));
  return *b;
}

}  // namespace

double RealCpuExecutor::attention_ns(int32_t block, const StepTokens& tokens, double) {
  RealCpuBlocks& b = need(blocks_, "attention_ns");
  return timed(TaskKind::kAttention, std::max(-1, block - int32_t(model_.first_dense_layers)), -1,
               tokens.size(), [&] { b.attention(block, tokens); });
}

double RealCpuExecutor::dense_ffn_ns(int32_t block, int64_t tokens, double) {
  RealCpuBlocks& b = need(blocks_, "dense_ffn_ns");
  return timed(TaskKind::kDenseFfn, -1, -1, tokens, [&] { b.dense_ffn(block, tokens); });
}

double RealCpuExecutor::lm_head_ns(int64_t tokens, double) {
  RealCpuBlocks& b = need(blocks_, "lm_head_ns");
  return timed(TaskKind::kLmHead, -1, -1, tokens, [&] { b.lm_head(tokens); });
}

std::vector<std::string> RealCpuExecutor::notes() const {
  const double gib = double(int64_t(1) << 30);
  const double routed_gib = double(routed_.size()) * double(routed_.front().weight_bytes()) / gib;
  const double shared_gib =
      shared_.empty() ? 0.0 : double(shared_.size()) * double(shared_.front().weight_bytes()) / gib;
  std::string blocks = "attention, norms, router, dense FFN and lm head not run (no step began)";
  if (blocks_) {
    blocks = fmt::format(
        "attention ({}), norms, router{} and lm head executed with the {} dense kernels ({} block "
        "buffers for {} "
        "blocks, {:.2f} GiB with the KV cache and lm head; rotary embedding not applied)",
        model_.attention == AttentionKind::kMla ? "MLA, absorbed" : "grouped-query",
        model_.first_dense_layers > 0 ? fmt::format(", dense FFN ({})", blocks_->dense_kernel())
                                      : std::string(),
        to_string(blocks_->isa()), blocks_->buffers(), model_.num_layers, blocks_->gib());
  }
  return {fmt::format(
      "real backend: routed{} experts executed with kernel {}{} on {} threads ({} routed buffers, "
      "{:.2f} GiB{}); {}",
      shared_.empty() ? "" : " and shared", kernel_name_,
      kernel_note_.empty() ? std::string() : " (" + kernel_note_ + ")", pool_->threads(),
      routed_.size(), routed_gib,
      shared_.empty() ? ""
                      : fmt::format(", {} shared buffers, {:.2f} GiB", shared_.size(), shared_gib),
      blocks)};
}

}  // namespace moebench
