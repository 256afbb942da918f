// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The copy variants, attention paths, admission and prefetch rules alone, against fake engine
// ports.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "baselines/testing.h"
#include "core/engine/variants/admission.h"
#include "core/engine/variants/attention_path.h"
#include "core/engine/variants/copy_variant.h"
#include "core/engine/variants/late_prefetch.h"
#include "core/util/error.h"

namespace moebench {
namespace {

Transfer full_copy(const CostModel& c, TaskKind kind, double earliest = 0) {
  Transfer t;
  t.kind = kind;
  t.earliest_ns = earliest;
  t.duration_ns = c.h2d_expert_ns(1.0);
  t.bytes = c.expert_bytes();
  return t;
}

CopyRequest request(TaskKind kind, bool reduced_asked = false, bool evicts = false) {
  CopyRequest r;
  r.kind = kind;
  r.reduced_asked = reduced_asked;
  r.evicts_cached = evicts;
  return r;
}

TEST(CopyVariants, OnlyTheSettingsTurnedOnAreMadeInTheirOrder) {
  const ModelSpec m = testing::tiny_model();
  const HardwareProfile gpu = testing::round_hardware(), cpu_only = testing::round_hardware(false);
  ResidencySpec r;
  EXPECT_TRUE(CopyVariants(r, gpu).names().empty());
  r.writeback = r.one_stream = true;
  r.reduced_copy_ratio = 0.5;
  r.recopy_from_layer = 1;
  EXPECT_EQ(CopyVariants(r, gpu).names(), copy_variant_names());
  // Without a GPU there is no stream to share and nothing cached to copy again.
  EXPECT_EQ(CopyVariants(r, cpu_only).names(),
            (std::vector<std::string>{"reduced-copies", "writeback"}));
}

TEST(CopyVariants, ReducedCopiesShapeTheCopiesTheSettingsName) {
  ModelSpec m = testing::tiny_model();
  HardwareProfile h = testing::round_hardware();
  h.tables.clear();  // the roofline: a reduced copy's time shrinks with its bytes
  h.link.h2d_gbps = 1;
  h.link.latency_us = 1;
  const CostModel c(m, h);
  ResidencySpec r;
  r.reduced_copy_ratio = 0.25;
  const CopyVariants prefetch_only(r, h);
  Transfer t = full_copy(c, TaskKind::kDemandLoad);
  prefetch_only.shape(t, request(TaskKind::kDemandLoad), c, 0);
  EXPECT_FALSE(t.reduced);
  EXPECT_EQ(t.bytes, c.expert_bytes());
  t = full_copy(c, TaskKind::kPrefetchLoad);
  prefetch_only.shape(t, request(TaskKind::kPrefetchLoad, /*reduced_asked=*/true), c, 0);
  EXPECT_TRUE(t.reduced);
  EXPECT_EQ(t.bytes, std::llround(0.25 * double(c.expert_bytes())));
  EXPECT_DOUBLE_EQ(t.duration_ns, c.h2d_expert_ns(0.25));
  EXPECT_LT(t.duration_ns, c.h2d_expert_ns(1.0));
  r.reduced_demand_loads = true;
  const CopyVariants demand(r, h);
  EXPECT_DOUBLE_EQ(demand.copy_ns(TaskKind::kDemandLoad, false, c), c.h2d_expert_ns(0.25));
  EXPECT_DOUBLE_EQ(prefetch_only.copy_ns(TaskKind::kDemandLoad, false, c), c.h2d_expert_ns(1.0));
  // A swap or a re-copy is never reduced.
  t = full_copy(c, TaskKind::kSwapLoad);
  demand.shape(t, request(TaskKind::kSwapLoad, true), c, 0);
  EXPECT_FALSE(t.reduced);
}

TEST(CopyVariants, WritebackAddsTheEvictedExpertsCopyBackOnlyWhenItTakesACachedSlot) {
  const ModelSpec m = testing::tiny_model();
  const HardwareProfile h = testing::round_hardware();
  const CostModel c(m, h);
  ResidencySpec r;
  r.writeback = true;
  r.reduced_copy_ratio = 0.5;
  r.reduced_demand_loads = true;
  const CopyVariants v(r, h);
  Transfer t = full_copy(c, TaskKind::kDemandLoad);
  v.shape(t, request(TaskKind::kDemandLoad, false, /*evicts=*/false), c, 0);
  EXPECT_FALSE(t.writeback);
  EXPECT_DOUBLE_EQ(t.duration_ns, c.h2d_expert_ns(0.5));
  t = full_copy(c, TaskKind::kDemandLoad);
  v.shape(t, request(TaskKind::kDemandLoad, false, /*evicts=*/true), c, 0);
  EXPECT_TRUE(t.writeback);
  EXPECT_DOUBLE_EQ(t.duration_ns, c.h2d_expert_ns(0.5) + c.d2h_expert_ns());
  // The prefetch rule's estimate counts no write-back.
  EXPECT_DOUBLE_EQ(v.copy_ns(TaskKind::kDemandLoad, false, c), c.h2d_expert_ns(0.5));
}

TEST(CopyVariants, OneStreamPutsCopiesBehindGpuWorkAndGpuWorkBehindCopies) {
  const ModelSpec m = testing::tiny_model();
  const HardwareProfile h = testing::round_hardware();
  const CostModel c(m, h);
  ResidencySpec r;
  const CopyVariants none(r, h);
  r.one_stream = true;
  const CopyVariants one(r, h);
  Transfer t = full_copy(c, TaskKind::kPrefetchLoad, 3.0);
  none.shape(t, request(TaskKind::kPrefetchLoad), c, 10.0);
  EXPECT_EQ(t.earliest_ns, 3.0);
  one.shape(t, request(TaskKind::kPrefetchLoad), c, 10.0);
  EXPECT_EQ(t.earliest_ns, 10.0);
  double ready = 4.0;
  Waits w;
  none.gpu_task(&ready, &w, 9.0);
  EXPECT_EQ(ready, 4.0);
  one.gpu_task(&ready, &w, 9.0);
  EXPECT_EQ(ready, 9.0);
  EXPECT_EQ(w.copies_end, 9.0);
}

TEST(CopyVariants, RecopyFromItsLayerOn) {
  ResidencySpec r;
  r.recopy_from_layer = 2;
  const CopyVariants v(r, testing::round_hardware());
  EXPECT_FALSE(v.recopies_after(1));
  EXPECT_TRUE(v.recopies_after(2));
  EXPECT_TRUE(v.recopies_after(5));
  EXPECT_FALSE(CopyVariants(ResidencySpec{}, testing::round_hardware()).recopies_after(5));
}

// Records the tasks a path submits, each ending one unit after it may start
// (lanes are not modelled: the order and the waits are what is checked).
class FakePort final : public AttentionPort {
 public:
  FakePort(const ModelSpec& m, const HardwareProfile& h) : cost_(m, h) {}
  struct Task {
    Lane lane;
    TaskKind kind;
    double ready, dur;
    int32_t layer;
    Waits w;
  };
  double task(Lane lane, TaskKind kind, double ready, double dur, int32_t layer, const Waits& w,
              int64_t /*tokens*/) override {
    tasks.push_back({lane, kind, ready, dur, layer, w});
    return ready + dur;
  }
  int64_t last_task() const override { return int64_t(tasks.size()) - 1; }
  void attention_shape(int64_t task, const BatchState& /*b*/) override { shaped.push_back(task); }
  double kv_to_gpu(int32_t layer, const BatchState& /*b*/) override {
    kv_copies.push_back(layer);
    return 100.0;
  }
  const CostModel& cost() const override { return cost_; }
  Executor& executor() override { return exec_; }
  RunMetrics& metrics() override { return m_; }

