// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Hand-computed timelines of the execution core on small cases (2 layers,
// 4 experts): attention 1 us, CPU expert 10 us, GPU expert 2 us, transfer
// 5 us (see baselines/testing.h).

#include <map>

#include <gtest/gtest.h>

#include "baselines/testing.h"

namespace moebench {
namespace {

using testing::round_hardware;
using testing::routing;
using testing::run;
using testing::strategy;
using testing::tasks;
using testing::tiny_model;

constexpr double us = 1000.0;

// The strategy is refused at creation with an error containing `expected`.
void expect_refused(const StrategySpec& spec, const std::string& expected) {
  try {
    StrategyInstance::create(spec, builtin_registry());
    ADD_FAILURE() << "strategy accepted; expected a refusal containing: " << expected;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST(EngineTimeline, AllCpuRunsExpertsOneAfterAnother) {
  // One decode token: layer 0 experts {0, 1}, layer 1 experts {2, 3}.
  const auto src = routing(2, 4, 2, {{{0, 1}, {2, 3}}});
  const auto r = run(tiny_model(), round_hardware(), strategy("all-cpu"), src);
  const auto cpu = tasks(r, Lane::kCpu, TaskKind::kCpuExpert);
  ASSERT_EQ(cpu.size(), 4u);
  // attention [0,1]; CPU experts [1,11], [11,21]; layer 1 attention [21,22]; experts [22,32],
  // [32,42].
  EXPECT_DOUBLE_EQ(cpu[0].start_ns, 1 * us);
  EXPECT_DOUBLE_EQ(cpu[1].end_ns, 21 * us);
  EXPECT_DOUBLE_EQ(cpu[2].start_ns, 22 * us);
  EXPECT_DOUBLE_EQ(cpu[3].end_ns, 42 * us);
  ASSERT_EQ(r.metrics.tbt_ms.size(), 1u);
  EXPECT_DOUBLE_EQ(r.metrics.tbt_ms[0], 0.042);
  EXPECT_EQ(r.metrics.cpu_expert_tokens, 4);
  EXPECT_EQ(r.metrics.token_accesses[1], 4);
  EXPECT_EQ(r.metrics.token_hits[1], 0);
}

// The hardware's hand-off term (a contention term): a task that waits for a
// task of another lane starts that long after its end; a wait on its own
// lane costs nothing more. All-CPU on a machine with a GPU: the CPU experts
// wait for the activations' copy to the host (d2h lane), the next layer's
// attention (GPU lane) for their way back.
TEST(EngineTimeline, AHandOffAcrossLanesDelaysTheTaskThatWaits) {
  const auto src = routing(2, 4, 2, {{{0, 1}, {2, 3}}});
  HardwareProfile h = round_hardware();
  h.link.latency_us = 1;  // activation copies of 1 us (drawn in the timeline)
  const auto plain = run(tiny_model(), h, strategy("all-cpu"), src);
  h.contention = {{"handoff", 1.0, 3.0, "test"}};
  const auto r = run(tiny_model(), h, strategy("all-cpu"), src);
  const auto to_cpu = tasks(r, Lane::kD2H, TaskKind::kActToCpu);
  const auto cpu = tasks(r, Lane::kCpu, TaskKind::kCpuExpert);
  const auto back = tasks(r, Lane::kActH2D, TaskKind::kActToGpu);
  ASSERT_EQ(cpu.size(), 4u);
  ASSERT_FALSE(to_cpu.empty());
  ASSERT_FALSE(back.empty());
  // Across lanes: 3 us after the copy it waits for; then on the CPU's own lane: no hand-off.
  EXPECT_DOUBLE_EQ(cpu[0].start_ns, to_cpu[0].end_ns + 3 * us);
  EXPECT_DOUBLE_EQ(cpu[1].start_ns, cpu[0].end_ns);
  EXPECT_DOUBLE_EQ(back[0].start_ns, cpu[1].end_ns + 3 * us);
  EXPECT_GT(r.metrics.tbt_ms[0], plain.metrics.tbt_ms[0]);
  const auto plain_cpu = tasks(plain, Lane::kCpu, TaskKind::kCpuExpert);
  EXPECT_DOUBLE_EQ(plain_cpu[0].start_ns, tasks(plain, Lane::kD2H, TaskKind::kActToCpu)[0].end_ns);
}

TEST(EngineTimeline, GpuExpertWaitsForItsTransfer) {
  // Cache of 2 slots per layer holding experts {0, 1}. The token uses {0, 2}
  // in layer 0: expert 0 hits, expert 2 is loaded into expert 1's slot (the
  // LRU victim; 0 is in use). Layer 1 uses {0, 1}: both hit.
  const auto src = routing(2, 4, 2, {{{0, 2}, {0, 1}}});
  const auto r =
      run(tiny_model(), round_hardware(), strategy("gpu-ondemand", "lru", "uniform", 2), src);
  const auto gpu = tasks(r, Lane::kGpu, TaskKind::kGpuExpert);
  const auto h2d = tasks(r, Lane::kH2D, TaskKind::kDemandLoad);
  ASSERT_EQ(h2d.size(), 1u);
  EXPECT_EQ(h2d[0].expert, 2);
  EXPECT_DOUBLE_EQ(h2d[0].start_ns, 1 * us);  // issued at the gate
  EXPECT_DOUBLE_EQ(h2d[0].end_ns, 6 * us);
  ASSERT_EQ(gpu.size(), 4u);
  EXPECT_EQ(gpu[0].expert, 0);  // cached expert first: [1, 3]
  EXPECT_DOUBLE_EQ(gpu[0].end_ns, 3 * us);
  EXPECT_EQ(gpu[1].expert, 2);  // waits for its copy: [6, 8]
  EXPECT_DOUBLE_EQ(gpu[1].start_ns, 6 * us);
  EXPECT_DOUBLE_EQ(gpu[1].end_ns, 8 * us);
  // Layer 1: attention [8, 9], experts 0 and 1 [9, 11], [11, 13].
  EXPECT_DOUBLE_EQ(gpu[3].end_ns, 13 * us);
  EXPECT_DOUBLE_EQ(r.metrics.tbt_ms[0], 0.013);
  EXPECT_DOUBLE_EQ(r.metrics.bd_wait_cache_ns, 3 * us);
  EXPECT_EQ(r.metrics.token_hits[1], 3);
  EXPECT_EQ(r.metrics.demand_loads, 1);
}

// The gpu-under-copy term: two demand loads in layer 0 ([1, 6] and [6, 11]);
// expert 2 computes while expert 3's copy runs ([6, 8]) and takes factor
// times longer; expert 3, after every copy, and layer 1 (no copy) do not.
// `pin`: residency.pin_active_token (false: a walk, each expert loaded when
// its turn comes).
void expect_expert_slowed_by_the_next_copy(bool pin) {
  const auto src = routing(2, 4, 2, {{{2, 3}, {0, 1}}});
  HardwareProfile h = round_hardware();
  auto sg = strategy("gpu-ondemand", "lru", "uniform", 2);
  sg.residency.pin_active_token = pin;
  const auto plain = tasks(run(tiny_model(), h, sg, src), Lane::kGpu, TaskKind::kGpuExpert);
  h.contention = {{"gpu-under-copy", 2.0, 0.0, "test"}};
  const auto r = run(tiny_model(), h, sg, src);
  const auto gpu = tasks(r, Lane::kGpu, TaskKind::kGpuExpert);
  const auto h2d = tasks(r, Lane::kH2D, TaskKind::kDemandLoad);
  ASSERT_EQ(h2d.size(), 2u);
  ASSERT_EQ(gpu.size(), 4u);
  EXPECT_DOUBLE_EQ(h2d[1].start_ns, 6 * us);
  EXPECT_DOUBLE_EQ(h2d[1].end_ns, 11 * us);
  EXPECT_DOUBLE_EQ(plain[0].start_ns, 6 * us);
  EXPECT_DOUBLE_EQ(plain[0].end_ns, 8 * us);
  EXPECT_DOUBLE_EQ(gpu[0].start_ns, 6 * us);
  EXPECT_DOUBLE_EQ(gpu[0].end_ns, 10 * us);  // 2 us, all of it during the copy: 4 us
  EXPECT_DOUBLE_EQ(gpu[1].start_ns, 11 * us);
  EXPECT_DOUBLE_EQ(gpu[1].end_ns - gpu[1].start_ns, 2 * us);
  EXPECT_DOUBLE_EQ(gpu[3].end_ns - gpu[3].start_ns, 2 * us);
  EXPECT_DOUBLE_EQ(r.metrics.task_ns[size_t(TaskKind::kGpuExpert)], 10 * us);  // 4 + 2 + 2 + 2
  // The CPU term does not touch a GPU expert.
  h.contention = {{"cpu-under-copy", 2.0, 0.0, "test"}};
  const auto c = tasks(run(tiny_model(), h, sg, src), Lane::kGpu, TaskKind::kGpuExpert);
  EXPECT_DOUBLE_EQ(c[0].end_ns, plain[0].end_ns);
}

// Every active expert pinned: the layer's loads are issued before its GPU
// experts, so expert 3's copy is on the link when expert 2 is submitted (the
// term sees the copies queued at that moment).
TEST(EngineTimeline, AnExpertDuringACopyIsSlowedByTheUnderCopyTerm) {
  expect_expert_slowed_by_the_next_copy(true);
}

// In a walk expert 3's copy is issued after expert 2 was submitted, and
// expert 2, the last task then, is stretched for it all the same.
TEST(EngineTimeline, AWalksExpertIsSlowedByTheLoadIssuedAfterIt) {
  expect_expert_slowed_by_the_next_copy(false);
}

// The cpu-under-copy term: each CPU expert takes factor (2) times longer
// for the part of it that copies overlap, whenever they were issued; returns
// how many CPU experts a copy of `kind` overlaps.
int cpu_experts_slowed_by_copies(const StrategySpec& sg, TaskKind kind) {
  const auto src = routing(2, 4, 2, {{{2, 3}, {2, 3}}});
  HardwareProfile h = round_hardware();
  const auto plain = run(tiny_model(), h, sg, src);
  h.contention = {{"cpu-under-copy", 2.0, 0.0, "test"}};
  const auto r = run(tiny_model(), h, sg, src);
  const auto cpu = tasks(r, Lane::kCpu, TaskKind::kCpuExpert);
  const auto plain_cpu = tasks(plain, Lane::kCpu, TaskKind::kCpuExpert);
  std::vector<TaskRecord> copies;
  for (const TaskRecord& t : r.timeline)
    if (t.lane == Lane::kH2D) copies.push_back(t);
  if (cpu.empty() || copies.empty() || cpu.size() != plain_cpu.size()) {
    ADD_FAILURE() << cpu.size() << " CPU experts (" << plain_cpu.size() << " without the term), "
                  << copies.size() << " copies";
    return 0;
  }
  int slowed = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    // dur = base + (2 - 1) x the copies' time inside [start, start + base].
    const double base = plain_cpu[i].end_ns - plain_cpu[i].start_ns;
    const double from = cpu[i].start_ns, to = cpu[i].start_ns + base;
    double overlap = 0;
    for (const TaskRecord& c : copies)
      overlap += std::max(0.0, std::min(c.end_ns, to) - std::max(c.start_ns, from));
    EXPECT_NEAR(cpu[i].end_ns - cpu[i].start_ns, base + overlap, 1e-6) << i;
    for (const TaskRecord& c : copies)
      slowed += c.kind == kind && std::min(c.end_ns, to) > std::max(c.start_ns, from);
  }
  EXPECT_EQ(tasks(r, Lane::kGpu, TaskKind::kGpuExpert).size(),
            tasks(plain, Lane::kGpu, TaskKind::kGpuExpert).size());
  return slowed;
}

// HybriMoE's scheduler runs an uncached expert on the CPU (10 us) while it
// copies another for the GPU (5 us).
TEST(EngineTimeline, ACpuExpertBesideACopyIsSlowedByTheUnderCopyTerm) {
  EXPECT_GT(cpu_experts_slowed_by_copies(strategy("hybrimoe", "lru", "uniform", 2),
                                         TaskKind::kDemandLoad),
            0);
}

// A prefetch issued at the gate, after the layer's GPU side was submitted,
// copies while the CPU expert computes: the expert sees it too.
TEST(EngineTimeline, ACpuExpertSeesThePrefetchesIssuedAtItsLayersGate) {
  auto sg = strategy("hybrimoe", "lru", "uniform", 2);
  sg.prefetcher = testing::component("next-layer");
  sg.prefetcher.params.set("size", cfg::Value::integer(2, Where{"<test>"}), Where{"<test>"});
  sg.predictor = testing::component("oracle");
  EXPECT_GT(cpu_experts_slowed_by_copies(sg, TaskKind::kPrefetchLoad), 0);
}

// The components plan with the profile's estimate (hardware.planning), the
// tasks take the cost model's time. Fiddler runs an expert on the GPU when
// its GPU time plus its copy (2 + 5 us) is at most its CPU time (10 us):
// every uncached expert goes to the GPU. Told that CPU experts take half
// their time (5 us), it runs them on the CPU, where each takes 10 us.
TEST(EnginePlanning, ComponentsPlanWithTheEstimateAndTasksTakeTheModelsTime) {
  const auto src = routing(2, 4, 2, {{{2, 3}, {2, 3}}});
  HardwareProfile h = round_hardware();
  const auto sg = strategy("fiddler", "lru", "uniform", 2);
  const auto exact = run(tiny_model(), h, sg, src);
  EXPECT_TRUE(tasks(exact, Lane::kCpu, TaskKind::kCpuExpert).empty());
  EXPECT_EQ(tasks(exact, Lane::kGpu, TaskKind::kGpuExpert).size(), 4u);
  h.planning.cpu_expert = 0.5;
  const auto r = run(tiny_model(), h, sg, src);
  const auto cpu = tasks(r, Lane::kCpu, TaskKind::kCpuExpert);
  ASSERT_EQ(cpu.size(), 4u);
  for (const TaskRecord& t : cpu) EXPECT_DOUBLE_EQ(t.end_ns - t.start_ns, 10 * us);
  EXPECT_TRUE(tasks(r, Lane::kGpu, TaskKind::kGpuExpert).empty());
  // Copies estimated at twice their time: the GPU's 2 + 10 us is above the CPU's 10 us.
  h.planning.cpu_expert = 1.0;
  h.planning.expert_copy = 2.0;
  EXPECT_EQ(tasks(run(tiny_model(), h, sg, src), Lane::kCpu, TaskKind::kCpuExpert).size(), 4u);
  // Another profile's costs: a CPU expert table of 4 us a token.
  auto fast = std::make_shared<HardwareProfile>(round_hardware());
  fast->tables[0].time_us = {4, 8, 16};
  h.planning = PlanningSpec{};
  h.planning.preset = "fast";
  h.planning.estimate = fast;
  const auto other = run(tiny_model(), h, sg, src);
  const auto cpu2 = tasks(other, Lane::kCpu, TaskKind::kCpuExpert);
  ASSERT_EQ(cpu2.size(), 4u);
  EXPECT_DOUBLE_EQ(cpu2[0].end_ns - cpu2[0].start_ns, 10 * us);
  // A preset named but not resolved is an internal error, never this profile's costs.
  h.planning.estimate = nullptr;
  EXPECT_THROW(run(tiny_model(), h, sg, src), InternalError);
}

TEST(EngineTimeline, PrefillBreakdownAddsUpToTheMoeTime) {
  // The previous test's token as a one-token prompt, then one decode token.
  // Prefill: layer 0 waits 3 us for expert 2's copy (PCIe) and computes two
  // GPU experts (4 us); layer 1 computes two (4 us); nothing on the CPU.
  const auto src = routing(2, 4, 2, {{{0, 2}, {0, 1}}, {{0, 2}, {0, 1}}}, 1);
  const auto g =
      run(tiny_model(), round_hardware(), strategy("gpu-ondemand", "lru", "uniform", 2), src);
  EXPECT_DOUBLE_EQ(g.metrics.pbd_wait_pcie_ns, 3 * us);
  EXPECT_DOUBLE_EQ(g.metrics.pbd_gpu_compute_ns, 8 * us);
  EXPECT_DOUBLE_EQ(g.metrics.pbd_wait_cpu_ns, 0.0);
  EXPECT_EQ(g.metrics.prefill_expert_pairs, 4);
  EXPECT_EQ(g.metrics.prefill_gpu_expert_pairs, 4);
  EXPECT_DOUBLE_EQ(g.metrics.bd_wait_cache_ns, 0.0);  // decode: everything cached
  // Every expert on the CPU: the MoE part of each prefill layer is CPU wait
  // (two 10 us experts per layer); the ratio column reads 0 GPU share.
  const auto c = run(tiny_model(), round_hardware(), strategy("all-cpu"), src);
  EXPECT_DOUBLE_EQ(c.metrics.pbd_wait_cpu_ns, 40 * us);
  EXPECT_DOUBLE_EQ(c.metrics.pbd_wait_pcie_ns + c.metrics.pbd_gpu_compute_ns, 0.0);
  EXPECT_EQ(c.metrics.prefill_gpu_expert_pairs, 0);
  EXPECT_DOUBLE_EQ(c.metrics.to_json()["pbd_wait_cpu_ms_per_prefill"].get<double>(), 0.04);
  EXPECT_DOUBLE_EQ(c.metrics.to_json()["prefill_gpu_expert_frac"].get<double>(), 0.0);
}

TEST(EngineMetrics, HitRateByGroupsOfEightDecodeSteps) {
  // Nine decode tokens. Layer 0 uses {2, 3} (not cached at first: two misses
  // at step 0, hits after), layer 1 uses {0, 1} (cached from the start).
  std::vector<std::vector<std::vector<int32_t>>> ids(9, {{2, 3}, {0, 1}});
  const auto src = routing(2, 4, 2, ids);
  const auto r =
      run(tiny_model(), round_hardware(), strategy("gpu-ondemand", "lru", "uniform", 2), src);
  const auto j = r.metrics.to_json()["decode_hit_rate_by_step_group_frac"];
  ASSERT_EQ(j.size(), 2u);  // steps 0-7 and step 8
  EXPECT_DOUBLE_EQ(j[0][0].get<double>(), 14.0 / 16.0);
  EXPECT_DOUBLE_EQ(j[0][1].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j[1][0].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j[1][1].get<double>(), 1.0);
}

TEST(EngineResidency, PrefetchBufferIsUsedOnceAndCountedTwice) {
  // One cache slot per layer; the oracle predicts layer 1's experts {2, 3}
  // and the next-layer prefetcher loads one (expert 2) during layer 0.
  std::vector<std::vector<std::vector<int32_t>>> ids(3, {{0, 1}, {2, 3}});
  const auto src = routing(2, 4, 2, ids);
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 1);
  spec.prefetcher = testing::component("next-layer");
  spec.prefetcher.params.set("size", cfg::Value::integer(1, Where{"<test>"}), Where{"<test>"});
  spec.predictor = testing::component("oracle");
  spec.residency.admit_on_demand = false;
  spec.residency.pin_active_token = true;
  // Without the buffer the prefetched expert takes the cache slot and stays:
  // the later tokens find it there.
  const auto kept = run(tiny_model(), round_hardware(), spec, src);
  EXPECT_EQ(kept.metrics.prefetch_layer_loads[1], 1);
  EXPECT_EQ(kept.metrics.gpu_cache_slots, 2);
  // With the buffer it leaves after layer 1 each time (abandoned when its
  // copy is still in flight) and is loaded again; the cache keeps its placed
  // expert. Memory: 1 slot x 2 layers + 2 x 1.
  spec.residency.prefetch_buffer = true;
  const auto buf = run(tiny_model(), round_hardware(), spec, src);
  EXPECT_EQ(buf.metrics.prefetch_layer_loads[1], 3);
  EXPECT_EQ(buf.metrics.gpu_cache_slots, 4);
  // Reloaded each token, the copy is late each time here (5 us against the
  // 1 us attention and 2 us experts of layer 0), so the buffer brings no hit;
  // the kept copy hits on the later tokens.
  EXPECT_EQ(buf.metrics.decode_layer_hits[1], 0);
  EXPECT_EQ(kept.metrics.decode_layer_hits[1], 2);
}

// A predictor that scores nothing (a test stand-in): a next-layer
// prefetcher reading it loads nothing.
class ZeroPredictor : public Predictor {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.predictor";
  };
  using Params = EmptyParams<Tag>;
  explicit ZeroPredictor(const Params&) {}
  void predict(const Context&, int32_t, int64_t, std::span<float> scores) override {
    std::fill(scores.begin(), scores.end(), 0.0f);
  }
};

// a prefetch buffer that prefetches nothing changed results (an
// LRU cache that admits on demand took the buffer's free slots: hit rate
// 0.150 -> 0.282 in the issue's DALI case). Each share now holds its own
// loads: the buffer only prefetches, the cache share the rest.
TEST(EngineResidency, APrefetchBufferThatPrefetchesNothingChangesNothing) {
  Registry reg;
  register_baselines(reg);
  reg.add<Predictor, ZeroPredictor>("predictor", "zero", "test");
  // One cache slot per layer, experts alternating so that a second slot would hit.
  std::vector<std::vector<std::vector<int32_t>>> ids;
  for (int t = 0; t < 8; ++t) ids.push_back({{t % 2 ? 0 : 2, 3}, {t % 2 ? 1 : 2, 3}});
  const auto src = routing(2, 4, 2, ids);
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 1);
  spec.residency.admit_on_demand = true;
  const auto plain = run(tiny_model(), round_hardware(), spec, src, true, &reg);
  spec.prefetcher = testing::component("next-layer");
  spec.prefetcher.params.set("size", cfg::Value::integer(2, Where{"<test>"}), Where{"<test>"});
  spec.predictor = testing::component("zero");
  spec.residency.prefetch_buffer = true;
  const auto buffered = run(tiny_model(), round_hardware(), spec, src, true, &reg);
  EXPECT_EQ(buffered.metrics.prefetch_loads, 0);
  EXPECT_EQ(buffered.metrics.gpu_cache_slots,
            plain.metrics.gpu_cache_slots + 2 * 2);  // counted in memory
  for (int32_t l = 0; l < 2; ++l) {
    EXPECT_EQ(buffered.metrics.decode_layer_hits[l], plain.metrics.decode_layer_hits[l])
        << "layer " << l;
  }
  EXPECT_EQ(buffered.metrics.demand_loads, plain.metrics.demand_loads);
  EXPECT_DOUBLE_EQ(buffered.metrics.makespan_ns, plain.metrics.makespan_ns);
  // The two free buffer slots would matter if loads could take them: a cache
  // of three slots hits more on this routing (the demand loads once did).
  spec = strategy("gpu-ondemand", "lru", "uniform", 3);
  spec.residency.admit_on_demand = true;
  const auto three = run(tiny_model(), round_hardware(), spec, src, true, &reg);
  EXPECT_GT(three.metrics.decode_layer_hits[0] + three.metrics.decode_layer_hits[1],
            plain.metrics.decode_layer_hits[0] + plain.metrics.decode_layer_hits[1]);
}

