// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/requests/requests.h"

#include <cmath>

#include <gtest/gtest.h>

#include "core/testing/temp_dir.h"
#include "core/util/error.h"

namespace moebench {
namespace {

WorkloadSpec served(const std::string& arrival, int64_t n) {
  WorkloadSpec w;
  w.arrival = arrival;
  w.scheduler = "continuous";
  w.sequences = n;
  w.prompt_len = 16;
  w.decode_len = 8;
  return w;
}

// Mean and coefficient of variation of the gaps between arrivals.
std::pair<double, double> gap_stats(const std::vector<Request>& r) {
  double m = 0, v = 0, prev = 0;
  std::vector<double> g;
  for (const Request& q : r) {
    g.push_back(q.arrival_s - prev);
    prev = q.arrival_s;
  }
  for (double x : g) m += x / double(g.size());
  for (double x : g) v += (x - m) * (x - m) / double(g.size() - 1);
  return {m, std::sqrt(v) / m};
}

TEST(Requests, PoissonAndGammaGapsHaveTheirMeanAndVariation) {
  WorkloadSpec w = served("poisson", 40000);
  w.rate = 4.0;
  auto [m, cv] = gap_stats(make_requests(w, "."));
  EXPECT_NEAR(m, 0.25, 0.25 * 0.02);  // about 4 standard errors (0.5%)
  EXPECT_NEAR(cv, 1.0, 0.03);
  w.arrival = "gamma";
  for (double want : {0.5, 3.0}) {
    w.arrival_cv = want;
    std::tie(m, cv) = gap_stats(make_requests(w, "."));
    EXPECT_NEAR(m, 0.25, 0.25 * 0.05) << "cv " << want;
    EXPECT_NEAR(cv, want, want * 0.1) << "cv " << want;
  }
}

TEST(Requests, TheSameSeedGivesTheSameRequestsAndBatchArrivesAtZero) {
  WorkloadSpec w = served("gamma", 50);
  w.rate = 2.0;
  w.lengths = "uniform";
  w.prompt_len_max = 40;
  w.decode_len_max = 9;
  const auto a = make_requests(w, "."), b = make_requests(w, ".");
  ASSERT_EQ(a.size(), 50u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].prompt_len, b[i].prompt_len);
    EXPECT_GE(a[i].prompt_len, 16);
    EXPECT_LE(a[i].prompt_len, 40);
    EXPECT_GE(a[i].decode_len, 8);
    EXPECT_LE(a[i].decode_len, 9);
    if (i) {
      EXPECT_GE(a[i].arrival_s, a[i - 1].arrival_s);
    }
  }
  w.seed = 2;
  EXPECT_NE(make_requests(w, ".")[0].arrival_s, a[0].arrival_s);
  for (const Request& r : make_requests(served("batch", 3), ".")) EXPECT_EQ(r.arrival_s, 0.0);
}

TEST(Requests, AFileGivesTimesAndLengthsAndBadLinesAreRefusedByFileLineAndKey) {
  testing::TempDir dir;
  dir.write("ok.jsonl",
            "{\"arrival_time\": 0.5, \"prompt_len\": 10, \"output_len\": 3}\n\n"
            "{\"arrival_time\": 1.25, \"input_len\": 7, \"output_len\": 0}\n");
  WorkloadSpec w = served("file", 2);
  w.lengths = "file";
  w.arrivals = "ok.jsonl";
  const auto r = make_requests(w, dir.path());
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].arrival_s, 1.25);
  EXPECT_EQ(r[0].prompt_len, 10);
  EXPECT_EQ(r[1].prompt_len, 7);
  EXPECT_EQ(r[1].decode_len, 0);
  const auto refused = [&](const std::string& text, const std::string& key, int line,
                           const std::string& expected) {
    dir.write("bad.jsonl", text);
    w.arrivals = "bad.jsonl";
    try {
      make_requests(w, dir.path());
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), key) << e.what();
      EXPECT_EQ(e.where().line, line) << e.what();
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.jsonl"), std::string::npos) << e.what();
    }
  };
  const std::string one = "{\"arrival_time\": 2, \"prompt_len\": 1, \"output_len\": 1}\n";
  refused(one + "{\"arrival_time\": 1, \"prompt_len\": 1, \"output_len\": 1}\n", "arrival_time", 2,
          "in order");
  refused(one + "{\"prompt_len\": 1, \"output_len\": 1}\n", "arrival_time", 2, "every request");
  refused(one + "{\"arrival_time\": 3, \"prompt_len\": -4, \"output_len\": 1}\n", "prompt_len", 2,
          ">= 0");
  refused(one + "not json\n", "workload.arrivals", 2, "JSON object");
  refused(one, "workload.sequences", 0, "at most the file's requests (1)");
  // A request longer than the model's context (prompt and output together).
  dir.write("long.jsonl", one + "{\"arrival_time\": 3, \"prompt_len\": 90, \"output_len\": 11}\n");
  w.arrivals = "long.jsonl";
  EXPECT_EQ(make_requests(w, dir.path(), 101).size(), 2u);
  try {
    make_requests(w, dir.path(), 100);
    ADD_FAILURE() << "a request of 101 tokens accepted with a context of 100";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "prompt_len") << e.what();
    EXPECT_EQ(e.where().line, 2) << e.what();
    EXPECT_NE(std::string(e.what()).find("context (100 tokens)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("90 + 11 = 101"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moebench