  std::vector<Task> tasks;
  std::vector<int32_t> kv_copies;
  std::vector<int64_t> shaped;  // attention_shape's tasks
  RunMetrics m_;

 private:
  CostModel cost_;
  SimExecutor exec_;
};

TEST(AttentionPath, MadeByNameAndAnUnknownNameIsRefusedWithTheChoices) {
  for (const std::string& n : attention_path_names()) EXPECT_EQ(make_attention_path(n)->name(), n);
  try {
    make_attention_path("npu");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected one of gpu, cpu, gpu-host-kv, found \"npu\""),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(make_attention_path("gpu")->kv_on_host());
  EXPECT_TRUE(make_attention_path("cpu")->kv_on_host());
  EXPECT_TRUE(make_attention_path("gpu-host-kv")->kv_on_host());
}

// A strategy's residency.attention is checked when it is parsed, against the
// engine's list through the catalogue (the config layer has no list of its own).
TEST(AttentionPath, AStrategyNamingAnUnknownPathIsRefusedAtItsKey) {
  const auto parse = [](const std::string& path) {
    const cfg::Value v =
        cfg::parse_toml("name = \"s\"\n[residency]\nattention = \"" + path + "\"\n", "s.toml");
    return StrategySpec::parse(v, "strategy", &builtin_registry());
  };
  for (const std::string& n : attention_path_names()) EXPECT_EQ(parse(n).residency.attention, n);
  try {
    parse("npu");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "strategy.residency.attention") << e.what();
    EXPECT_EQ(e.where().line, 3) << e.what();
    EXPECT_NE(std::string(e.what()).find("one of 'gpu', 'cpu', 'gpu-host-kv'"), std::string::npos)
        << e.what();
  }
  // Without a catalogue (the config layer alone) the engine refuses it when the run starts.
  const cfg::Value v = cfg::parse_toml("name = \"s\"\nresidency.attention = \"npu\"\n", "s.toml");
  EXPECT_EQ(StrategySpec::parse(v, "strategy", nullptr).residency.attention, "npu");
}

// Each prefetch rule on one request whose copy would land 3 ns after its
// gate, a demand copy being 2 or 5 ns: before-gate drops it, before-demand
// only when a demand load issued at the gate would land before it.
TEST(LatePrefetchRule, EachRuleDropsWhatItsSettingSays) {
  EXPECT_EQ(late_prefetch_rule_names(),
            (std::vector<std::string>{"before-demand", "before-gate", "issue"}));
  for (const std::string& n : late_prefetch_rule_names())
    EXPECT_EQ(make_late_prefetch_rule(n)->name(), n);
  PrefetchLanding p;
  p.gate_ns = 100;
  p.lands_ns = 103;
  p.demand_copy_ns = 2;
  EXPECT_TRUE(make_late_prefetch_rule("before-gate")->too_late(p));
  EXPECT_TRUE(make_late_prefetch_rule("before-demand")->too_late(p));
  p.demand_copy_ns = 5;
  EXPECT_TRUE(make_late_prefetch_rule("before-gate")->too_late(p));
  EXPECT_FALSE(make_late_prefetch_rule("before-demand")->too_late(p));
  p.lands_ns = 100;  // on the gate: not late by either
  EXPECT_FALSE(make_late_prefetch_rule("before-gate")->too_late(p));
  EXPECT_FALSE(make_late_prefetch_rule("before-demand")->too_late(p));
  EXPECT_FALSE(make_late_prefetch_rule("issue")->drops());
  EXPECT_TRUE(make_late_prefetch_rule("before-gate")->drops());
  EXPECT_TRUE(make_late_prefetch_rule("before-demand")->drops());
  try {
    make_late_prefetch_rule("never");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "expected one of before-demand, before-gate, issue, found \"never\""),
              std::string::npos)
        << e.what();
  }
}