// when a hit is judged. Two slots per layer, LRU, experts 0
// and 1 placed (0 the least recent). Layer 0's token uses experts 2 then 0
// (rank order), twice; layer 1 uses 0 and 1 (always hits).
//   at-gate: 0 hits at the gate and becomes most recent; 2's load evicts 1.
//     Cache {0, 2}: the second token hits both. Layer 0: 3 hits of 4, 1 load.
//   one-at-a-time: 2 comes first, misses and evicts the least recent, 0;
//     then 0 misses and evicts 1. Cache {2, 0}: the second token hits both.
//     Layer 0: 2 hits of 4, 2 loads.
// With the token's experts the other way round (0 then 2) the two rules agree.
TEST(EngineResidency, OneAtATimeAdmissionLetsATokensMissEvictItsOtherExpert) {
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 2);
  spec.residency.admit_on_demand = true;
  spec.residency.pin_active_token = false;
  const std::vector<std::vector<std::vector<int32_t>>> two_first(2, {{2, 0}, {0, 1}});
  const auto src = routing(2, 4, 2, two_first);
  const auto gate = run(tiny_model(), round_hardware(), spec, src);
  spec.residency.admission = "one-at-a-time";
  const auto turn = run(tiny_model(), round_hardware(), spec, src);
  EXPECT_EQ(gate.metrics.decode_layer_hits[0], 3);
  EXPECT_EQ(turn.metrics.decode_layer_hits[0], 2);
  EXPECT_EQ(gate.metrics.decode_layer_hits[1], 4);
  EXPECT_EQ(turn.metrics.decode_layer_hits[1], 4);
  EXPECT_EQ(gate.metrics.demand_loads, 1);
  EXPECT_EQ(turn.metrics.demand_loads, 2);
  // One-at-a-time: the second load waits for nothing but the link, and each
  // GPU expert runs after its own load, in routing order (2, then 0).
  const auto gpu = tasks(turn, Lane::kGpu, TaskKind::kGpuExpert);
  ASSERT_GE(gpu.size(), 2u);
  EXPECT_EQ(gpu[0].layer, 0);
  EXPECT_EQ(gpu[0].expert, 2);
  EXPECT_EQ(gpu[1].expert, 0);
  const std::vector<std::vector<std::vector<int32_t>>> zero_first(2, {{0, 2}, {0, 1}});
  const auto src2 = routing(2, 4, 2, zero_first);
  const auto turn2 = run(tiny_model(), round_hardware(), spec, src2);
  spec.residency.admission = "at-gate";
  const auto gate2 = run(tiny_model(), round_hardware(), spec, src2);
  EXPECT_EQ(turn2.metrics.decode_layer_hits[0], 3);
  EXPECT_EQ(gate2.metrics.decode_layer_hits[0], 3);
  EXPECT_EQ(turn2.metrics.demand_loads, 1);
}

