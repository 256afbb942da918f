// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// predictor = "random": a seeded random score per expert, drawn afresh for
// every (step, target layer, offset). With a prefetcher it is DALI Fig. 16a's
// "Random" prefetching: the top-`size` experts by score are uniformly random
// ones. Deterministic: the same seed gives the same draws on any machine.
#include "core/util/detmath.h"
#include "predictors/components.h"

namespace moebench {

const cfg::Schema<RandomPredictor::Params>& RandomPredictor::Params::schema() {
  static const cfg::Schema<Params> s = [] {
    cfg::Schema<Params> s("strategy.predictor");
    s.integer("seed", &Params::seed, "Seed of the draws.", cfg::at_least(0));
    return s;
  }();
  return s;
}

void RandomPredictor::predict(const Context& ctx, int32_t target, int64_t offset,
                              std::span<float> scores) {
  uint64_t rng =
      det::mix(det::mix(det::mix(uint64_t(p_.seed), uint64_t(ctx.step)), uint64_t(target)),
               uint64_t(offset) ^ 0x72616e646f6dull);
  // Scores in [0, 1): below the router predictors' one-token workload, and
  // distinct almost surely, so the ranking is a uniform random permutation.
  for (auto& s : scores) s += float(det::uniform01(rng));
}

}  // namespace moebench