// residency.late_prefetch is checked when a strategy is parsed, against the
// engine's list through the catalogue.
TEST(LatePrefetchRule, AStrategyNamingAnUnknownRuleIsRefusedAtItsKey) {
  const auto parse = [](const std::string& rule) {
    const cfg::Value v =
        cfg::parse_toml("name = \"s\"\n[residency]\nlate_prefetch = \"" + rule + "\"\n", "s.toml");
    return StrategySpec::parse(v, "strategy", &builtin_registry());
  };
  for (const std::string& n : late_prefetch_rule_names())
    EXPECT_EQ(parse(n).residency.late_prefetch, n);
  try {
    parse("befor-gate");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "strategy.residency.late_prefetch") << e.what();
    EXPECT_EQ(e.where().line, 3) << e.what();
    EXPECT_NE(std::string(e.what()).find("one of 'before-demand', 'before-gate', 'issue'"),
              std::string::npos)
        << e.what();
  }
}

// An AdmissionPort that writes down what a rule asks, on one layer of a
// step of two tokens (layer 0: token 0 routes to experts 0 and 1, token 1 to
// 1 and 2). Experts in `cached_` hold a slot; a load is never staged.
class FakeAdmissionPort final : public AdmissionPort {
 public:
  FakeAdmissionPort(const FakeAdmissionPort&) = delete;
  FakeAdmissionPort()
      : src_(testing::routing(2, 4, 2, {{{0, 1}, {2, 3}}, {{1, 2}, {0, 3}}})),
        run_(src_, 0),
        step_(run_, Phase::kDecode) {
    step_.add(0, 0);
    step_.add(0, 1);
    step_.reveal(0);
  }
  int32_t layer() const override { return 0; }
  const std::vector<ActiveExpert>& active() const override { return active_; }
  const LayerPlan& plan() const override { return plan_; }
  const StepRouting& step() const override { return step_; }
  int32_t experts() const override { return 4; }
  bool cached(int32_t e) const override { return cached_.count(e) > 0; }
  void pin(int32_t e) override { log("pin", e); }
  std::vector<int32_t>& kept() override { return kept_; }
  bool load_on_demand(int32_t e) override {
    log("load", e, " kept", kept_);
    cached_.insert(e);
    return false;
  }
  void see_later_copies() override { calls.push_back("see"); }
  void compute(int32_t e, bool staged) override { log(staged ? "staged" : "compute", e); }
  void judge(int32_t e) override { log(cached(e) ? "hit" : "miss", e); }
  void admitting(std::span<const int32_t> order) override {
    log("turns", -1, "", std::vector<int32_t>(order.begin(), order.end()));
  }
  void admitted(int32_t e) override { log("turn", e); }
  void admitting_done() override { calls.push_back("done"); }