// a hole (a (token, layer) whose routing the trace lacks)
// runs no expert and counts no access; the run reports how many it met.
// Two slots per layer, LRU, experts 0 and 1 placed. Layer 0: token 0 uses
// {2, 3}, token 1 is a hole, token 2 uses {2, 3} again: 2 misses, then 2
// hits (the hole evicts nothing, touches nothing). Layer 1: {0, 1} always.
TEST(EngineResidency, AHoleRunsNoExpertAndCountsNoAccess) {
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 2);
  spec.residency.admit_on_demand = true;
  const std::vector<std::vector<std::vector<int32_t>>> ids = {
      {{2, 3}, {0, 1}}, {{kHoleId, kHoleId}, {0, 1}}, {{2, 3}, {0, 1}}};
  const auto src = routing(2, 4, 2, ids);
  EXPECT_EQ(src.info().hole_rows, 1);
  const auto r = run(tiny_model(), round_hardware(), spec, src);
  EXPECT_EQ(r.metrics.hole_rows[1], 1);
  EXPECT_EQ(r.metrics.decode_layer_accesses[0], 4);  // tokens 0 and 2, two experts each
  EXPECT_EQ(r.metrics.decode_layer_hits[0], 2);
  EXPECT_EQ(r.metrics.decode_layer_accesses[1], 6);
  EXPECT_EQ(r.metrics.demand_loads, 2);
  // The hole's step runs no expert at layer 0: two GPU experts at layer 0 in
  // steps 0 and 2, none in step 1.
  int64_t layer0 = 0;
  for (const auto& t : tasks(r, Lane::kGpu, TaskKind::kGpuExpert)) layer0 += t.layer == 0;
  EXPECT_EQ(layer0, 4);
}

