// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/experiment/requests.h"

#include <sys/stat.h>

#include <cmath>

#include <fmt/format.h>
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

RequestsFile read(const std::filesystem::path& p, bool times = true, bool lengths = true,
                  int64_t context = 0) {
  return read_requests_file(p, p.filename().string(), {times, lengths, context});
}

TEST(Requests, PoissonAndGammaGapsHaveTheirMeanAndVariation) {
  WorkloadSpec w = served("poisson", 40000);
  w.rate = 4.0;
  auto [m, cv] = gap_stats(make_requests(w));
  EXPECT_NEAR(m, 0.25, 0.25 * 0.02);  // about 4 standard errors (0.5%)
  EXPECT_NEAR(cv, 1.0, 0.03);
  w.arrival = "gamma";
  for (double want : {0.5, 3.0}) {
    w.arrival_cv = want;
    std::tie(m, cv) = gap_stats(make_requests(w));
    EXPECT_NEAR(m, 0.25, 0.25 * 0.05) << "cv " << want;
    EXPECT_NEAR(cv, want, want * 0.1) << "cv " << want;
  }
}

// The ends of workload.arrival_cv's range: the sampler gives the stated mean
// and variation there (at 1e-300 it once looped for ever, at 1e300 it gave
// NaN times; both are now refused by the schema).
TEST(Requests, TheGammaSamplerHoldsItsMeanAndVariationAtBothEndsOfTheRange) {
  uint64_t state = 7;
  for (double cv : {kMinArrivalCv, kMaxArrivalCv}) {
    const int n = 400000;
    double sum = 0, sq = 0;
    for (int i = 0; i < n; ++i) {
      const double g = gamma_gap(2.0, cv, state);
      ASSERT_TRUE(std::isfinite(g) && g >= 0) << "cv " << cv << ": " << g;
      sum += g;
      sq += g * g;
    }
    const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
    // The mean's standard error is cv / sqrt(n) of it: 3% at cv 20.
    EXPECT_NEAR(mean, 0.5, 0.5 * std::max(0.002, 4 * cv / std::sqrt(double(n)))) << "cv " << cv;
    EXPECT_NEAR(sd / mean, cv, cv * 0.25) << "cv " << cv;
  }
}

TEST(Requests, TheSameSeedGivesTheSameRequestsAndBatchArrivesAtZero) {
  WorkloadSpec w = served("gamma", 50);
  w.rate = 2.0;
  w.lengths = "uniform";
  w.prompt_len_max = 40;
  w.decode_len_max = 9;
  const auto a = make_requests(w), b = make_requests(w);
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
  EXPECT_NE(make_requests(w)[0].arrival_s, a[0].arrival_s);
  for (const Request& r : make_requests(served("batch", 3))) EXPECT_EQ(r.arrival_s, 0.0);
}

// Drawn arrivals that spread past kMaxArrivalSpanS (a rate of 1e-300 once
// gave times the hardware profile was blamed for) are refused at the key.
TEST(Requests, ArrivalsSpreadPastTheSpanAreRefusedAtTheRate) {
  WorkloadSpec w = served("poisson", 3);
  w.rate = 1e-300;
  try {
    make_requests(w);
    ADD_FAILURE() << "a rate of 1e-300 accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "workload.rate") << e.what();
    EXPECT_NE(std::string(e.what()).find("within 1e+06 s"), std::string::npos) << e.what();
  }
  w.rate = 1e-5;  // 3 requests in about 3e5 s: inside
  EXPECT_EQ(make_requests(w).size(), 3u);
}