  LayerPlan plan_;
  std::vector<ActiveExpert> active_;
  std::set<int32_t> cached_;
  std::vector<std::string> calls;

 private:
  void log(const std::string& what, int32_t e, const std::string& tag = "",
           const std::vector<int32_t>& list = {}) {
    std::string c = what + (e >= 0 ? " " + std::to_string(e) : "") + tag;
    for (int32_t x : list) c += " " + std::to_string(x);
    calls.push_back(c);
  }
  MemoryTraceSource src_;
  RunRouting run_;
  StepRouting step_;
  std::vector<int32_t> kept_;
};

// The step's GPU experts 0, 1 and 2 in that order, 1 and 2 loaded on demand.
void two_loads(FakeAdmissionPort& p) {
  for (int32_t e : {0, 1, 2}) p.active_.push_back({e, 1, 0.5f, 0});
  p.plan_.gpu = {0, 1, 2};
  p.plan_.load = {1, 2};
  p.cached_ = {0};
}

std::vector<std::string> admit(const std::string& rule, bool pin_active_token,
                               FakeAdmissionPort& p) {
  ResidencySpec r;
  r.admission = rule;
  r.pin_active_token = pin_active_token;
  make_admission_rule(r)->run(p);
  return p.calls;
}

using Calls = std::vector<std::string>;

// at-gate with pin_active_token: every activated expert keeps its slot; the
// loads in link order, then the GPU experts in GPU order.
TEST(AdmissionRule, AtGatePinsTheActivatedExpertsThenLoadsThenComputes) {
  FakeAdmissionPort p;
  two_loads(p);
  EXPECT_EQ(admit("at-gate", true, p),
            (Calls{"pin 0", "pin 1", "pin 2", "load 1 kept 0 1 2", "load 2 kept 0 1 2", "compute 0",
                   "compute 1", "compute 2"}));
}