// residency.writeback (Mixtral-Offloading's swap): a copy that evicts an
// expert first writes it back to host memory in the same stream. One MoE
// layer, one slot (uniform placement: expert 0), top-1; tokens use experts
// 1, 2, 2. The tiny expert is 12,288 bytes: at 4.096 GB/s the write-back
// takes 3 us, the table's copy 5 us. Token 0 evicts expert 0 and token 1
// expert 1: two loads of 8 us; token 2 hits.
TEST(EngineResidency, WritebackChargesTheEvictedExpertsCopyToTheLoadThatReplacesIt) {
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 1);
  spec.residency.admit_on_demand = true;
  HardwareProfile h = round_hardware();
  h.link.d2h_gbps = 4.096;
  const std::vector<std::vector<std::vector<int32_t>>> ids = {{{1}}, {{2}}, {{2}}};
  const auto src = routing(1, 4, 1, ids);
  const auto plain = run(tiny_model(1, 4, 1), h, spec, src);
  spec.residency.writeback = true;
  const auto back = run(tiny_model(1, 4, 1), h, spec, src);
  ASSERT_EQ(tiny_model(1, 4, 1).expert_bytes(), 12288);
  EXPECT_EQ(plain.metrics.writeback_copies, 0);
  EXPECT_EQ(back.metrics.writeback_copies, 2);
  EXPECT_EQ(back.metrics.demand_loads, 2);
  const auto loads = tasks(back, Lane::kH2D, TaskKind::kDemandLoad);
  ASSERT_EQ(loads.size(), 2u);
  for (const auto& t : loads) EXPECT_NEAR(t.end_ns - t.start_ns, 8000.0, 1e-6);
  for (const auto& t : tasks(plain, Lane::kH2D, TaskKind::kDemandLoad))
    EXPECT_NEAR(t.end_ns - t.start_ns, 5000.0, 1e-6);
  // Each load is on its step's critical path (attention 1 us, copy, expert 2
  // us): the run is 2 x 3 us longer; the hit's step is unchanged.
  EXPECT_NEAR(back.metrics.makespan_ns - plain.metrics.makespan_ns, 6000.0, 1e-6);
  // A free slot needs no write-back: with two slots only token 1's load evicts.
  auto roomy = strategy("gpu-ondemand", "lru", "uniform", 2);
  roomy.residency.writeback = true;
  EXPECT_EQ(run(tiny_model(1, 4, 1), h, roomy, src).metrics.writeback_copies, 1);
}

// residency.one_stream (Mixtral-Offloading's code: copies and kernels on one
// CUDA stream). One MoE layer, two slots (experts 0 and 1 placed), top-2;
// the token uses experts 0 and 2: a hit and a miss. Separate lanes: the
// attention 0-1 us, the copy 1-6, expert 0 computes 1-3 beside it and
// expert 2 6-8. One stream: the copy and expert 0 no longer overlap, the
// step ends at 1 + 5 + 2 + 2 = 10 us.
TEST(EngineResidency, OneStreamRunsCopiesAndGpuWorkInIssueOrder) {
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 2);
  spec.residency.admit_on_demand = true;
  spec.residency.link_order = "fifo";
  const std::vector<std::vector<std::vector<int32_t>>> ids = {{{0, 2}}};
  const auto src = routing(1, 4, 2, ids);
  const auto lanes = run(tiny_model(1, 4, 2), round_hardware(), spec, src);
  spec.residency.one_stream = true;
  const auto one = run(tiny_model(1, 4, 2), round_hardware(), spec, src);
  EXPECT_NEAR(lanes.metrics.makespan_ns, 8000.0, 1e-6);
  EXPECT_NEAR(one.metrics.makespan_ns, 10000.0, 1e-6);
  // Nothing on the link overlaps GPU work (the run checks its task graph).
  const auto copies = tasks(one, Lane::kH2D, TaskKind::kDemandLoad);
  ASSERT_EQ(copies.size(), 1u);
  for (const auto& g : tasks(one, Lane::kGpu, TaskKind::kGpuExpert)) {
    EXPECT_TRUE(g.end_ns <= copies[0].start_ns || g.start_ns >= copies[0].end_ns)
        << "expert " << g.expert << " " << g.start_ns << "-" << g.end_ns;
  }
  spec.residency.link_order = "demand-first";
  expect_refused(spec, "expected link_order = \"fifo\", found \"demand-first\"");
}

// residency.reduced_copy_ratio with reduced_demand_loads (Fate's INT2
// on-demand copies). The writeback test's case (one layer, one slot, tokens
// use experts 1, 2, 2: two loads, then a hit) with a 1 us link latency: a
// full copy is the table's 5 us, a reduced one (ratio 0.6) 1 + 0.6 x 4 =
// 3.4 us, and moves 0.6 x 12,288 = 7,373 bytes. Both loads are on the
// critical path: the run is 2 x 1.6 us shorter.
TEST(EngineResidency, ReducedDemandLoadsMoveTheRatioOfTheBytesAfterTheLatency) {
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 1);
  spec.residency.admit_on_demand = true;
  HardwareProfile h = round_hardware();
  h.link.latency_us = 1;
  const std::vector<std::vector<std::vector<int32_t>>> ids = {{{1}}, {{2}}, {{2}}};
  const auto src = routing(1, 4, 1, ids);
  const auto full = run(tiny_model(1, 4, 1), h, spec, src);
  spec.residency.reduced_copy_ratio = 0.6;
  spec.residency.reduced_demand_loads = true;
  const auto red = run(tiny_model(1, 4, 1), h, spec, src);
  EXPECT_EQ(full.metrics.reduced_copies, 0);
  EXPECT_EQ(red.metrics.reduced_copies, 2);
  EXPECT_EQ(full.metrics.h2d_bytes, 2 * 12288);
  EXPECT_EQ(red.metrics.h2d_bytes, 2 * 7373);
  const auto loads = tasks(red, Lane::kH2D, TaskKind::kDemandLoad);
  ASSERT_EQ(loads.size(), 2u);
  for (const auto& t : loads) EXPECT_NEAR(t.end_ns - t.start_ns, 3400.0, 1e-6);
  EXPECT_NEAR(full.metrics.makespan_ns - red.metrics.makespan_ns, 3200.0, 1e-6);
  // A ratio with nothing to reduce, and a reduction at ratio 1, are refused.
  spec.residency.reduced_demand_loads = false;
  expect_refused(spec, "found neither (no copy would be reduced)");
  spec.residency.reduced_demand_loads = true;
  spec.residency.reduced_copy_ratio = 1.0;
  expect_refused(spec, "expected strategy.residency.reduced_copy_ratio < 1");
}

// residency.recopy_from_layer (Fate's code reloads a cached expert's INT4
// weights after computing it). One MoE layer, two slots (experts 0 and 1
// placed), top-1; both tokens use expert 0, a hit. Token 0: attention 0-1
// us, expert 0 1-3, then its copy again 3-8 (the table's 5 us). Token 1:
// attention 3-4, expert 0 waits for that copy (in flight at the gate: a
// miss) and computes 8-10, then is copied again 10-15, where the run ends
// (the link's last work). Without the re-copy token 1's expert runs 4-6 and
// the run ends at 6 us.
TEST(EngineResidency, RecopyReloadsComputedCachedExpertsAndTheNextUseWaits) {
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 2);
  spec.residency.admit_on_demand = true;
  const std::vector<std::vector<std::vector<int32_t>>> ids = {{{0}}, {{0}}};
  const auto src = routing(1, 4, 1, ids);
  const auto plain = run(tiny_model(1, 4, 1), round_hardware(), spec, src);
  spec.residency.recopy_from_layer = 0;
  const auto re = run(tiny_model(1, 4, 1), round_hardware(), spec, src);
  EXPECT_EQ(plain.metrics.recopies, 0);
  EXPECT_EQ(re.metrics.recopies, 2);
  EXPECT_EQ(re.metrics.h2d_bytes, 2 * 12288);
  EXPECT_EQ(re.metrics.demand_loads, 0);
  const auto copies = tasks(re, Lane::kH2D, TaskKind::kRecopy);
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_NEAR(copies[0].start_ns, 3000.0, 1e-6);
  EXPECT_NEAR(copies[0].end_ns, 8000.0, 1e-6);
  const auto gx = tasks(re, Lane::kGpu, TaskKind::kGpuExpert);
  ASSERT_EQ(gx.size(), 2u);
  EXPECT_NEAR(gx[1].start_ns, 8000.0, 1e-6);
  EXPECT_NEAR(gx[1].end_ns, 10000.0, 1e-6);
  EXPECT_NEAR(plain.metrics.makespan_ns, 6000.0, 1e-6);
  EXPECT_NEAR(re.metrics.makespan_ns, 15000.0, 1e-6);
  EXPECT_EQ(plain.metrics.decode_layer_hits[0], 2);
  EXPECT_EQ(re.metrics.decode_layer_hits[0], 1);
  // From the second MoE layer on: this model's only layer is not re-copied.
  spec.residency.recopy_from_layer = 1;
  EXPECT_EQ(run(tiny_model(1, 4, 1), round_hardware(), spec, src).metrics.recopies, 0);
  // One GPU pass per layer: refused with micro-batches.
  spec.residency.micro_batches = 2;
  expect_refused(spec, "expected micro_batches = 1 (one GPU pass per layer");
}

TEST(EngineResidency, WritebackIsRefusedWhereAnEvictionHasNoCopy) {
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 1);
  spec.residency.writeback = true;
  spec.residency.cancel_stale_prefetch = true;
  expect_refused(spec, "found strategy.residency.cancel_stale_prefetch = true");
  spec.residency.cancel_stale_prefetch = false;
  spec.cache = testing::component("arc");
  expect_refused(spec, "strategy.cache = \"arc\", which takes used prefetches");
}

TEST(EngineResidency, OneAtATimeAdmissionRefusesPinnedTokens) {
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 2);
  spec.residency.admission = "one-at-a-time";
  spec.residency.pin_active_token = true;
  expect_refused(spec, "expected pin_active_token = false, found true");
}