// Times are kept relative to the file's first request, from the digits the
// file writes: the same gaps from 0, from Unix-epoch seconds, and from
// 1e11 and 1e12 s (where a double of nanoseconds since 0 once lost them:
// TTFT 131.9, 118.0 and 46.0 ms for one workload) are the same requests.
TEST(Requests, TheSameGapsFromAnyEpochAreTheSameRequests) {
  testing::TempDir dir;
  std::vector<std::vector<double>> times;
  for (const char* start : {"0", "1733558400", "100000000000", "1000000000000"}) {
    std::string text;
    for (int i = 0; i < 6; ++i)
      text += fmt::format("{{\"arrival_time\": {}.{}, \"prompt_len\": 16, \"output_len\": 9}}\n",
                          start, i);
    const RequestsFile f = read(dir.write("a.jsonl", text), true, false);
    times.emplace_back();
    for (const RequestLine& q : f.requests) times.back().push_back(q.arrival_s);
    EXPECT_EQ(f.requests[0].arrival_s, 0.0);
  }
  for (size_t k = 1; k < times.size(); ++k) EXPECT_EQ(times[k], times[0]) << "start " << k;
  EXPECT_EQ(times[0][1], 0.1);
  EXPECT_EQ(times[0][5], 0.5);
  // Exponents and rounding below a nanosecond.
  const RequestsFile g =
      read(dir.write("e.jsonl",
                     "{\"arrival_time\": 1.7e9, \"prompt_len\": 1, \"output_len\": 1}\n"
                     "{\"arrival_time\": 1700000000.0000000016, \"prompt_len\": 1, "
                     "\"output_len\": 1}\n"
                     "{\"arrival_time\": 17000000005E-1, \"prompt_len\": 1, "
                     "\"output_len\": 1}\n"),
           true, false);
  EXPECT_EQ(g.requests[1].arrival_s, 2e-9);
  EXPECT_EQ(g.requests[2].arrival_s, 0.5);
  EXPECT_EQ(g.first_arrival_s, 1.7e9);
}

// output_len counts the tokens generated, the prefill's first one included,
// as vLLM's and SGLang's benchmarks do (16 asked once produced 17); the
// file's decode_len is moebench's own decode steps.
TEST(Requests, OutputLenCountsTheFirstTokenAsVllmDoes) {
  testing::TempDir dir;
  const RequestsFile f =
      read(dir.write("l.jsonl",
                     "{\"arrival_time\": 0, \"prompt_len\": 10, \"output_len\": 16}\n\n"
                     "{\"arrival_time\": 1.25, \"input_len\": 7, \"output_len\": 1}\n"
                     "{\"arrival_time\": 2, \"prompt_len\": 0, \"output_len\": 4}\n"
                     "{\"arrival_time\": 3, \"prompt_len\": 5, \"decode_len\": 4}\n"));
  ASSERT_EQ(f.requests.size(), 4u);
  EXPECT_EQ(f.requests[0].decode_len, 15);
  EXPECT_EQ(f.requests[1].prompt_len, 7);
  EXPECT_EQ(f.requests[1].decode_len, 0);
  EXPECT_EQ(f.requests[1].line, 3);
  EXPECT_EQ(f.requests[2].decode_len, 4);  // no prompt: every output token is a decode step
  EXPECT_EQ(f.requests[3].decode_len, 4);
  WorkloadSpec w = served("file", 4);
  w.lengths = "file";
  const auto r = make_requests(w, &f);
  EXPECT_EQ(r[0].decode_len, 15);
  EXPECT_EQ(r[1].arrival_s, 1.25);
}

