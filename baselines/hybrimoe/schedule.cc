// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// HybriMoE's scheduling simulation and the public code's greedy variant,
// shared by the assigners and the impact-driven prefetcher.
#include <algorithm>
#include <limits>

#include "baselines/hybrimoe/components.h"
#include "core/util/error.h"

namespace moebench {

std::vector<SchedExpert> sched_experts(const Context& ctx, std::span<const ActiveExpert> active) {
  std::vector<SchedExpert> v;
  v.reserve(active.size());
  for (const auto& a : active) {
    SchedExpert s;
    s.expert = a.expert;
    s.load = a.tokens;
    s.cached = ctx.residency->cached(ctx.layer, a.expert);
    s.ready_ns =
        s.cached ? std::max(ctx.now_ns, ctx.residency->ready_ns(ctx.layer, a.expert)) : 0.0;
    v.push_back(s);
  }
  return v;
}

void order_by_router(std::vector<SchedExpert>& v, int64_t tokens, int64_t k,
                     const std::function<const int32_t*(int64_t)>& ids_of) {
  std::vector<int64_t> first;  // by expert id: position in router order, -1 = not routed
  int64_t pos = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t* ids = ids_of(t);
    if (ids[0] == kHoleId) continue;  // a hole in the trace: no expert
    for (int64_t j = 0; j < k; ++j) {
      if (size_t(ids[j]) >= first.size()) first.resize(size_t(ids[j]) + 1, -1);
      if (first[size_t(ids[j])] < 0) first[size_t(ids[j])] = pos++;
    }
  }
  auto key = [&](const SchedExpert& e) {
    // Not routed in this step: after the others, in the order given.
    return size_t(e.expert) < first.size() && first[size_t(e.expert)] >= 0 ? first[size_t(e.expert)]
                                                                           : pos;
  };
  std::stable_sort(v.begin(), v.end(),
                   [&](const SchedExpert& a, const SchedExpert& b) { return key(a) < key(b); });
}

SchedTimes sched_start(const Context& ctx) {
  const int64_t n = ctx.routing->tokens();
  SchedTimes t;
  t.gpu = std::max(ctx.now_ns, ctx.lanes.gpu_free_ns) + ctx.cost->gpu_shared_ns(n);
  t.cpu = std::max(ctx.now_ns + ctx.cost->d2h_activations_ns(n), ctx.lanes.cpu_free_ns);
  t.link = std::max(ctx.now_ns, ctx.lanes.h2d_free_ns);
  return t;
}

namespace {

// The simulation, with scratch reused between calls (the impact-driven
// prefetcher runs it once per candidate expert). `plan` = nullptr computes
// the end times only.
struct SchedScratch {
  std::vector<SchedExpert> gq, cq;  // GPU queue [gh, end): load desc; CPU queue [ch, end): load asc
};

void run_schedule(const std::vector<SchedExpert>& experts, const SchedCosts& costs,
                  SchedTimes start, bool has_gpu, SchedRule rule, bool load_misses, SchedPlan* plan,
                  double* gpu_end, double* cpu_end) {
  thread_local SchedScratch sc;
  auto& gq = sc.gq;
  auto& cq = sc.cq;
  gq.clear();
  cq.clear();
  for (const auto& e : experts) {
    if (e.cached && has_gpu)
      gq.push_back(e);
    else
      cq.push_back(e);
  }
  // Input already strictly in `sched_heavier` order (the impact-driven prefetcher
  // sorts its predictions once for all its candidates): both queues are then
  // in order without sorting, and the order is the one std::sort gives (with
  // no two experts equal under `sched_heavier`, the sorted order is unique).
  const bool presorted = std::adjacent_find(experts.begin(), experts.end(),
                                            [](const SchedExpert& a, const SchedExpert& b) {
                                              return !sched_heavier(a, b);
                                            }) == experts.end();
  if (presorted) {
    std::reverse(cq.begin(), cq.end());
  } else {
    std::sort(gq.begin(), gq.end(), sched_heavier);
    std::sort(cq.begin(), cq.end(),
              [](const SchedExpert& a, const SchedExpert& b) { return sched_heavier(b, a); });
  }
  size_t gh = 0, ch = 0;  // queue heads
  double tg = start.gpu, tc = start.cpu, tl = start.link;
  double g_end = tg, c_end = tc;
  bool cpu_first = true;
  const double h2d = has_gpu ? costs.h2d() : 0.0;
  constexpr double kNever = std::numeric_limits<double>::infinity();
  while (gh < gq.size() || ch < cq.size()) {
    const bool gpu_can = gh < gq.size();
    // The CPU may take cached experts from the GPU queue's tail, but not one
    // the simulation is copying (its copy would be wasted and the plan would
    // load an expert the GPU does not run).
    std::ptrdiff_t steal = -1;
    if (ch == cq.size()) {
      for (std::ptrdiff_t i = std::ptrdiff_t(gq.size()) - 1; i >= std::ptrdiff_t(gh); --i) {
        if (!gq[size_t(i)].copying) {
          steal = i;
          break;
        }
      }
    }
    const bool cpu_can = ch < cq.size() || steal >= 0;
    const bool link_can = has_gpu && load_misses && ch < cq.size();
    // Each timeline's key: when it is free (kFree) or when its next task
    // would finish (kCompletion, ties broken by when it is free). The
    // smallest acts; remaining ties go GPU, then CPU, then link.
    double g = gpu_can ? tg : kNever, c = cpu_can ? tc : kNever, l = link_can ? tl : kNever;
    double g2 = 0, c2 = 0, l2 = 0;
    if (rule == SchedRule::kCompletion) {
      g2 = g, c2 = c, l2 = l;
      if (gpu_can) g = std::max(tg, gq[gh].ready_ns) + costs.gpu(gq[gh].load);
      if (cpu_can)
        c = tc + costs.cpu(ch < cq.size() ? cq[ch].load : gq[size_t(steal)].load, cpu_first);
      if (link_can) l = tl + h2d;
    }
    auto before = [](double a, double a2, double b, double b2) {
      return a < b || (a == b && a2 <= b2);
    };
    if (gpu_can && before(g, g2, c, c2) && before(g, g2, l, l2)) {
      const SchedExpert& e = gq[gh++];
      tg = std::max(tg, e.ready_ns) + costs.gpu(e.load);
      g_end = tg;
      if (plan) plan->gpu.push_back(e.expert);
    } else if (cpu_can && before(c, c2, l, l2)) {
      SchedExpert e;
      if (ch < cq.size()) {
        e = cq[ch++];
      } else {
        e = gq[size_t(steal)];
        gq.erase(gq.begin() + steal);
      }
      tc += costs.cpu(e.load, cpu_first);
      cpu_first = false;
      c_end = tc;
      if (plan) plan->cpu.push_back(e.expert);
    } else {
      SchedExpert e = cq.back();
      cq.pop_back();
      tl += h2d;
      e.cached = true;
      e.copying = true;
      e.ready_ns = tl;
      if (plan) plan->load.push_back(e.expert);
      // Into the GPU queue by load (after experts of the same or higher load).
      gq.insert(std::upper_bound(gq.begin() + std::ptrdiff_t(gh), gq.end(), e, sched_heavier), e);
    }
  }
  *gpu_end = g_end;
  *cpu_end = c_end;
}

}  // namespace

