// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/kernel_choice.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "core/util/error.h"

namespace moebench {

namespace {

void check_timing(const KernelTiming& t) {
  if (t.tokens.empty() || t.tokens.size() != t.time_us.size()) {
    throw Error(fmt::format(
        "kernel timing '{}': expected as many times as token counts (at least one), found {} "
        "token counts and {} times",
        t.kernel, t.tokens.size(), t.time_us.size()));
  }
  for (size_t i = 0; i < t.tokens.size(); ++i) {
    if (!(t.tokens[i] >= 1) || (i > 0 && !(t.tokens[i] > t.tokens[i - 1]))) {
      throw Error(fmt::format(
          "kernel timing '{}': expected ascending token counts >= 1, found {} at position {}",
          t.kernel, t.tokens[i], i));
    }
    if (!(t.time_us[i] >= 0) || !std::isfinite(t.time_us[i])) {
      throw Error(
          fmt::format("kernel timing '{}': expected a finite time >= 0 us, found {} at {} tokens",
                      t.kernel, t.time_us[i], t.tokens[i]));
    }
  }
}

}  // namespace

double timing_at(const KernelTiming& t, double tokens) {
  const auto& x = t.tokens;
  const auto& y = t.time_us;
  if (tokens <= x.front()) return y.front();
  if (tokens >= x.back()) return y.back() * tokens / x.back();
  const size_t j = size_t(std::upper_bound(x.begin(), x.end(), tokens) - x.begin());
  const double f = (tokens - x[j - 1]) / (x[j] - x[j - 1]);
  return y[j - 1] + f * (y[j] - y[j - 1]);
}

std::vector<KernelSegment> fastest_kernels(const std::vector<KernelTiming>& timings) {
  if (timings.empty())
    throw Error("kernel choice: expected at least one kernel's timing, found none");
  double last = 1;
  for (const auto& t : timings) {
    check_timing(t);
    last = std::max(last, t.tokens.back());
  }
  std::vector<KernelSegment> out;
  for (int64_t T = 1; T <= int64_t(std::ceil(last)); ++T) {
    size_t best = 0;
    double best_us = timing_at(timings[0], double(T));
    for (size_t i = 1; i < timings.size(); ++i) {
      const double us = timing_at(timings[i], double(T));
      if (us < best_us) {
        best = i;
        best_us = us;
      }
    }
    if (out.empty() || out.back().kernel != timings[best].kernel)
      out.push_back({T, timings[best].kernel});
  }
  return out;
}

std::string describe(const std::vector<KernelSegment>& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) o += ", ";
    if (i + 1 < s.size()) {
      const int64_t end = s[i + 1].first_tokens - 1;
      o += end == s[i].first_tokens ? fmt::format("{} {}", s[i].kernel, end)
                                    : fmt::format("{} {}-{}", s[i].kernel, s[i].first_tokens, end);
    } else {
      o += fmt::format("{} {}+", s[i].kernel, s[i].first_tokens);
    }
  }
  return o;
}

namespace {

class SegmentedKernel final : public ExpertKernel {
 public:
  // kernels[i] runs segs[i] (made by the caller; segs[i].kernel names it).
  SegmentedKernel(std::string name, std::vector<KernelSegment> segs,
                  std::vector<std::unique_ptr<ExpertKernel>> kernels)
      : name_(std::move(name)), segs_(std::move(segs)), kernels_(std::move(kernels)) {
    if (segs_.empty() || segs_.front().first_tokens != 1) {
      throw Error(fmt::format(
          "segmented kernel '{}': expected segments from 1 token per expert on, found {}", name_,
          segs_.empty() ? std::string("none") : describe(segs_)));
    }
    if (kernels_.size() != segs_.size()) {
      throw InternalError(fmt::format("segmented kernel '{}': {} kernels for {} segments", name_,
                                      kernels_.size(), segs_.size()));
    }
    for (size_t i = 0; i < segs_.size(); ++i) {
      if (i > 0 && segs_[i].first_tokens <= segs_[i - 1].first_tokens) {
        throw Error(
            fmt::format("segmented kernel '{}': expected ascending first token counts, found {}",
                        name_, describe(segs_)));
      }
      if (kernels_[i]->needs_packed() != kernels_.front()->needs_packed()) {
        throw Error(
            fmt::format("segmented kernel '{}': expected kernels that all read the packed weights "
                        "or none, found {} "
                        "({}) beside {} ({})",
                        name_, segs_[i].kernel, kernels_[i]->needs_packed() ? "packed" : "unpacked",
                        segs_[0].kernel, kernels_.front()->needs_packed() ? "packed" : "unpacked"));
      }
    }
  }
  std::string name() const override { return name_; }
  bool supports(WeightDtype d) const override {
    return std::all_of(kernels_.begin(), kernels_.end(),
                       [&](const auto& k) { return k->supports(d); });
  }
  bool needs_packed() const override { return kernels_.front()->needs_packed(); }
  size_t index(int64_t tokens) const {
    size_t i = 0;
    while (i + 1 < segs_.size() && tokens >= segs_[i + 1].first_tokens) ++i;
    return i;
  }
  const std::string& kernel_for(int64_t tokens) const { return segs_[index(tokens)].kernel; }

 protected:
  void compute(const ExpertWeights& e, const float* x, int64_t tokens, const float* w, float* out,
               ThreadPool* pool) override {
    kernels_[index(tokens)]->run(e, x, tokens, w, out, pool);
  }

 private:
  std::string name_;
  std::vector<KernelSegment> segs_;
  std::vector<std::unique_ptr<ExpertKernel>> kernels_;
};

}  // namespace

std::unique_ptr<ExpertKernel> make_segmented_kernel(const std::string& name,
                                                    const std::vector<KernelSegment>& segments) {
  std::vector<std::unique_ptr<ExpertKernel>> kernels;
  if (segments.empty() || segments.front().first_tokens != 1)
    return std::make_unique<SegmentedKernel>(name, segments,
                                             std::move(kernels));  // refused, naming the segments
  for (const auto& s : segments) kernels.push_back(make_expert_kernel(s.kernel));
  return std::make_unique<SegmentedKernel>(name, segments, std::move(kernels));
}

std::unique_ptr<ExpertKernel> make_switch_kernel(const std::string& name, int64_t last_few,
                                                 std::unique_ptr<ExpertKernel> few,
                                                 std::unique_ptr<ExpertKernel> many) {
  std::vector<KernelSegment> segs;
  std::vector<std::unique_ptr<ExpertKernel>> kernels;
  if (last_few >= 1) {  // 0: the many-token kernel from 1 token on
    segs.push_back({1, few->name()});
    kernels.push_back(std::move(few));
  }
  if (last_few <
      std::numeric_limits<int64_t>::max()) {  // else every count is the few-token kernel's
    segs.push_back({last_few + 1, many->name()});
    kernels.push_back(std::move(many));
  }
  return std::make_unique<SegmentedKernel>(name, std::move(segs), std::move(kernels));
}

std::string kernel_for(const ExpertKernel& k, int64_t tokens) {
  if (const auto* s = dynamic_cast<const SegmentedKernel*>(&k)) return s->kernel_for(tokens);
  return k.name();
}

}  // namespace moebench
