// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/kernel_registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "core/util/error.h"
#include "kernels/cpu/kernel_choice.h"

namespace moebench {
namespace {

bool computes(const ExpertKernelInfo& k, WeightDtype d) {
  return std::find(k.dtypes.begin(), k.dtypes.end(), d) != k.dtypes.end();
}

TEST(KernelRegistry, NamesAreUniqueAndEveryRowIsComplete) {
  std::set<std::string> seen;
  for (const auto& k : expert_kernel_registry()) {
    EXPECT_TRUE(seen.insert(k.name).second) << k.name;
    EXPECT_NE(k.supported, nullptr) << k.name;
    EXPECT_NE(k.make, nullptr) << k.name;
    EXPECT_FALSE(k.dtypes.empty()) << k.name;
    EXPECT_FALSE(k.summary.empty()) << k.name;
    // A switching row names two other rows that compute its dtypes.
    EXPECT_EQ(k.takes_switch_point, !k.few.empty() && !k.many.empty()) << k.name;
    if (k.takes_switch_point) {
      const ExpertKernelInfo* few = find_expert_kernel(k.few);
      const ExpertKernelInfo* many = find_expert_kernel(k.many);
      ASSERT_TRUE(few != nullptr && many != nullptr) << k.name;
      EXPECT_FALSE(few->takes_switch_point || many->takes_switch_point) << k.name;
      for (WeightDtype d : k.dtypes) EXPECT_TRUE(computes(*few, d) && computes(*many, d)) << k.name;
    }
  }
  EXPECT_TRUE(seen.count("reference"));
}

// The table as JSON (moebench kernels --json; analysis/kernels.py) says
// what the rows and the fixed rule of "auto" say.
TEST(KernelRegistry, TheJsonIsTheTable) {
  const auto j = nlohmann::json::parse(expert_kernel_table_json());
  const auto& rows = expert_kernel_registry();
  ASSERT_EQ(j["kernels"].size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = j["kernels"][i];
    EXPECT_EQ(r["name"], rows[i].name);
    EXPECT_EQ(r["runs_here"], rows[i].supported(cpu_info()));
    EXPECT_EQ(r["auto_candidate"], rows[i].auto_candidate);
    EXPECT_EQ(r["few"], rows[i].few);
    EXPECT_EQ(r["switch_tokens"], rows[i].switch_tokens);
    EXPECT_EQ(r["dtypes"].size(), rows[i].dtypes.size());
  }
  for (WeightDtype d : {WeightDtype::kBf16, WeightDtype::kInt8}) {
    const std::string a = j["auto"][to_string(d)];
    try {
      EXPECT_EQ(a, auto_expert_kernel(d));
    } catch (const Error&) {
      EXPECT_EQ(a.rfind("none: ", 0), 0u) << a;
    }
  }
}

TEST(KernelRegistry, TheAvailableListAndTheFactoryAgree) {
  const auto avail = expert_kernels_available();
  ASSERT_FALSE(avail.empty());
  EXPECT_EQ(avail.front(), "reference");  // every CPU, first
  for (const auto& name : avail) {
    const auto k = make_expert_kernel(name);
    EXPECT_EQ(k->name(), name);
    const ExpertKernelInfo* info = find_expert_kernel(name);
    ASSERT_NE(info, nullptr);
    for (WeightDtype d : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
      EXPECT_EQ(k->supports(d), computes(*info, d)) << name << " " << to_string(d);
    }
  }
  // A kernel of the table this CPU lacks is refused, as is an unknown name
  // (it once fell through to oneDNN).
  for (const auto& k : expert_kernel_registry()) {
    if (std::find(avail.begin(), avail.end(), k.name) == avail.end()) {
      EXPECT_THROW(make_expert_kernel(k.name), Error) << k.name;
    }
  }
  EXPECT_THROW(make_expert_kernel("avx512-bf17"), Error);
  EXPECT_THROW(make_expert_kernel("hybridx"), Error);
  EXPECT_THROW(make_expert_kernel("reference:4"), Error);  // takes no switch point
}

TEST(KernelRegistry, SwitchPointsOnlyWhereTheTableSaysSo) {
  for (const auto& k : expert_kernel_registry()) {
    const ExpertKernelInfo* f = find_expert_kernel(k.name + ":7");
    if (k.takes_switch_point) {
      ASSERT_NE(f, nullptr) << k.name;
      EXPECT_EQ(f->name, k.name);
      if (k.supported(cpu_info())) {
        EXPECT_EQ(make_expert_kernel(k.name + ":7")->name(), k.name + ":7");
      }
    } else {
      EXPECT_EQ(f, nullptr) << k.name;
    }
  }
}

TEST(KernelRegistry, AutoIsTheHighestRankedKernelThisCpuRunsForTheDtype) {
  const auto avail = expert_kernels_available();
  for (WeightDtype d : {WeightDtype::kBf16, WeightDtype::kInt8, WeightDtype::kInt4}) {
    int best = 0;
    std::string want;
    for (const auto& k : expert_kernel_registry()) {
      if (computes(k, d) && k.auto_rank > best &&
          std::find(avail.begin(), avail.end(), k.name) != avail.end()) {
        best = k.auto_rank;
        want = k.name;
      }
    }
    if (want.empty()) {
      EXPECT_THROW(auto_expert_kernel(d), Error);
    } else {
      EXPECT_EQ(auto_expert_kernel(d), want) << to_string(d);
      EXPECT_TRUE(make_expert_kernel(want)->supports(d));
    }
    // The candidates a calibrated "auto" times: marked so, run here, compute d.
    for (const auto& c : auto_candidates(d)) {
      const ExpertKernelInfo* info = find_expert_kernel(c);
      ASSERT_NE(info, nullptr);
      EXPECT_TRUE(info->auto_candidate && computes(*info, d) && info->supported(cpu_info())) << c;
      EXPECT_TRUE(make_expert_kernel(c)->needs_packed()) << c;
    }
  }
  EXPECT_THROW(auto_expert_kernel(WeightDtype::kFp16), Error);
}

}  // namespace
}  // namespace moebench
