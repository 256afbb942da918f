// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// DALI's assignment problem, the greedy (Algorithm 1) and the exact optimum.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "baselines/dali/components.h"

namespace moebench {

AssignProblem assign_problem(const Context& ctx, int64_t max_gpu_loads) {
  AssignProblem p;
  p.has_gpu = ctx.cost->has_gpu();
  p.max_gpu_loads = max_gpu_loads;
  p.cpu_warmup = ctx.cost->cpu_expert_ns(1, true) - ctx.cost->cpu_expert_ns(1, false);
  for (const auto& a : ctx.active) {
    AssignItem it;
    it.expert = a.expert;
    it.cached = ctx.residency->cached(ctx.layer, a.expert);
    // Transfer time: none when resident, what is left of the copy when in
    // flight (a prefetch), a whole copy otherwise.
    const double transfer =
        !it.cached ? ctx.cost->h2d_expert_ns()
                   : std::max(0.0, ctx.residency->ready_ns(ctx.layer, a.expert) - ctx.now_ns);
    it.gpu = std::max(transfer, ctx.cost->gpu_expert_ns(a.tokens));
    it.cpu = ctx.cost->cpu_expert_ns(a.tokens, false);
    p.items.push_back(it);
  }
  return p;
}

double assign_cost(const AssignProblem& p, const std::vector<uint8_t>& on_gpu) {
  double g = 0, c = 0;
  bool any_cpu = false;
  for (size_t i = 0; i < p.items.size(); ++i) {
    if (on_gpu[i]) {
      g += p.items[i].gpu;
    } else {
      c += p.items[i].cpu;
      any_cpu = true;
    }
  }
  return std::max(g, c + (any_cpu ? p.cpu_warmup : 0.0));
}

namespace {
std::vector<size_t> by_difference(const AssignProblem& p) {
  std::vector<size_t> order(p.items.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double da = std::abs(p.items[a].gpu - p.items[a].cpu),
                 db = std::abs(p.items[b].gpu - p.items[b].cpu);
    if (da != db) return da > db;
    return p.items[a].expert < p.items[b].expert;
  });
  return order;
}
}  // namespace

std::vector<uint8_t> greedy_assign(const AssignProblem& p) {
  std::vector<uint8_t> on_gpu(p.items.size(), 0);
  if (!p.has_gpu) return on_gpu;
  double tg = 0, tc = 0;
  int64_t loads = 0;
  for (size_t i : by_difference(p)) {
    const AssignItem& it = p.items[i];
    const double c = it.cpu + (tc == 0 ? p.cpu_warmup : 0.0);
    const bool load_ok = it.cached || p.max_gpu_loads < 0 || loads < p.max_gpu_loads;
    if (load_ok && tg + it.gpu <= tc + c) {
      on_gpu[i] = 1;
      tg += it.gpu;
      loads += it.cached ? 0 : 1;
    } else {
      tc += c;
    }
  }
  return on_gpu;
}

std::vector<uint8_t> optimal_assign(const AssignProblem& p, int64_t max_nodes, bool* proven) {
  const size_t n = p.items.size();
  std::vector<uint8_t> best = greedy_assign(p);
  if (proven) *proven = true;
  if (!p.has_gpu || n == 0) return best;
  double best_cost = assign_cost(p, best);
  const std::vector<size_t> order = by_difference(p);
  // suffix_min[d] = sum over order[d..] of min(t_gpu, t_cpu)
  std::vector<double> suffix_min(n + 1, 0.0);
  for (size_t d = n; d-- > 0;) {
    const AssignItem& it = p.items[order[d]];
    suffix_min[d] = suffix_min[d + 1] + std::min(it.gpu, it.cpu);
  }
  std::vector<uint8_t> cur(n, 0);
  int64_t nodes = 0;
  bool complete = true;
  // Depth-first: the cheaper device for the item first.
  auto dfs = [&](auto&& self, size_t d, double tg, double tc, int64_t loads) -> void {
    if (++nodes > max_nodes) {
      complete = false;
      return;
    }
    const double tcw = tc > 0 ? tc + p.cpu_warmup : 0.0;
    const double bound = std::max({tg, tcw, (tg + tcw + suffix_min[d]) / 2.0});
    if (bound >= best_cost) return;
    if (d == n) {
      best_cost = std::max(tg, tcw);
      best = cur;
      return;
    }
    const size_t i = order[d];
    const AssignItem& it = p.items[i];
    const bool load_ok = it.cached || p.max_gpu_loads < 0 || loads < p.max_gpu_loads;
    const bool gpu_first = it.gpu <= it.cpu;
    for (int side = 0; side < 2; ++side) {
      const bool g = (side == 0) == gpu_first;
      if (g) {
        if (!load_ok) continue;
        cur[i] = 1;
        self(self, d + 1, tg + it.gpu, tc, loads + (it.cached ? 0 : 1));
        cur[i] = 0;
      } else {
        self(self, d + 1, tg, tc + it.cpu, loads);
      }
      if (!complete) return;
    }
  };
  dfs(dfs, 0, 0.0, 0.0, 0);
  if (proven) *proven = complete;
  return best;
}

void to_layer_plan(const AssignProblem& p, const std::vector<uint8_t>& on_gpu,
                   int32_t staging_buffers, LayerPlan& out) {
  std::vector<size_t> gpu_res, gpu_load, cpu;
  for (size_t i = 0; i < p.items.size(); ++i) {
    if (!on_gpu[i])
      cpu.push_back(i);
    else if (p.items[i].cached)
      gpu_res.push_back(i);
    else
      gpu_load.push_back(i);
  }
  auto by_gpu = [&](size_t a, size_t b) {
    return p.items[a].gpu != p.items[b].gpu ? p.items[a].gpu > p.items[b].gpu
                                            : p.items[a].expert < p.items[b].expert;
  };
  std::stable_sort(gpu_res.begin(), gpu_res.end(), by_gpu);
  std::stable_sort(gpu_load.begin(), gpu_load.end(), by_gpu);
  std::stable_sort(cpu.begin(), cpu.end(), [&](size_t a, size_t b) {
    return p.items[a].cpu != p.items[b].cpu ? p.items[a].cpu > p.items[b].cpu
                                            : p.items[a].expert < p.items[b].expert;
  });
  for (size_t i : gpu_res) out.gpu.push_back(p.items[i].expert);
  for (size_t i : gpu_load) {
    out.gpu.push_back(p.items[i].expert);
    out.load.push_back(p.items[i].expert);
  }
  for (size_t i : cpu) out.cpu.push_back(p.items[i].expert);
  out.staging_buffers = staging_buffers;
}

}  // namespace moebench