// preset = "hybrimoe" with predictor = "last-iteration" passed --dry-run and
// config validate and failed at run time ("asked for layer 1 of the current
// token at layer 0"). Refused when the strategy is created, which both run.
TEST(EngineResidency, APrefetcherOfLaterLayersNeedsAPredictorThatScoresThem) {
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 1);
  spec.predictor = testing::component("last-iteration");
  for (const char* kind : {"next-layer", "impact"}) {
    spec.prefetcher = testing::component(kind);
    expect_refused(spec, fmt::format("strategy.prefetcher = \"{}\" asks for later layers of the "
                                     "token being routed; expected a predictor that can score "
                                     "them, found strategy.predictor = \"last-iteration\"",
                                     kind));
  }
  spec.prefetcher = testing::component("token-wise");  // the next token's layers: fine
  EXPECT_NO_THROW(StrategyInstance::create(spec, builtin_registry()));
}

TEST(EngineResidency, APrefetcherThatPredictsNeedsAPredictor) {
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 1);
  for (const char* kind : {"next-layer", "impact", "token-wise"}) {
    spec.prefetcher = testing::component(kind);
    spec.predictor = testing::component("none");
    expect_refused(spec, fmt::format("strategy.prefetcher = \"{}\" loads the experts "
                                     "strategy.predictor scores; expected a predictor, found "
                                     "\"none\"",
                                     kind));
  }
  spec.prefetcher = testing::component("none");
  EXPECT_NO_THROW(StrategyInstance::create(spec, builtin_registry()));
}

TEST(EngineResidency, LatePrefetchRuleDropsCopiesThatCannotBeatTheirLayer) {
  // 8 experts, top-4, four slots per layer. Layer 1 alternates between
  // experts {4..7} and {0..3}, so every token the oracle predicts four experts
  // not resident and the next-layer prefetcher asks for all four during
  // layer 0. One copy takes 5 us and a layer about 9 us (attention 1 us, four
  // GPU experts of 2 us), so the later copies of the four land after a demand
  // load issued at layer 1's gate would (before-demand drops them), and more
  // land after the gate itself (before-gate drops those too).
  const std::vector<int32_t> low = {0, 1, 2, 3}, high = {4, 5, 6, 7};
  std::vector<std::vector<std::vector<int32_t>>> ids;
  for (int t = 0; t < 8; ++t) ids.push_back({low, t % 2 ? low : high});
  const auto src = routing(2, 8, 4, ids);
  auto spec = strategy("gpu-ondemand", "lru", "uniform", 4);
  spec.prefetcher = testing::component("next-layer");
  spec.prefetcher.params.set("size", cfg::Value::integer(4, Where{"<test>"}), Where{"<test>"});
  spec.predictor = testing::component("oracle");
  spec.residency.admit_on_demand = false;
  spec.residency.pin_active_token = true;
  spec.residency.late_prefetch = "issue";
  const auto model = tiny_model(2, 8, 4);
  const auto issue = run(model, round_hardware(), spec, src);
  spec.residency.late_prefetch = "before-demand";
  const auto demand = run(model, round_hardware(), spec, src);
  spec.residency.late_prefetch = "before-gate";
  const auto gate = run(model, round_hardware(), spec, src);
  EXPECT_EQ(issue.metrics.prefetch_dropped_late, 0);
  EXPECT_GT(demand.metrics.prefetch_dropped_late, 0);
  EXPECT_GT(gate.metrics.prefetch_dropped_late, demand.metrics.prefetch_dropped_late);
  // A dropped request is never issued: fewer copies, and no more link time.
  EXPECT_LT(demand.metrics.prefetch_loads, issue.metrics.prefetch_loads);
  EXPECT_LT(gate.metrics.prefetch_loads, demand.metrics.prefetch_loads);
  // The first step has no previous step to estimate from: its requests are issued.
  EXPECT_GT(gate.metrics.prefetch_loads, 0);
  // Bounded harm: dropping the late copies never makes the run slower here.
  EXPECT_LE(demand.metrics.makespan_ns, issue.metrics.makespan_ns);
}

TEST(EngineResidency, HybriMoeCodePrefetchSkipsATopExpertAlreadyResident) {
  // mrs-next takes the top prefetch_size experts of layer l+1 by MRS score
  // over all experts and loads those not resident (the public code). Layer
  // 1 always routes to expert 0; with three slots (experts 0-2 placed) the
  // top-scored expert is resident and nothing is prefetched. With one slot
  // holding expert 0 and layer 1 routing to expert 2, expert 2 is the top
  // and is prefetched.
  auto spec = strategy("gpu-ondemand", "mrs", "uniform", 3);
  spec.prefetcher = testing::component("mrs-next");
  spec.prefetcher.params.set("prefetch_size", cfg::Value::integer(1, Where{"<test>"}),
                             Where{"<test>"});
  spec.residency.late_prefetch = "issue";
  std::vector<std::vector<std::vector<int32_t>>> resident_top(6, {{0, 1}, {0, 1}});
  const auto a = run(tiny_model(), round_hardware(), spec, routing(2, 4, 2, resident_top, 1));
  EXPECT_EQ(a.metrics.prefetch_loads, 0);
  spec.residency.slots_per_layer = 1;
  std::vector<std::vector<std::vector<int32_t>>> missing_top(6, {{0, 1}, {2, 3}});
  const auto b = run(tiny_model(), round_hardware(), spec, routing(2, 4, 2, missing_top, 1));
  EXPECT_GT(b.metrics.prefetch_loads, 0);
}

// A deferral that defers the lowest-ranked expert of every layer (a test
// stand-in for KTransformers' rules): the mechanism is the core's.
class DeferLast : public Deferral {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.deferral";
  };
  using Params = EmptyParams<Tag>;
  explicit DeferLast(const Params&) {}
  void choose(const Context& ctx, std::vector<int32_t>& out) override {
    for (const auto& a : ctx.active) {
      if (a.best_rank == ctx.top_k - 1) out.push_back(a.expert);
    }
  }
};

TEST(EngineTimeline, DeferredExpertFinishesDuringTheNextLayer) {
  Registry reg;
  register_baselines(reg);
  reg.add<Deferral, DeferLast>("deferral", "defer-last", "test");
  auto s = strategy("all-cpu");
  s.deferral = testing::component("defer-last");
  // 3 layers so that layers 0 and 1 may defer (never the last layer).
  const auto src = routing(3, 4, 2, {{{0, 1}, {2, 3}, {0, 1}}});
  const auto r = run(tiny_model(3), round_hardware(), s, src, true, &reg);
  const auto att = tasks(r, Lane::kGpu, TaskKind::kAttention);
  const auto def = tasks(r, Lane::kCpu, TaskKind::kDeferredExpert);
  const auto cpu = tasks(r, Lane::kCpu, TaskKind::kCpuExpert);
  ASSERT_EQ(att.size(), 3u);
  ASSERT_EQ(def.size(), 2u);
  // Layer 0: attention [0,1]; expert 0 [1,11] immediate; expert 1 deferred [11,21].
  // Layer 1 starts when the immediate output is back: attention [11,12], overlapping the deferred
  // expert.
  EXPECT_DOUBLE_EQ(att[1].start_ns, 11 * us);
  EXPECT_EQ(def[0].expert, 1);
  EXPECT_DOUBLE_EQ(def[0].start_ns, 11 * us);
  EXPECT_DOUBLE_EQ(def[0].end_ns, 21 * us);
  // Layer 1's immediate expert 2 queues behind the deferred one on the CPU: [21, 31];
  // its deferred expert 3 [31, 41]. Layer 1 combines layer 0's deferred output (21) and its
  // immediate output (31): layer 2 attention [31, 32].
  EXPECT_EQ(cpu[1].expert, 2);
  EXPECT_DOUBLE_EQ(cpu[1].start_ns, 21 * us);
  EXPECT_DOUBLE_EQ(att[2].start_ns, 31 * us);
  // Layer 2 (last: no deferral) experts 0, 1 queue behind deferred expert 3: [41,51], [51,61].
  EXPECT_DOUBLE_EQ(cpu.back().end_ns, 61 * us);
  EXPECT_DOUBLE_EQ(r.metrics.tbt_ms[0], 0.061);
  EXPECT_EQ(r.metrics.deferred_expert_tokens, 2);
  // Without deferral: 3 layers x (1 + 20) us = 63 us.
  const auto plain = run(tiny_model(3), round_hardware(), strategy("all-cpu"), src);
  EXPECT_DOUBLE_EQ(plain.metrics.tbt_ms[0], 0.063);
}

TEST(EngineTimeline, DeferralIsDecodeOnly) {
  Registry reg;
  register_baselines(reg);
  reg.add<Deferral, DeferLast>("deferral", "defer-last", "test");
  auto s = strategy("all-cpu");
  s.deferral = testing::component("defer-last");
  // One prompt token (prefill) then one decode token.
  const auto src = routing(3, 4, 2, {{{0, 1}, {2, 3}, {0, 1}}, {{0, 1}, {2, 3}, {0, 1}}}, 1);
  const auto r = run(tiny_model(3), round_hardware(), s, src, true, &reg);
  for (const auto& t : tasks(r, Lane::kCpu, TaskKind::kDeferredExpert)) EXPECT_EQ(t.step, 1);
  EXPECT_EQ(r.metrics.deferred_expert_tokens, 2);
}