// at-gate without it (or with staging buffers): a walk of the GPU order, each
// expert loaded in its turn, keeping only the experts still to compute.
TEST(AdmissionRule, AtGateWalksTheGpuOrderWhenTheTokensExpertsAreNotPinned) {
  const Calls walk{"compute 0", "load 1 kept 1 2", "see", "compute 1", "load 2 kept 2",
                   "see",       "compute 2"};
  FakeAdmissionPort p;
  two_loads(p);
  EXPECT_EQ(admit("at-gate", false, p), walk);
  FakeAdmissionPort staged;
  two_loads(staged);
  staged.plan_.staging_buffers = 2;
  EXPECT_EQ(admit("at-gate", true, staged),
            (Calls{"compute 0", "load 1 kept 0 1 2", "see", "compute 1", "load 2 kept 0 1 2", "see",
                   "compute 2"}));
  ResidencySpec r;
  EXPECT_TRUE(at_gate_admission(r)->judges_at_gate());
}

// one-at-a-time: the routing order (0, 1, 2), each judged in its turn, a GPU
// expert loaded when absent and computed before the next; a CPU expert is
// judged and not admitted.
TEST(AdmissionRule, OneAtATimeJudgesAndAdmitsInRoutingOrder) {
  FakeAdmissionPort p;
  two_loads(p);
  p.plan_.gpu = {2, 0};  // expert 1 on the CPU
  p.plan_.load = {2};
  EXPECT_EQ(admit("one-at-a-time", false, p),
            (Calls{"turns 0 1 2", "turn 0", "hit 0", "compute 0", "turn 1", "miss 1", "turn 2",
                   "miss 2", "load 2 kept", "compute 2", "done"}));
  ResidencySpec r;
  EXPECT_FALSE(one_at_a_time_admission(r)->judges_at_gate());
  r.pin_active_token = true;  // refused: a load in turn may evict the token's other expert
  EXPECT_THROW(one_at_a_time_admission(r), Error);
}

TEST(AdmissionRule, MadeByNameAndAStrategyNamingAnUnknownRuleIsRefusedAtItsKey) {
  EXPECT_EQ(admission_rule_names(), (std::vector<std::string>{"at-gate", "one-at-a-time"}));
  ResidencySpec r;
  for (const std::string& n : admission_rule_names()) {
    r.admission = n;
    EXPECT_EQ(make_admission_rule(r)->name(), n);
  }
  r.admission = "at-once";
  try {
    make_admission_rule(r);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("expected one of at-gate, one-at-a-time, found \"at-once\""),
        std::string::npos)
        << e.what();
  }
  const cfg::Value v =
      cfg::parse_toml("name = \"s\"\n[residency]\nadmission = \"one-at-a-tim\"\n", "s.toml");
  try {
    StrategySpec::parse(v, "strategy", &builtin_registry());
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "strategy.residency.admission") << e.what();
    EXPECT_EQ(e.where().line, 3) << e.what();
    EXPECT_NE(std::string(e.what()).find("one of 'at-gate', 'one-at-a-time'"), std::string::npos)
        << e.what();
  }
}

struct Batch {
  Batch()
      : src(testing::routing(2, 4, 2, {{{0, 1}, {2, 3}}, {{1, 2}, {0, 3}}})), run(src, 0), b(run) {
    b.step.reset(Phase::kDecode);
    b.step.add(0, 0);
    b.step.add(0, 1);
    b.tokens.slot = {0, 0};
    b.tokens.pos = {0, 1};
    b.tokens.sequences = 1;
    b.sequences = 1;
    b.context = 2;
    b.layer_ready_ns = 5.0;
  }
  MemoryTraceSource src;
  RunRouting run;
  MicroBatch b;
};

