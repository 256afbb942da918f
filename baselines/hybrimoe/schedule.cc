// HybriMoE's scheduling simulation and the public code's greedy variant,
// shared by the assigners and the impact-driven prefetcher.
#include <algorithm>
#include <limits>

#include "baselines/hybrimoe/components.h"

namespace moebench {

namespace {
// Load descending, then expert id ascending.
bool heavier(const SchedExpert& a, const SchedExpert& b) {
  return a.load != b.load ? a.load > b.load : a.expert < b.expert;
}
}  // namespace

std::vector<SchedExpert> sched_experts(const Context& ctx, std::span<const ActiveExpert> active) {
  std::vector<SchedExpert> v;
  v.reserve(active.size());
  for (const auto& a : active) {
    SchedExpert s;
    s.expert = a.expert;
    s.load = a.tokens;
    s.cached = ctx.residency->cached(ctx.layer, a.expert);
    s.ready_ns = s.cached ? std::max(ctx.now_ns, ctx.residency->ready_ns(ctx.layer, a.expert)) : 0.0;
    v.push_back(s);
  }
  return v;
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

void run_schedule(const std::vector<SchedExpert>& experts, const SchedCosts& costs, SchedTimes start, bool has_gpu,
                  SchedPlan* plan, double* gpu_end, double* cpu_end) {
  thread_local SchedScratch sc;
  auto& gq = sc.gq;
  auto& cq = sc.cq;
  gq.clear();
  cq.clear();
  for (const auto& e : experts) {
    if (e.cached && has_gpu) gq.push_back(e);
    else cq.push_back(e);
  }
  std::sort(gq.begin(), gq.end(), heavier);
  std::sort(cq.begin(), cq.end(), [](const SchedExpert& a, const SchedExpert& b) { return heavier(b, a); });
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
    const bool link_can = has_gpu && ch < cq.size();
    const double g = gpu_can ? tg : kNever, c = cpu_can ? tc : kNever, l = link_can ? tl : kNever;
    if (gpu_can && g <= c && g <= l) {
      const SchedExpert& e = gq[gh++];
      tg = std::max(tg, e.ready_ns) + costs.gpu(e.load);
      g_end = tg;
      if (plan) plan->gpu.push_back(e.expert);
    } else if (cpu_can && c <= l) {
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
      gq.insert(std::upper_bound(gq.begin() + std::ptrdiff_t(gh), gq.end(), e, heavier), e);
    }
  }
  *gpu_end = g_end;
  *cpu_end = c_end;
}

}  // namespace

SchedPlan simulate_schedule(const std::vector<SchedExpert>& experts, const SchedCosts& costs, SchedTimes start,
                            bool has_gpu) {
  SchedPlan p;
  run_schedule(experts, costs, start, has_gpu, &p, &p.gpu_end, &p.cpu_end);
  return p;
}

double schedule_makespan(const std::vector<SchedExpert>& experts, const SchedCosts& costs, SchedTimes start,
                         bool has_gpu) {
  double g = 0, c = 0;
  run_schedule(experts, costs, start, has_gpu, nullptr, &g, &c);
  return std::max(g, c);
}

SchedPlan greedy_two_ended(const std::vector<SchedExpert>& experts, const SchedCosts& costs, SchedTimes start,
                           bool has_gpu) {
  SchedPlan p;
  std::vector<SchedExpert> q;
  for (const auto& e : experts) {
    if (e.cached) q.push_back(e);
  }
  std::sort(q.begin(), q.end(), heavier);
  const size_t n_cached = q.size();
  for (const auto& e : experts) {
    if (!e.cached) q.push_back(e);
  }
  std::sort(q.begin() + std::ptrdiff_t(n_cached), q.end(), heavier);
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