TEST(EngineTimeline, NoCpuGpuOverlapWhenSerialized) {
  // Expert 0 cached (GPU, 2 us), expert 1 not (CPU, 10 us). Overlapped: the
  // layer takes max(2, 10); serialized (llama.cpp): 2 + 10.
  const auto src = routing(1, 4, 2, {{{0, 1}}});
  auto overlap = strategy("resident", "none", "uniform", 1);
  const auto a = run(tiny_model(1), round_hardware(), overlap, src);
  EXPECT_DOUBLE_EQ(a.metrics.tbt_ms[0], 0.011);  // attention 1 + CPU 10 (GPU 2 hidden)
  auto ser = overlap;
  ser.assigner.params.set("serialize", cfg::Value::boolean(true));
  const auto b = run(tiny_model(1), round_hardware(), ser, src);
  EXPECT_DOUBLE_EQ(b.metrics.tbt_ms[0], 0.013);  // attention 1 + GPU 2 + CPU 10
}

TEST(EngineValidation, StrategyNeedingAGpuIsRejectedOnCpuOnlyHardware) {
  const auto src = routing(1, 4, 2, {{{0, 1}}});
  try {
    run(tiny_model(1), round_hardware(false), strategy("gpu-ondemand", "lru", "none", 0), src);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "strategy 'test-gpu-ondemand': expected a hardware profile with a GPU (its assigner "
              "'gpu-ondemand' "
              "runs experts on the GPU), found 'round' with none");
  }
  // all-cpu runs there, with attention on the CPU as well.
  const auto r = run(tiny_model(1), round_hardware(false), strategy("all-cpu"), src);
  EXPECT_GT(r.metrics.tbt_ms[0], 0.0);
}

// An assigner that plans an expert twice: the core rejects it by name.
class BadAssigner : public Assigner {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.assigner";
  };
  using Params = EmptyParams<Tag>;
  explicit BadAssigner(const Params&) {}
  void plan(const Context& ctx, LayerPlan& out) override {
    for (const auto& a : ctx.active) out.cpu.push_back(a.expert);
    out.cpu.push_back(ctx.active[0].expert);
  }
};

TEST(EngineValidation, InvalidPlanNamesTheComponent) {
  Registry reg;
  register_baselines(reg);
  reg.add<Assigner, BadAssigner>("assigner", "bad", "test");
  const auto src = routing(1, 4, 2, {{{0, 1}}});
  try {
    run(tiny_model(1), round_hardware(), strategy("bad"), src, false, &reg);
    FAIL();
  } catch (const InternalError& e) {
    EXPECT_EQ(std::string(e.what()),
              "strategy 'test-bad': assigner 'bad' made an invalid decision at step 0: layer 0: "
              "CPU expert 0 is "
              "not an activated, non-deferred expert or is planned twice");
  }
}

TEST(EngineValidation, ModelAndWorkloadMustAgree) {
  const auto src = routing(1, 4, 2, {{{0, 1}}});
  EXPECT_THROW(run(tiny_model(2), round_hardware(), strategy("all-cpu"), src), Error);
}

// An executor that answers with its own durations and records what it was asked.
class ScriptedExecutor final : public Executor {
 public:
  std::string backend() const override { return "scripted"; }
  double cpu_expert_ns(const CostModel&, int32_t layer, int32_t expert, int64_t tokens,
                       bool first) override {
    calls.push_back({layer, expert, tokens, first});
    return 7 * us * double(tokens);
  }
  double shared_experts_ns(const CostModel& c, int32_t, int64_t tokens) override {
    return c.gpu_shared_ns(tokens);
  }
  std::vector<std::string> notes() const override { return {"scripted executor"}; }
  struct Call {
    int32_t layer, expert;
    int64_t tokens;
    bool first;
  };
  std::vector<Call> calls;
};

TEST(EngineExecutor, CpuExpertDurationsComeFromTheExecutor) {
  // The all-cpu case of AllCpuRunsExpertsOneAfterAnother with 7 us experts
  // instead of the table's 10 us: the step loop asks the executor once per
  // CPU expert task, in lane order, and composes its answers.
  const auto src = routing(2, 4, 2, {{{0, 1}, {2, 3}}});
  StrategyInstance st = StrategyInstance::create(strategy("all-cpu"), builtin_registry());
  ScriptedExecutor ex;
  EngineOptions opt;
  opt.executor = &ex;
  const auto r =
      simulate(tiny_model(), round_hardware(), testing::workload_of(src), st, src, nullptr, opt);
  ASSERT_EQ(ex.calls.size(), 4u);
  EXPECT_EQ(ex.calls[0].layer, 0);
  EXPECT_EQ(ex.calls[0].expert, 0);
  EXPECT_TRUE(ex.calls[0].first);
  EXPECT_FALSE(ex.calls[1].first);
  EXPECT_EQ(ex.calls[3].layer, 1);
  EXPECT_EQ(ex.calls[3].expert, 3);
  // attention 1 + 2 x 7, twice.
  EXPECT_DOUBLE_EQ(r.metrics.tbt_ms[0], 0.030);
  EXPECT_NEAR(r.metrics.task_ns[size_t(TaskKind::kCpuExpert)], 28 * us, 1e-9);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_EQ(r.warnings.back(), "scripted executor");
}

// the rest of the step goes through the executor too, with the
// cost model's duration as the prediction; the answer is what the lanes
// compose. A second sequence in the step gets its own slot.
class StepExecutor final : public Executor {
 public:
  std::string backend() const override { return "scripted"; }
  void begin_run(int64_t seqs, int64_t pos, int64_t tokens, bool record) override {
    prepared = {seqs, pos, tokens};
    recorded = record;
  }
  double cpu_expert_ns(const CostModel& c, int32_t, int32_t, int64_t tokens, bool first) override {
    return c.cpu_expert_ns(tokens, first);
  }
  double shared_experts_ns(const CostModel& c, int32_t, int64_t tokens) override {
    return c.gpu_shared_ns(tokens);
  }
  double attention_ns(int32_t block, const StepTokens& st, double predicted) override {
    blocks.push_back(block);
    steps.push_back(st);
    predictions.push_back(predicted);
    return 3 * us;
  }
  double lm_head_ns(int64_t tokens, double predicted) override {
    heads.push_back(tokens);
    predictions.push_back(predicted);
    return 2 * us;
  }
  std::vector<int64_t> prepared;
  bool recorded = false;
  std::vector<int32_t> blocks;
  std::vector<StepTokens> steps;
  std::vector<int64_t> heads;
  std::vector<double> predictions;
};

TEST(EngineExecutor, AttentionAndLmHeadDurationsComeFromTheExecutor) {
  // One sequence, two decode tokens, on a machine without a GPU.
  const auto src = routing(2, 4, 2, {{{0, 1}, {2, 3}}, {{1, 2}, {0, 3}}});
  StrategyInstance st = StrategyInstance::create(strategy("all-cpu"), builtin_registry());
  StepExecutor ex;
  EngineOptions opt;
  opt.executor = &ex;
  opt.timeline = true;
  const auto r = simulate(tiny_model(), round_hardware(false), testing::workload_of(src), st, src,
                          nullptr, opt);
  EXPECT_EQ(ex.prepared,
            (std::vector<int64_t>{1, 2, 1}));  // sequences per step, positions, tokens per step
  EXPECT_TRUE(ex.recorded);
  ASSERT_EQ(ex.blocks, (std::vector<int32_t>{0, 1, 0, 1}));  // two steps, two blocks
  EXPECT_EQ(ex.heads, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ex.steps[0].slot, (std::vector<int32_t>{0}));
  EXPECT_EQ(ex.steps[0].pos, (std::vector<int64_t>{0}));
  EXPECT_EQ(ex.steps[2].pos, (std::vector<int64_t>{1}));
  EXPECT_EQ(ex.steps[2].sequences, 1);
  EXPECT_DOUBLE_EQ(ex.predictions[0], 1 * us);  // the round profile's attention (gpu-layer table)
  // Each decode step: 2 x (attention 3 + two CPU experts of 10 us) + the lm head 2.
  ASSERT_EQ(r.metrics.tbt_ms.size(), 2u);
  EXPECT_NEAR(r.metrics.tbt_ms[0], (2 * (3 + 2 * 10) + 2) * us / 1e6, 1e-12);
  EXPECT_TRUE(r.metrics.composed_tbt_ms.empty());  // not the real backend
}