// Each bad line is refused with the file, its line and its key.
TEST(Requests, BadLinesAreRefusedByFileLineAndKey) {
  testing::TempDir dir;
  const auto refused = [&](const std::string& text, const std::string& key, int line,
                           const std::string& expected, int64_t context = 0) {
    try {
      read(dir.write("bad.jsonl", text), true, true, context);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), key) << e.what();
      EXPECT_EQ(e.where().line, line) << e.what();
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.jsonl"), std::string::npos) << e.what();
    }
  };
  const std::string one = "{\"arrival_time\": 2, \"prompt_len\": 1, \"output_len\": 1}\n";
  const auto line2 = [&](const std::string& fields) { return one + "{" + fields + "}\n"; };
  refused(line2("\"arrival_time\": 1, \"prompt_len\": 1, \"output_len\": 1"), "arrival_time", 2,
          "in order");
  refused(line2("\"prompt_len\": 1, \"output_len\": 1"), "arrival_time", 2, "every request");
  refused(line2("\"arrival_time\": 3, \"prompt_len\": -4, \"output_len\": 1"), "prompt_len", 2,
          "from 0 to 1048576");
  refused(line2("\"arrival_time\": 3, \"prompt_len\": 4, \"output_len\": 0"), "output_len", 2,
          "from 1 to");
  refused(line2("\"arrival_time\": 3, \"prompt_len\": 4, \"output_len\": 2, \"decode_len\": 1"),
          "decode_len", 2, "both output_len and decode_len");
  refused(line2("\"arrival_time\": 3, \"prompt_len\": 4.0, \"output_len\": 2"), "prompt_len", 2,
          "whole number");
  refused(one + "not json\n", "workload.arrivals", 2, "JSON object");
  refused(one + "[1, 2]\n", "workload.arrivals", 2, "JSON object");
  // Lengths past the bound, 2^63 and past 64 bits (once slipped past the
  // context check by overflow, or asked for 9.2e18 tokens of memory).
  for (const char* n :
       {"1048577", "9223372036854775807", "9223372036854775808", "18446744073709551616", "1e30"}) {
    refused(line2(fmt::format("\"arrival_time\": 3, \"prompt_len\": {}, \"output_len\": 2", n)),
            "prompt_len", 2, "to 1048576");
  }
  refused(line2("\"arrival_time\": -1, \"prompt_len\": 1, \"output_len\": 1"), "arrival_time", 2,
          "from 0 to 1e+20");
  refused(line2("\"arrival_time\": \"3\", \"prompt_len\": 1, \"output_len\": 1"), "arrival_time", 2,
          "a number of seconds");
  refused(line2("\"arrival_time\": 1e308, \"prompt_len\": 1, \"output_len\": 1"), "arrival_time", 2,
          "from 0 to 1e+20");
  // Spread past the span: the hint names milliseconds when the times look like them.
  refused(line2("\"arrival_time\": 1000002.5, \"prompt_len\": 1, \"output_len\": 1"),
          "arrival_time", 2, "within 1e+06 s of the first (2 s)");
  refused(
      "{\"arrival_time\": 1733558400000, \"prompt_len\": 1, \"output_len\": 1}\n"
      "{\"arrival_time\": 1733562000000, \"prompt_len\": 1, \"output_len\": 1}\n",
      "arrival_time", 2, "look like milliseconds");
  // Longer than the model's context (prompt and decode steps together).
  refused(line2("\"arrival_time\": 3, \"prompt_len\": 90, \"output_len\": 12"), "prompt_len", 2,
          "context (100 tokens)", 100);
  EXPECT_EQ(read(dir.write("ok.jsonl", line2("\"arrival_time\": 3, \"prompt_len\": 90, "
                                             "\"output_len\": 11")),
                 true, true, 100)
                .requests.size(),
            2u);
}

// What a path is, is checked before it is opened: a FIFO once blocked for
// ever, /dev/zero was read as one endless line (4.4 GB after 8 s), a folder
// said "the file's requests (0)"; a Latin-1 byte once surfaced as "could not
// be written" from the run's result file.
TEST(Requests, AFifoADeviceAFolderAndBadBytesAreRefusedByName) {
  testing::TempDir dir;
  const auto refused = [&](const std::filesystem::path& p, const std::string& expected) {
    try {
      read(p);
      ADD_FAILURE() << "accepted: " << p;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), "workload.arrivals") << e.what();
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  refused(dir / "fifo", "a FIFO (named pipe)");
  refused("/dev/zero", "a character device");
  refused(dir.path(), "a directory");
  refused(dir / "missing.jsonl", "no such file");
  refused(dir.write("latin1.jsonl",
                    "{\"arrival_time\": 0, \"prompt_len\": 1, \"output_len\": 1}\n"
                    "{\"arrival_time\": 1, \"prompt_len\": 1, \"note\": \"caf\xe9\"}\n"),
          "byte 0xe9");
  try {
    read(dir / "latin1.jsonl");
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where().line, 2);
    EXPECT_EQ(std::string(e.what()).find('\xe9'), std::string::npos) << "the byte is shown escaped";
    EXPECT_NE(std::string(e.what()).find("caf\\xe9"), std::string::npos) << e.what();
  }
  refused(dir.write("utf16.jsonl", std::string("\xff\xfe{\0\"\0", 6)), "UTF-8");
  refused(dir.write("long.jsonl", std::string(kMaxRequestLineBytes + 1, ' ') + "x\n"),
          "at most 65536 bytes");
}

// The file read when a case runs must be the one the suite loaded.
TEST(Requests, AFileChangedSinceTheSuiteLoadedItFailsTheCase) {
  testing::TempDir dir;
  dir.write("a.jsonl", "{\"arrival_time\": 0, \"prompt_len\": 1, \"output_len\": 1}\n");
  WorkloadSpec w = served("file", 1);
  w.arrivals = "a.jsonl";
  w.arrivals_sha256 = read(dir / "a.jsonl", true, false).sha256;
  EXPECT_EQ(reread_requests_file(w, dir.path(), 0).requests.size(), 1u);
  dir.write("a.jsonl", "{\"arrival_time\": 5, \"prompt_len\": 1, \"output_len\": 1}\n");
  try {
    reread_requests_file(w, dir.path(), 0);
    ADD_FAILURE() << "a changed file accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("changed since"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moebench