TEST(AttentionPath, EachPathIssuesItsTasksInItsLanesInOrder) {
  const ModelSpec m = testing::tiny_model();
  const HardwareProfile h = testing::cpu_attention_hardware();
  {
    FakePort port(m, h);
    Batch x;
    make_attention_path("gpu")->issue(0, 0, x.b, port);
    ASSERT_EQ(port.tasks.size(), 1u);
    EXPECT_EQ(port.tasks[0].lane, Lane::kGpu);
    EXPECT_EQ(port.tasks[0].ready, 5.0);
    EXPECT_EQ(port.shaped, std::vector<int64_t>{0});  // whole on the GPU: a replay runs it
    int64_t task = -9;
    double gpu_ns = -1;
    EXPECT_EQ(make_attention_path("gpu")->finish(0, 2, x.b, &task, &gpu_ns, port), x.b.att_end);
    EXPECT_EQ(task, 0);
    EXPECT_EQ(port.tasks.size(), 1u);  // nothing left to run
  }
  {
    FakePort port(m, h);
    Batch x;
    const auto path = make_attention_path("cpu");
    path->issue(0, 1, x.b, port);
    const std::vector<Lane> lanes = {Lane::kGpu, Lane::kD2H, Lane::kCpu, Lane::kActH2D};
    ASSERT_EQ(port.tasks.size(), lanes.size());
    for (size_t i = 0; i < lanes.size(); ++i) {
      EXPECT_EQ(port.tasks[i].lane, lanes[i]) << i;
      EXPECT_EQ(port.tasks[i].layer, 1);
      if (i > 0) {  // each waits for the one before it
        EXPECT_EQ(port.tasks[i].w.task[0], int64_t(i) - 1);
        EXPECT_EQ(port.tasks[i].ready, port.tasks[i - 1].ready + port.tasks[i - 1].dur);
      }
    }
    EXPECT_GT(port.m_.d2h_bytes, 0);
    EXPECT_GT(port.m_.act_h2d_bytes, 0);
    int64_t task = -9;
    double gpu_ns = -1;
    const double end = path->finish(1, 2, x.b, &task, &gpu_ns, port);
    ASSERT_EQ(port.tasks.size(), 5u);  // the GPU's output projection and router after the return
    EXPECT_EQ(port.tasks[4].lane, Lane::kGpu);
    EXPECT_EQ(port.tasks[4].ready, x.b.att_end);
    EXPECT_EQ(task, 4);
    EXPECT_EQ(end, port.tasks[4].ready + port.tasks[4].dur);
    EXPECT_DOUBLE_EQ(gpu_ns, port.tasks[0].dur + port.tasks[4].dur);
    EXPECT_TRUE(port.shaped.empty());  // its GPU tasks are parts of the attention
  }
  {
    FakePort port(m, h);
    Batch x;
    make_attention_path("gpu-host-kv")->issue(0, 1, x.b, port);
    EXPECT_EQ(port.kv_copies, std::vector<int32_t>{1});
    ASSERT_EQ(port.tasks.size(), 2u);
    EXPECT_EQ(port.tasks[0].lane, Lane::kGpu);
    EXPECT_EQ(port.tasks[0].ready, 100.0);  // after its KV entries land
    EXPECT_EQ(port.tasks[0].w.copies_end, 100.0);
    EXPECT_EQ(port.tasks[1].lane, Lane::kD2H);  // the new entries back to the host
    EXPECT_EQ(port.tasks[1].w.task[0], 0);
    EXPECT_EQ(port.shaped, std::vector<int64_t>{0});
    EXPECT_EQ(port.m_.d2h_bytes, 2 * m.kv_bytes_per_token());
  }
}

TEST(AttentionPath, OnlyAHostKvCacheStoresAPrefillsEntries) {
  const ModelSpec m = testing::tiny_model();
  const HardwareProfile h = testing::round_hardware();
  for (const std::string& n : attention_path_names()) {
    FakePort port(m, h);
    make_attention_path(n)->store_kv(7.0, 3, 0, 4, port);
    EXPECT_EQ(port.tasks.size(), n == "gpu" ? 0u : 1u) << n;
    if (n != "gpu") {
      EXPECT_EQ(port.tasks[0].lane, Lane::kD2H);
      EXPECT_EQ(port.tasks[0].ready, 7.0);
      EXPECT_EQ(port.m_.d2h_bytes, 4 * m.kv_bytes_per_token());
    }
  }
}

}  // namespace
}  // namespace moebench