TEST(EngineExecutor, TheTimelineKeepsEveryExpertTasksTokensAndMeasuredTime) {
  // What a sim-vs-real comparison task by task reads: each CPU expert
  // record carries the tokens the executor was asked for and the duration
  // it answered; attention records carry the step's tokens; the Chrome
  // trace shows them as args.tokens.
  const auto src = routing(2, 4, 2, {{{0, 1}, {2, 3}}, {{1, 2}, {0, 3}}});
  StrategyInstance st = StrategyInstance::create(strategy("all-cpu"), builtin_registry());
  ScriptedExecutor ex;
  EngineOptions opt;
  opt.executor = &ex;
  opt.timeline = true;
  const auto r =
      simulate(tiny_model(), round_hardware(), testing::workload_of(src), st, src, nullptr, opt);
  std::vector<TaskRecord> cpu;
  int attention = 0;
  for (const TaskRecord& t : r.timeline) {
    if (t.kind == TaskKind::kCpuExpert) cpu.push_back(t);
    if (t.kind == TaskKind::kAttention) {
      ++attention;
      EXPECT_EQ(t.tokens, 1);
      // Whole on the GPU: its sequences and the entries each token reads.
      EXPECT_EQ(t.sequences, 1);
      EXPECT_GE(t.context, 1);
    }
  }
  EXPECT_GT(attention, 0);
  ASSERT_EQ(cpu.size(), ex.calls.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(cpu[i].layer, ex.calls[i].layer);
    EXPECT_EQ(cpu[i].expert, ex.calls[i].expert);
    EXPECT_EQ(cpu[i].tokens, ex.calls[i].tokens);
    EXPECT_NEAR(cpu[i].end_ns - cpu[i].start_ns, 7 * us * double(ex.calls[i].tokens), 1e-9);
  }
  const auto j = nlohmann::json::parse(chrome_trace_json(r.timeline, "t"));
  int with_tokens = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "cpu-expert") {
      EXPECT_EQ(e["args"]["tokens"].get<int64_t>(), 1);
      ++with_tokens;
    }
  }
  EXPECT_EQ(with_tokens, int(cpu.size()));
  int shaped = 0;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "attention")
      shaped += e["args"].value("sequences", -1) == 1 && e["args"].value("context", -1) >= 1;
  EXPECT_EQ(shaped, attention);
  // The events carry the graph (moebench replay reads it back): each lane
  // task its id, and the ids it waits for name tasks recorded earlier.
  std::map<int64_t, double> started;  // task id -> start
  int with_waits = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X" || !e["args"].contains("task")) continue;
    const int64_t id = e["args"]["task"].get<int64_t>();
    started[id] = e["ts"].get<double>();
    if (!e["args"].contains("waits")) continue;
    ++with_waits;
    for (const auto& w : e["args"]["waits"]) EXPECT_LT(w.get<int64_t>(), id);
  }
  size_t lane_tasks = 0;
  for (const TaskRecord& t : r.timeline) lane_tasks += t.task >= 0;
  EXPECT_EQ(started.size(), lane_tasks);  // every recorded lane task, by its id
  EXPECT_GT(with_waits, 0);
}

TEST(EngineExecutor, TheSimulatedExecutorIsTheDefault) {
  std::vector<std::vector<std::vector<int32_t>>> ids;
  for (int t = 0; t < 12; ++t)
    ids.push_back({{t % 4, (t + 1) % 4}, {(t * 3) % 4, (t * 3 + 1) % 4}});
  const auto src = routing(2, 4, 2, ids);
  const StrategySpec specs[] = {strategy("all-cpu"), strategy("gpu-ondemand", "lru", "uniform", 2)};
  for (const StrategySpec& spec : specs) {
    StrategyInstance s1 = StrategyInstance::create(spec, builtin_registry());
    StrategyInstance s2 = StrategyInstance::create(spec, builtin_registry());
    SimExecutor sim;
    EngineOptions with;
    with.executor = &sim;
    const ModelSpec m = tiny_model(2, 4, 2, 1);  // one shared expert
    const auto a1 =
        simulate(m, round_hardware(), testing::workload_of(src), s1, src, nullptr, EngineOptions{});
    const auto a2 =
        simulate(m, round_hardware(), testing::workload_of(src), s2, src, nullptr, with);
    EXPECT_EQ(a1.metrics.tbt_ms, a2.metrics.tbt_ms) << spec.name;
    EXPECT_EQ(a1.metrics.busy_ns[2], a2.metrics.busy_ns[2]) << spec.name;
    EXPECT_GT(a1.metrics.task_ns[size_t(TaskKind::kSharedExperts)], 0.0) << spec.name;
    EXPECT_EQ(a1.metrics.task_ns[size_t(TaskKind::kSharedExperts)],
              a2.metrics.task_ns[size_t(TaskKind::kSharedExperts)])
        << spec.name;
  }
}

TEST(Engine, DeterministicAcrossRuns) {
  std::vector<std::vector<std::vector<int32_t>>> ids;
  for (int t = 0; t < 20; ++t)
    ids.push_back({{t % 4, (t + 1) % 4}, {(t * 3) % 4, (t * 3 + 1) % 4}});
  const auto src = routing(2, 4, 2, ids);
  const auto a =
      run(tiny_model(), round_hardware(), strategy("gpu-ondemand", "lru", "uniform", 2), src);
  const auto b =
      run(tiny_model(), round_hardware(), strategy("gpu-ondemand", "lru", "uniform", 2), src);
  auto strip = [](nlohmann::ordered_json j) {
    for (auto it = j.begin(); it != j.end();) {
      // measured host times differ
      if (it.key().rfind("decision_", 0) == 0 || it.key() == "host_wall_s")
        it = j.erase(it);
      else
        ++it;
    }
    return j.dump();
  };
  EXPECT_EQ(strip(a.metrics.to_json()), strip(b.metrics.to_json()));
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (size_t i = 0; i < a.timeline.size(); ++i) {
    EXPECT_EQ(a.timeline[i].start_ns, b.timeline[i].start_ns);
    EXPECT_EQ(a.timeline[i].kind, b.timeline[i].kind);
  }
}

TEST(Engine, ChromeTraceLooksLikeAChromeTrace) {
  const auto src = routing(2, 4, 2, {{{0, 2}, {0, 1}}});
  const auto r =
      run(tiny_model(), round_hardware(), strategy("gpu-ondemand", "lru", "uniform", 2), src);
  const auto j = nlohmann::json::parse(chrome_trace_json(r.timeline, "t"));
  ASSERT_TRUE(j["traceEvents"].is_array());
  int complete = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
  }
  EXPECT_EQ(complete, int(r.timeline.size()));
}

// Dependencies are flow arrows: each starts where the task waited for ends and
// finishes where the waiting task starts, never backwards in time.
TEST(Engine, ChromeTraceShowsWhatEachTaskWaitsFor) {
  const auto src = routing(2, 4, 2, {{{0, 2}, {0, 1}}});
  const auto r =
      run(tiny_model(), round_hardware(), strategy("gpu-ondemand", "lru", "uniform", 2), src);
  const auto j = nlohmann::json::parse(chrome_trace_json(r.timeline, "t"));
  std::map<int64_t, double> from, to;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "s") from[e["id"].get<int64_t>()] = e["ts"].get<double>();
    if (e["ph"] == "f") to[e["id"].get<int64_t>()] = e["ts"].get<double>();
  }
  ASSERT_FALSE(from.empty());
  ASSERT_EQ(from.size(), to.size());
  for (const auto& [id, ts] : from) {
    ASSERT_TRUE(to.count(id));
    EXPECT_LE(ts, to[id]) << "flow " << id;
  }
  // A GPU expert loaded on demand waits for its copy: an arrow leaves the copy's track.
  bool from_copy = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "s" && e["tid"] == int(Lane::kH2D)) from_copy = true;
  }
  EXPECT_TRUE(from_copy);
  // The second layer's attention waits for the first layer's GPU side.
  int64_t waits = 0;
  for (const auto& t : r.timeline) {
    if (t.kind == TaskKind::kAttention && t.layer == 1) {
      for (int64_t w : t.waits) waits += w >= 0;
    }
  }
  EXPECT_GE(waits, 1);
}

}  // namespace
}  // namespace moebench

namespace moebench {
namespace {

// A trace holding only the top-2 router probabilities cannot give a
// component the top-4 it asks for (HybriMoE's MRS uses p = 2k): the run keeps
// what the trace holds (no zeros passed off as probabilities) and says so.
TEST(EngineRouting, FewerStoredProbabilitiesThanRequestedAreKeptAndReported) {
  MemoryTraceSource full = testing::routing(1, 8, 2, {{{0, 1}}, {{2, 3}}});
  TraceInfo info = full.info();
  info.probs = ProbsStorage::kTopP;
  info.top_p = 2;
  MemoryTraceSource topp(info);
  auto r = full.open(0, kAllFields);
  TokenRecord rec;
  while (r->next(rec)) topp.add(0, rec);
  const RunRouting run(topp, 4);
  EXPECT_EQ(run.top_p(), 2);
  EXPECT_EQ(run.short_of_top_p(), 4);
  const RunRouting ok(full, 4);
  EXPECT_EQ(ok.top_p(), 4);
  EXPECT_EQ(ok.short_of_top_p(), 0);
}

}  // namespace
}  // namespace moebench

namespace moebench {
namespace {

// link.h2d_gbps = 1e-308 ran "ok" with TTFT, TBT and tokens/s
// null; such a run has no result and says so.
TEST(EngineHostileInput, AnInfiniteSimulatedTimeIsAnError) {
  const auto src = testing::routing(2, 4, 2, {{{0, 1}, {2, 3}}});
  HardwareProfile h = testing::round_hardware();
  h.link.d2h_gbps = 1e-308;  // the CPU experts' activations take forever
  try {
    testing::run(testing::tiny_model(), h, testing::strategy("all-cpu"), src);
    FAIL() << "an infinite time was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "is not a finite number (inf): a rate or bandwidth of hardware 'round'"),
              std::string::npos)
        << e.what();
  }
}

// A bandwidth of 0 was taken as infinitely fast (d2h_gbps = 0 passed);
// profiles refuse it at load, and the cost model refuses it too.
TEST(EngineHostileInput, AZeroBandwidthIsRefusedNotInfinitelyFast) {
  const auto src = testing::routing(2, 4, 2, {{{0, 1}, {2, 3}}});
  HardwareProfile h = testing::round_hardware();
  h.link.d2h_gbps = 0;
  try {
    testing::run(testing::tiny_model(), h, testing::strategy("all-cpu"), src);
    FAIL() << "a zero bandwidth was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hardware link.d2h_gbps: expected a bandwidth > 0 GB/s"),
              std::string::npos)
        << e.what();
  }
}