SchedRule sched_rule(const std::string& name) {
  if (name == "completion") return SchedRule::kCompletion;
  if (name == "free") return SchedRule::kFree;
  throw Error("HybriMoE simulation: expected timeline \"completion\" or \"free\", found \"" + name +
              "\"");
}

bool sched_loads_misses(const std::string& misses) {
  if (misses == "schedule") return true;
  if (misses == "cpu") return false;
  throw Error("HybriMoE simulation: expected misses \"schedule\" or \"cpu\", found \"" + misses +
              "\"");
}

SchedPlan simulate_schedule(const std::vector<SchedExpert>& experts, const SchedCosts& costs,
                            SchedTimes start, bool has_gpu, SchedRule rule, bool load_misses) {
  SchedPlan p;
  run_schedule(experts, costs, start, has_gpu, rule, load_misses, &p, &p.gpu_end, &p.cpu_end);
  return p;
}

double schedule_makespan(const std::vector<SchedExpert>& experts, const SchedCosts& costs,
                         SchedTimes start, bool has_gpu, SchedRule rule, bool load_misses) {
  double g = 0, c = 0;
  run_schedule(experts, costs, start, has_gpu, rule, load_misses, nullptr, &g, &c);
  return std::max(g, c);
}

SchedPlan greedy_two_ended(const std::vector<SchedExpert>& experts, const SchedCosts& costs,
                           SchedTimes start, bool has_gpu) {
  SchedPlan p;
  std::vector<SchedExpert> q;
  for (const auto& e : experts) {
    if (e.cached) q.push_back(e);
  }
  // Load descending; equal loads keep the order given (the code's stable sort).
  auto by_load = [](const SchedExpert& a, const SchedExpert& b) { return a.load > b.load; };
  std::stable_sort(q.begin(), q.end(), by_load);
  const size_t n_cached = q.size();
  for (const auto& e : experts) {
    if (!e.cached) q.push_back(e);
  }
  std::stable_sort(q.begin() + std::ptrdiff_t(n_cached), q.end(), by_load);
  double tg = start.gpu, tc = start.cpu, tl = start.link;
  p.gpu_end = tg;
  p.cpu_end = tc;
  bool cpu_first = true;
  size_t i = 0, j = q.size();
  while (i < j) {
    const SchedExpert& f = q[i];
    const SchedExpert& b = q[j - 1];
    double gpu_finish = std::numeric_limits<double>::infinity(), link_end = tl;
    if (has_gpu) {
      double ready = f.ready_ns;
      if (!f.cached) {
        link_end = tl + costs.h2d();
        ready = link_end;
      }
      gpu_finish = std::max(tg, ready) + costs.gpu(f.load);
    }
    const double cpu_finish = tc + costs.cpu(b.load, cpu_first);
    if (gpu_finish <= cpu_finish) {
      tg = gpu_finish;
      if (!f.cached) {
        tl = link_end;
        p.load.push_back(f.expert);
      }
      p.gpu.push_back(f.expert);
      p.gpu_end = tg;
      ++i;
    } else {
      tc = cpu_finish;
      cpu_first = false;
      p.cpu.push_back(b.expert);
      p.cpu_end = tc;
      --j;
    }
  }
  return p;
}

}  // namespace moebench
