#include "workloads/calibrate/calibrate.h"

#include <gtest/gtest.h>

namespace moebench {
namespace {

// The committed presets meet every calibration target measured on their
// own model (direct), evaluated exactly as docs/calibration.md evaluates
// them. A proxy target (another model's measurement, e.g. Qwen3's cosines
// for DeepSeek-V3, which has none published) must lie within its range
// widened by half its half-width on each side: the report marks anything
// outside the exact range as out of range.
TEST(Calibration, CommittedPresetsMeetTheirTargets) {
  const auto paths = ConfigPaths::defaults();
  const FitOptions opt;
  for (const auto& fam : calibration_families()) {
    const ModelSpec m = load_model(calibration_model(fam), paths);
    const FamilyReport r = evaluate_family(fam, load_generator(fam, m, paths), paths, opt);
    EXPECT_FALSE(r.targets.empty()) << fam;
    for (const auto& t : r.targets) {
      if (t.target->pending_on(fam)) continue;  // reported, not fitted
      const bool direct = t.target->direct_family == fam;
      const double slack = direct ? 0.0 : 0.25 * (t.target->hi - t.target->lo);
      EXPECT_TRUE(t.achieved >= t.target->lo - slack && t.achieved <= t.target->hi + slack)
          << fam << ": " << t.target->id << (direct ? " (direct)" : " (proxy)") << " achieved "
          << t.achieved << ", range [" << t.target->lo << ", " << t.target->hi << "]";
    }
    for (const auto& c : r.checks)
      EXPECT_TRUE(c.holds || !c.check->required)
          << fam << ": " << c.check->id << ": " << c.evidence;
  }
}

// The fit's loss: the centring term plus range_weight times the squared
// excess beyond range_margin half-widths. With margin 0 the excess is the
// whole distance, so the loss is (1 + range_weight) times the centring
// term; with weight 0 it is the centring term alone.
TEST(Calibration, LossPenalisesLeavingTheRange) {
  const auto paths = ConfigPaths::defaults();
  const std::string fam = "deepseek-v2";
  const ModelSpec m = load_model(calibration_model(fam), paths);
  const GeneratorParams p = load_generator(fam, m, paths);
  FitOptions centre, all, beyond;
  centre.range_weight = 0;
  all.range_weight = 10;
  all.range_margin = 0;
  beyond.range_margin = 1.0;  // the default weight, only outside the range
  const double l0 = evaluate_family(fam, p, paths, centre).loss;
  EXPECT_GT(l0, 0);
  EXPECT_NEAR(evaluate_family(fam, p, paths, all).loss, 11 * l0, 1e-9 * l0);
  const FamilyReport r = evaluate_family(fam, p, paths, beyond);
  bool all_in = true;
  for (const auto& t : r.targets) all_in = all_in && (t.within || t.target->pending_on(fam));
  ASSERT_TRUE(all_in) << "the test needs a family with every target in range";
  EXPECT_DOUBLE_EQ(r.loss, l0);
}

TEST(Calibration, EveryTargetNamesItsSource) {
  for (const auto& t : calibration_targets()) {
    EXPECT_FALSE(t.source.empty()) << t.id;
    EXPECT_FALSE(t.published.empty()) << t.id;
    EXPECT_LT(t.lo, t.hi) << t.id;
    EXPECT_FALSE(t.families.empty()) << t.id;
  }
}

}  // namespace
}  // namespace moebench