TEST(EngineHostileInput, HeadlineMetricsThatAreNotFiniteAreNamed) {
  RunMetrics m;
  m.ttft_ms = {1.0};
  m.tbt_ms = {2.0};
  m.prefill_tokens = 4;
  m.prefill_time_s = 0.001;
  m.decode_tokens = 1;
  m.decode_time_s = 0.002;
  m.total_time_s = 0.003;
  EXPECT_EQ(m.headline_problem(), "");
  m.tbt_ms.push_back(std::numeric_limits<double>::infinity());
  EXPECT_EQ(m.headline_problem(), "TBT is not a finite number");
  m.tbt_ms.pop_back();
  m.decode_time_s = 0;
  EXPECT_EQ(m.headline_problem(), "decode time is 0 s for 1 generated tokens");
  RunMetrics prefill_only;  // no decode tokens: no TBT, and that is not a problem
  prefill_only.ttft_ms = {1.0};
  prefill_only.prefill_tokens = 4;
  prefill_only.prefill_time_s = 0.001;
  EXPECT_EQ(prefill_only.headline_problem(), "");
}

// residency.cache_fill (docs/SERVING.md, "GPU memory"): the cache takes the
// GPU memory the weights, the KV cache of batch_size sequences and the
// runtime leave; more concurrency leaves fewer slots, and the footprint with
// the slots chosen fits while one slot more would not.
TEST(EngineResidency, CacheFillGivesTheExpertsWhatTheKvCacheLeaves) {
  ModelSpec m = testing::tiny_model();
  m.num_layers = 32;
  m.routed_experts = 64;
  m.hidden_size = 4096;
  m.expert_intermediate = 14336;
  m.expert_dtype = WeightDtype::kInt4;  // about 2.8 GiB per slot in every layer
  m.num_kv_heads = 8;
  m.head_dim = 128;  // 128 KiB of KV cache a token over 32 layers
  HardwareProfile h = testing::round_hardware();
  h.gpu.mem_gib = 24;
  RunShape shape;
  shape.sequences = 64;
  shape.max_tokens = 4000;  // 0.5 GiB a sequence
  shape.total_tokens = 64 * 4000;
  std::vector<int64_t> slots;
  for (int64_t batch : {1, 8, 24}) {
    shape.batch_size = batch;
    StrategySpec s = testing::strategy("gpu-ondemand", "lru", "none", 0);
    s.residency.slots_per_layer = -1;
    s.residency.cache_fill = true;
    StrategyInstance st = StrategyInstance::create(s, builtin_registry());
    apply_cache_fill(m, h, st, shape);
    slots.push_back(st.residency.slots_per_layer);
    const CaseFootprint f = case_footprint(m, h, st, shape);
    if (st.residency.slots_per_layer > 0) {
      EXPECT_LE(f.gpu_total_gib, h.gpu.mem_gib) << batch;
      ++st.residency.slots_per_layer;
      EXPECT_GT(case_footprint(m, h, st, shape).gpu_total_gib, h.gpu.mem_gib) << batch;
    }
  }
  EXPECT_GT(slots[0], slots[1]) << slots[0] << " " << slots[1];
  EXPECT_GT(slots[1], slots[2]) << slots[1] << " " << slots[2];
  EXPECT_GE(slots[2], 0);
}

// A model within every documented bound (1024 layers, 65,536 experts, top-64)
// ran 114 s and 3 GB before failing "case does not fit": the footprint is
// known from shapes alone and checked first.
TEST(EngineHostileInput, TheFootprintIsKnownFromShapesAlone) {
  ModelSpec m = testing::tiny_model();
  m.num_layers = 1024;
  m.routed_experts = 65536;
  m.top_k = 64;
  m.hidden_size = 4096;
  m.expert_intermediate = 14336;
  StrategySpec s = testing::strategy("gpu-ondemand", "lru", "none", 8);
  const StrategyInstance st = StrategyInstance::create(s, builtin_registry());
  HardwareProfile h = testing::round_hardware();
  h.gpu.mem_gib = 48;
  RunShape shape;
  shape.sequences = 1;
  shape.max_tokens = shape.total_tokens = 12;
  const CaseFootprint f = case_footprint(m, h, st, shape);
  EXPECT_EQ(f.gpu_cache_slots, 1024 * 8);
  EXPECT_GT(f.gpu_total_gib, 48.0);
  try {
    check_footprint(f, m, h, st);
    FAIL() << "a case far beyond the GPU was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "case does not fit: expected at most 48.0 GiB of GPU memory", 0),
              0u)
        << e.what();
  }
  // Host memory: a million tokens of this model's routing is far beyond any machine.
  HardwareProfile cpu_only = testing::round_hardware(false);
  const StrategyInstance all_cpu =
      StrategyInstance::create(testing::strategy("all-cpu"), builtin_registry());
  shape.sequences = 100000;
  shape.max_tokens = 200000;
  shape.total_tokens = shape.sequences * shape.max_tokens;
  const CaseFootprint g = case_footprint(m, cpu_only, all_cpu, shape);
  EXPECT_GT(g.host_gib, 1e6);
  try {
    check_footprint(g, m, cpu_only, all_cpu);
    FAIL() << "a workload beyond the host's memory was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("case does not fit in host memory"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("routing of 20000000000 tokens x 1024 MoE layers"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace moebench

namespace moebench {
namespace {

// A deferral that answers choose_residency with the test's choice (and
// defers nothing): the core's checks of a component's residency choice.
std::optional<ResidencyChoice> g_choice;

class ChoosingDeferral : public Deferral {
 public:
  struct Tag {
    static constexpr const char* kSection = "strategy.deferral";
  };
  using Params = EmptyParams<Tag>;
  explicit ChoosingDeferral(const Params&) {}
  void choose(const Context&, std::vector<int32_t>&) override {}
  std::optional<ResidencyChoice> choose_residency(const ResidencyQuestion&) const override {
    return g_choice;
  }
};

TEST(EngineResidencyChoice, TheCoreChecksAndAppliesAComponentsChoice) {
  Registry reg;
  register_baselines(reg);
  reg.add<Deferral, ChoosingDeferral>("deferral", "choosing", "test");
  StrategySpec spec = strategy("gpu-ondemand", "none", "uniform", -1);
  spec.name = "chooser";
  spec.residency.cache_ratio = 0.0;
  spec.deferral = testing::component("choosing");
  const ModelSpec m = tiny_model();
  HardwareProfile h = round_hardware();
  RunShape shape;
  shape.sequences = 4;
  shape.batch_size = 4;
  shape.max_tokens = 8;
  shape.total_tokens = 32;
  auto attempt = [&](const ResidencySpec& r) {
    g_choice = ResidencyChoice{r, 1234.0, "test"};
    StrategyInstance st = StrategyInstance::create(spec, reg);
    apply_residency_choice(m, h, st, shape, 4, 4);
    return st;
  };
  // Accepted: the three settings it may choose, recorded with the estimate.
  ResidencySpec ok = spec.residency;
  ok.attention = "cpu";
  ok.micro_batches = 4;
  ok.cache_ratio = 0.5;
  const StrategyInstance st = attempt(ok);
  EXPECT_EQ(st.residency.attention, "cpu");
  EXPECT_EQ(st.residency.micro_batches, 4);
  EXPECT_DOUBLE_EQ(st.residency.cache_ratio, 0.5);
  EXPECT_EQ(st.residency_chosen_by, "strategy.deferral = \"choosing\"");
  EXPECT_DOUBLE_EQ(st.residency_estimate_ns, 1234.0);
  // Refused, each naming the component and what was expected.
  auto refused = [&](ResidencySpec r, const std::string& expected) {
    try {
      attempt(r);
      ADD_FAILURE() << "accepted: " << expected;
    } catch (const Error& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("strategy.deferral = \"choosing\""), std::string::npos) << w;
      EXPECT_NE(w.find(expected), std::string::npos) << w;
    }
  };
  ResidencySpec r = ok;
  r.micro_batches = 5;  // more than the batch of 4
  refused(r, "micro_batches in [1, 4]");
  r = ok;
  r.micro_batches = 0;
  refused(r, "micro_batches in [1, 4]");
  r = ok;
  r.cache_ratio = 1.5;
  refused(r, "cache_ratio in [0, 1]");
  r = ok;
  r.attention = "tpu";
  refused(r, "attention one of gpu, cpu, gpu-host-kv");
  r = ok;
  r.attention = "gpu-host-kv";  // FlexGen's GPU attention over a host KV cache: accepted
  EXPECT_EQ(attempt(r).residency.attention, "gpu-host-kv");
  r = ok;
  r.link_order = "fifo";  // not one of the three
  refused(r, "only attention, micro_batches and cache_ratio changed");
  h.gpu.mem_gib = 1e-6;  // nothing fits
  refused(ok, "GiB of GPU memory");
  h = round_hardware();
  // Two components answering.
  spec.prefetcher = testing::component("paged-weights");
  spec.prefetcher.params.set("policy", cfg::Value::string("hrm", Where{"<test>"}), Where{"<test>"});
  refused(ok, "at most one component choosing the residency settings");
  spec.prefetcher = testing::component("none");
  // No answer: the strategy's own settings stand.
  g_choice.reset();
  StrategyInstance none = StrategyInstance::create(spec, reg);
  apply_residency_choice(m, h, none, shape, 4, 4);
  EXPECT_EQ(none.residency.attention, "gpu");
  EXPECT_TRUE(none.residency_chosen_by.empty());
}

}  // namespace
}  // namespace moebench
