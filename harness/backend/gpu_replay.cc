// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// moebench replay: a simulated task graph run for real (harness/backend/gpu_replay.h).

#include "harness/backend/gpu_replay.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/engine/cost_model.h"
#include "core/engine/lanes.h"
#include "core/experiment/experiment.h"
#include "core/util/atomic_file.h"
#include "core/util/error.h"
#include "core/util/json_text.h"
#include "core/util/strings.h"
#include "harness/backend/real_cpu_executor.h"
#include "kernels/cuda/gpu_experts.h"
#include "kernels/cuda/gpu_layer.h"

namespace moebench {

namespace {

constexpr int kLaneH2D = 0, kLaneGpu = 1, kLaneCpu = 2, kLaneD2H = 3, kLaneActH2D = 4;
constexpr int kLanes = 5;
// Two simulated times are the same event within this (the timeline's
// microseconds are printed to 17 digits).
constexpr double kSameTimeUs = 1e-3;

// The task kinds' classes are the engine's table (core/engine/lanes.cc).
bool is_class(const std::string& kind, TaskClass c) {
  const TaskKindInfo* i = task_info_named(kind);
  return i && i->cls == c;
}
bool is_copy(const std::string& kind) {
  return is_class(kind, TaskClass::kWeights);
}

}  // namespace

bool runs_for_real(const ReplayTask& t) {
  if (t.kind == "gpu-expert" || t.kind == "cpu-expert" || t.kind == "deferred-expert" ||
      is_copy(t.kind))
    return true;
  if (is_class(t.kind, TaskClass::kActivations)) return t.tokens > 0;
  if (t.kind == "shared-experts") return t.lane == kLaneCpu || t.lane == kLaneGpu;
  if (t.lane != kLaneGpu || t.tokens <= 0) return false;
  if (t.kind == "attention") return t.sequences > 0 && t.context > 0;
  return t.kind == "dense-ffn" || t.kind == "lm-head";
}

ReplayGraph load_replay_graph(const std::string& path, int64_t first_step, int64_t last_step) {
  const std::string text = read_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: expected a Chrome timeline (JSON), found invalid JSON: {}", path,
                            e.what()));
  }
  if (!j.is_object() || !j.contains("traceEvents") || !j["traceEvents"].is_array()) {
    throw Error(
        fmt::format("{}: expected a Chrome timeline with a traceEvents array, found none", path));
  }
  ReplayGraph g;
  size_t index = 0;
  for (const auto& e : j["traceEvents"]) {
    ++index;
    // Process 0 holds the lanes; a real run's measured tasks (process 1) are not part of the graph.
    if (!e.is_object() || e.value("ph", "") != "X" || e.value("pid", 0) != 0) continue;
    try {
      ReplayTask t;
      t.lane = e.at("tid").get<int>();
      if (t.lane < 0 || t.lane >= kLanes) {
        throw Error(fmt::format("tid: expected a lane 0 to {}, found {}", kLanes - 1, t.lane));
      }
      t.kind = e.at("cat").get<std::string>();
      if (!task_info_named(t.kind)) {
        std::vector<std::string> names;
        for (const TaskKindInfo& i : task_kinds()) names.push_back(i.name);
        throw Error(fmt::format("cat: expected a task kind ({}), found '{}'", join(names), t.kind));
      }
      t.sim_start_us = e.at("ts").get<double>();
      t.sim_end_us = t.sim_start_us + e.at("dur").get<double>();
      const auto& a = e.at("args");
      t.step = a.value("step", int64_t(-1));
      t.layer = a.value("layer", int32_t(-1));
      t.expert = a.value("expert", int32_t(-1));
      t.tokens = a.value("tokens", int64_t(-1));
      t.task = a.value("task", int64_t(-1));
      t.copy = a.value("copy", int64_t(-1));
      t.sequences = a.value("sequences", int64_t(-1));
      t.context = a.value("context", int64_t(-1));
      if (a.contains("waits")) t.waits = a["waits"].get<std::vector<int64_t>>();
      // The replay copies whole experts host to device: a copy that moved
      // fewer bytes or also wrote an expert back would be replayed wrong.
      if (a.value("reduced", false) || a.value("writeback", false)) {
        throw Error(fmt::format(
            "{} (step {}, layer {}, expert {}): expected whole-expert host-to-device copies "
            "(the replay copies each expert's bytes), found a copy {} (a strategy with "
            "residency.{}); not replayable yet",
            t.kind, t.step, t.layer, t.expert,
            a.value("reduced", false) ? "of reduced precision" : "that writes an expert back first",
            a.value("reduced", false) ? "reduced_copy_ratio < 1" : "writeback = true"));
      }
      if (is_class(t.kind, TaskClass::kKv)) {
        throw Error(fmt::format(
            "{} (step {}, layer {}): expected expert copies on the host-to-device lane, found a "
            "KV-cache copy (a strategy with residency.attention = \"gpu-host-kv\"); not "
            "replayable yet",
            t.kind, t.step, t.layer));
      }
      if (first_step >= 0 && t.step < first_step) continue;
      if (last_step >= 0 && t.step > last_step) continue;
      g.tasks.push_back(std::move(t));
    } catch (const nlohmann::json::exception& ex) {
      throw Error(
          fmt::format("{}: traceEvents[{}]: expected a task event (tid, cat, ts, dur, args), "
                      "found {}",
                      path, index - 1, ex.what()));
    } catch (const Error& ex) {
      throw Error(fmt::format("{}: traceEvents[{}]: {}", path, index - 1, ex.what()));
    }
  }
  if (g.tasks.empty()) {
    throw Error(fmt::format("{}: expected task events{}, found none", path,
                            first_step >= 0 || last_step >= 0
                                ? fmt::format(" in steps {}..{}", first_step, last_step)
                                : ""));
  }
  // Simulated start order; at equal times the lane that runs first in the
  // simulation (lane priority = its number), then the file's order.
  std::stable_sort(g.tasks.begin(), g.tasks.end(), [](const ReplayTask& a, const ReplayTask& b) {
    if (a.sim_start_us != b.sim_start_us) return a.sim_start_us < b.sim_start_us;
    return a.lane < b.lane;
  });
  return g;
}

void build_replay_deps(ReplayGraph& g) {
  auto& ts = g.tasks;
  std::map<int64_t, size_t> by_task, by_copy;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].task >= 0) by_task[ts[i].task] = i;
    if (ts[i].task < 0 && ts[i].copy >= 0) by_copy[ts[i].copy] = i;
  }
  // Tasks by simulated end, for "ended when this one started".
  std::vector<size_t> by_end(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) by_end[i] = i;
  std::sort(by_end.begin(), by_end.end(),
            [&](size_t a, size_t b) { return ts[a].sim_end_us < ts[b].sim_end_us; });
  for (size_t i = 0; i < ts.size(); ++i) {
    ReplayTask& t = ts[i];
    t.deps.clear();
    auto add = [&](size_t d) {
      // Only tasks earlier in the order: what is waited for was submitted first.
      if (d < i && std::find(t.deps.begin(), t.deps.end(), d) == t.deps.end()) t.deps.push_back(d);
    };
    for (int64_t w : t.waits) {
      const auto it = by_task.find(w);
      if (it != by_task.end()) add(it->second);
    }
    if (t.task >= 0 && t.copy >= 0) {
      const auto it = by_copy.find(t.copy);
      if (it != by_copy.end()) add(it->second);
    }
    auto lo = std::lower_bound(by_end.begin(), by_end.end(), t.sim_start_us - kSameTimeUs,
                               [&](size_t a, double v) { return ts[a].sim_end_us < v; });
    for (; lo != by_end.end() && ts[*lo].sim_end_us <= t.sim_start_us + kSameTimeUs; ++lo) {
      if (ts[*lo].lane != t.lane && ts[*lo].sim_end_us > ts[*lo].sim_start_us) add(*lo);
    }
    t.real = runs_for_real(t);
  }
}

namespace {

using GLane = gpu::GpuExperts::Lane;
GLane gpu_lane(int lane) {
  return lane == kLaneGpu   ? GLane::kCompute
         : lane == kLaneH2D ? GLane::kH2D
         : lane == kLaneD2H ? GLane::kD2H
                            : GLane::kActH2D;
}

}  // namespace

struct ReplayMachine::State {
  ReplayOptions opt;
  gpu::GpuExperts gpu;
  gpu::GpuLayer layer;  // on the GPU experts' compute stream
  RealCpuExecutor cpu;
  HardwareProfile hw;
  CostModel cost;
  std::vector<std::shared_ptr<uint8_t>> blobs;
  // A copy lands in the next slot of a ring: 512 slots (5-9 GiB for the
  // models here), so that a slot is reused only hundreds of copies later
  // and a copy's wait for the slot's previous reader (GpuExperts::load)
  // does not tie it to a task far from it in the graph.
  int resident_slots = 64, ring_slots = 512;
  int64_t act_bytes = 0;  // the activation copies' buffer so far

  explicit State(const ReplayOptions& o)
      : opt(o),
        gpu({{o.model.hidden_size, o.model.expert_intermediate},
             o.model.expert_dtype,
             64 + 512,
             o.max_tokens}),
        layer(layer_options(o), gpu.stream(GLane::kCompute)),
        cpu(o.model, cpu_options(o)),
        hw(load_hardware("local-cpu", ConfigPaths::defaults())),
        cost(o.model, hw) {
    const ExpertShape s{o.model.hidden_size, o.model.expert_intermediate};
    for (int b = 0; b < 4; ++b) {
      blobs.push_back(gpu::pinned_bytes(gpu.blob().bytes));
      gpu.blob().write(ExpertWeights::random(s, o.model.expert_dtype, uint64_t(b + 1)),
                       blobs.back().get());
    }
    for (int i = 0; i < resident_slots + ring_slots; ++i)
      gpu.load(i, blobs[size_t(i) % blobs.size()].get());
    std::vector<float> x(size_t(o.max_tokens * s.hidden), 0.01f), w(size_t(o.max_tokens), 1.0f),
        out(x.size(), 0.0f);
    gpu.put_activations(x.data(), w.data(), out.data(), o.max_tokens);
    gpu.synchronize();
  }
  static gpu::GpuLayer::Options layer_options(const ReplayOptions& o) {
    gpu::GpuLayer::Options l;
    l.shape = gpu::layer_shape(o.model);
    l.max_tokens = o.max_tokens;
    l.max_sequences = o.max_sequences;
    l.max_context = o.max_context;
    return l;
  }
  static RealCpuOptions cpu_options(const ReplayOptions& o) {
    RealCpuOptions r;
    r.threads = o.threads;
    r.spin_us = o.spin_us;
    r.weights_gib = o.weights_gib;
    return r;
  }
};

namespace {

// One graph's run on a machine: one host thread per lane.
struct Runner {
  ReplayGraph& g;
  ReplayMachine::State& m;
  // Per task: its start and end marks (GPU lanes), the slot its copy filled,
  // and whether it was submitted (GPU lanes) or finished (CPU lane).
  std::vector<int> start_mark, end_mark, slot;
  // Per task: whether it copies an expert's weights, looked up once here, not
  // by name on the lanes' threads, whose host time the replay measures.
  std::vector<uint8_t> weights_copy;
  std::unique_ptr<std::atomic<int>[]> done;
  std::chrono::steady_clock::time_point host0;
  int base_mark = -1;
  int next_ring = 0;  // the H2D lane's thread only
  std::atomic<bool> failed{false};
  std::string error;
  std::mutex error_mu;

  Runner(ReplayGraph& graph, ReplayMachine::State& machine)
      : g(graph),
        m(machine),
        start_mark(graph.tasks.size(), -1),
        end_mark(graph.tasks.size(), -1),
        slot(graph.tasks.size(), -1),
        weights_copy(graph.tasks.size(), 0),
        done(new std::atomic<int>[graph.tasks.size()]) {
    for (size_t i = 0; i < graph.tasks.size(); ++i) {
      done[i].store(0);
      weights_copy[i] = is_copy(graph.tasks[i].kind);
    }
    // The activation copies' buffers at their largest now: growing them
    // later would race between the D2H and act-H2D lanes' threads.
    int64_t act = 0;
    for (const auto& t : graph.tasks)
      if (t.real && is_class(t.kind, TaskClass::kActivations))
        act = std::max(act, t.tokens * m.opt.model.hidden_size * 2);
    if (act > m.act_bytes) {
      m.gpu.copy(GLane::kD2H, act);
      m.act_bytes = act;
    }
    m.gpu.synchronize();
    m.gpu.clear_events();
  }

  void wait_done(size_t d) {
    while (done[d].load(std::memory_order_acquire) == 0) done[d].wait(0, std::memory_order_acquire);
  }
  void fail(const std::string& what) {
    {
      std::lock_guard<std::mutex> l(error_mu);
      if (error.empty()) error = what;
    }
    failed.store(true);
    for (size_t i = 0; i < g.tasks.size(); ++i) {
      done[i].store(1, std::memory_order_release);
      done[i].notify_all();
    }
  }
  void finish(size_t i) {
    done[i].store(1, std::memory_order_release);
    done[i].notify_all();
  }

  // The tasks of the GPU-side lanes in `lanes` (bits), in order: one lane
  // per thread, or all four from one thread (ReplayOptions::one_launcher).
  void submit_lanes(unsigned lanes) {
    for (size_t i = 0; i < g.tasks.size() && !failed.load(); ++i) {
      ReplayTask& t = g.tasks[i];
      if (!(lanes & (1u << t.lane))) continue;
      const GLane L = gpu_lane(t.lane);
      for (size_t d : t.deps) {
        wait_done(d);
        if (failed.load()) return;
        if (g.tasks[d].lane == kLaneCpu) continue;  // finished: submitting now is after it
        m.gpu.wait(L, end_mark[d]);
      }
      start_mark[i] = m.gpu.record(L);
      if (!t.real) {
        m.gpu.spin(L, t.sim_end_us - t.sim_start_us);
      } else if (t.kind == "gpu-expert") {
        int s = -1;
        for (size_t d : t.deps)
          if (weights_copy[d] && g.tasks[d].copy == t.copy) s = slot[d];
        if (s < 0) s = int((int64_t(t.layer) * 1000003 + t.expert) % m.resident_slots);
        // Its own copy is an explicit dependency above; the slot's latest
        // load may be a later copy this lane's thread queued already.
        m.gpu.compute(s, std::clamp<int64_t>(t.tokens, 1, m.opt.max_tokens), false);
      } else if (t.lane == kLaneGpu) {  // the rest of a layer
        run_layer_task(t);
      } else if (weights_copy[i]) {
        slot[i] = m.resident_slots + (next_ring++ % m.ring_slots);
        m.gpu.load(slot[i], m.blobs[i % m.blobs.size()].get());
      } else {  // activations
        m.gpu.copy(L, t.tokens * m.opt.model.hidden_size * 2);
      }
      end_mark[i] = m.gpu.record(L);
      finish(i);
    }
  }

  // The rest of a layer on the GPU (gpu_layer.h), at most the counts its
  // buffers hold.
  void run_layer_task(const ReplayTask& t) {
    const int64_t T = std::clamp<int64_t>(t.tokens, 1, m.opt.max_tokens);
    const int layer = std::max(0, t.layer);
    if (t.kind == "attention") {
      const int64_t S = std::clamp<int64_t>(t.sequences, 1, std::min(T, m.opt.max_sequences));
      m.layer.attention(layer, T, S, std::clamp<int64_t>(t.context, 1, m.opt.max_context));
    } else if (t.kind == "shared-experts") {
      m.layer.shared_experts(layer, T);
    } else if (t.kind == "dense-ffn") {
      m.layer.dense_ffn(layer, T);
    } else if (t.kind == "lm-head") {
      m.layer.lm_head(T);
    } else {
      throw Error(fmt::format("replay: expected a layer task on the GPU, found '{}'", t.kind));
    }
  }

  void run_cpu_lane() {
    for (size_t i = 0; i < g.tasks.size() && !failed.load(); ++i) {
      ReplayTask& t = g.tasks[i];
      if (t.lane != kLaneCpu) continue;
      for (size_t d : t.deps) {
        wait_done(d);
        if (failed.load()) return;
        if (g.tasks[d].lane != kLaneCpu) m.gpu.host_wait(end_mark[d]);
      }
      const auto t0 = std::chrono::steady_clock::now();
      const int64_t T = std::max<int64_t>(1, t.tokens);
      if (t.kind == "cpu-expert" || t.kind == "deferred-expert") {
        m.cpu.cpu_expert_ns(m.cost, std::max(0, t.layer), std::max(0, t.expert), T, false);
      } else if (t.kind == "shared-experts") {
        m.cpu.shared_experts_ns(m.cost, std::max(0, t.layer), T);
      } else {
        const auto until =
            t0 + std::chrono::nanoseconds(int64_t((t.sim_end_us - t.sim_start_us) * 1e3));
        while (std::chrono::steady_clock::now() < until) {
        }
      }
      const auto t1 = std::chrono::steady_clock::now();
      t.real_start_us = std::chrono::duration<double, std::micro>(t0 - host0).count();
      t.real_end_us = std::chrono::duration<double, std::micro>(t1 - host0).count();
      finish(i);
    }
  }

  void run() {
    base_mark = m.gpu.record(GLane::kCompute);
    m.gpu.host_wait(base_mark);
    host0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    std::vector<unsigned> groups;
    if (m.opt.one_launcher) {
      groups.push_back((1u << kLaneGpu) | (1u << kLaneH2D) | (1u << kLaneD2H) |
                       (1u << kLaneActH2D));
    } else {
      for (int lane : {kLaneGpu, kLaneH2D, kLaneD2H, kLaneActH2D}) groups.push_back(1u << lane);
    }
    for (unsigned lanes : groups) {
      threads.emplace_back([this, lanes] {
        try {
          submit_lanes(lanes);
        } catch (const std::exception& e) {
          fail(e.what());
        }
      });
    }
    try {
      run_cpu_lane();
    } catch (const std::exception& e) {
      fail(e.what());
    }
    for (auto& th : threads) th.join();
    if (failed.load()) throw Error("replay: " + error);
    m.gpu.synchronize();
    for (size_t i = 0; i < g.tasks.size(); ++i) {
      ReplayTask& t = g.tasks[i];
      if (t.lane == kLaneCpu) continue;
      t.real_start_us = m.gpu.elapsed_ms(base_mark, start_mark[i]) * 1e3;
      t.real_end_us = m.gpu.elapsed_ms(base_mark, end_mark[i]) * 1e3;
    }
    m.gpu.clear_events();
  }
};

}  // namespace

ReplayMachine::ReplayMachine(const ReplayOptions& opt) {
  if (!gpu::available()) {
    throw Error("replay: expected a CUDA device to run the graph on, found " +
                gpu::describe_device());
  }
  st_ = std::make_unique<State>(opt);
}

ReplayMachine::~ReplayMachine() = default;

void ReplayMachine::run(ReplayGraph& g) {
  if (g.tasks.empty()) throw Error("replay: expected tasks to run, found none");
  Runner r(g, *st_);
  r.run();
  // Times from the first task's real start.
  double t0 = g.tasks.front().real_start_us;
  for (const auto& t : g.tasks) t0 = std::min(t0, t.real_start_us);
  for (auto& t : g.tasks) {
    t.real_start_us -= t0;
    t.real_end_us -= t0;
  }
}

std::vector<double> composed_ends(const ReplayGraph& g, std::vector<double>* starts) {
  std::vector<double> end(g.tasks.size(), 0.0);
  if (starts) starts->assign(g.tasks.size(), 0.0);
  double lane_free[kLanes] = {};
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const ReplayTask& t = g.tasks[i];
    double s = lane_free[t.lane];
    for (size_t d : t.deps) s = std::max(s, end[d]);
    end[i] = s + (t.real_end_us - t.real_start_us);
    lane_free[t.lane] = end[i];
    if (starts) (*starts)[i] = s;
  }
  return end;
}

nlohmann::ordered_json replay_summary(const ReplayGraph& g) {
  struct Span {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    void add(int k, double a, double b) {
      lo[k] = std::min(lo[k], a);
      hi[k] = std::max(hi[k], b);
    }
  };
  std::map<int64_t, Span> steps;  // 0 simulated, 1 composed, 2 real
  struct Kind {
    int64_t n = 0;
    double sim = 0, real = 0;
    bool real_run = false;
  };
  std::map<std::string, Kind> kinds;
  std::vector<double> cstart;
  const std::vector<double> cend = composed_ends(g, &cstart);
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const ReplayTask& t = g.tasks[i];
    Span& s = steps[t.step];
    s.add(0, t.sim_start_us, t.sim_end_us);
    s.add(1, cstart[i], cend[i]);
    s.add(2, t.real_start_us, t.real_end_us);
    Kind& k = kinds[t.kind + (t.lane == kLaneCpu ? " (cpu)" : "")];
    ++k.n;
    k.sim += t.sim_end_us - t.sim_start_us;
    k.real += t.real_end_us - t.real_start_us;
    k.real_run = k.real_run || t.real;
  }
  // A step's time runs from the previous step's last end (the first step:
  // from the first start) to its own last end, as TBT does: the gaps
  // between steps count.
  nlohmann::ordered_json j;
  nlohmann::ordered_json st = nlohmann::ordered_json::array();
  double prev[3];
  for (int k = 0; k < 3; ++k) prev[k] = steps.begin()->second.lo[k];
  double total[3] = {0, 0, 0};
  for (const auto& [step, s] : steps) {
    double d[3];
    for (int k = 0; k < 3; ++k) {
      d[k] = s.hi[k] - prev[k];
      prev[k] = s.hi[k];
      total[k] += d[k];
    }
    st.push_back({{"step", step},
                  {"sim_us", d[0]},
                  {"composed_us", d[1]},
                  {"real_us", d[2]},
                  {"real_over_sim", d[0] > 0 ? d[2] / d[0] : 0.0}});
  }
  const double sim = total[0], comp = total[1], real = total[2];
  nlohmann::ordered_json kd = nlohmann::ordered_json::array();
  for (const auto& [name, k] : kinds) {
    kd.push_back({{"kind", name},
                  {"tasks", k.n},
                  {"run", k.real_run ? "real" : "placeholder"},
                  {"sim_busy_us", k.sim},
                  {"real_busy_us", k.real},
                  {"real_over_sim", k.sim > 0 ? k.real / k.sim : 0.0}});
  }
  j["steps_sim_us"] = sim;
  j["steps_composed_us"] = comp;
  j["steps_real_us"] = real;
  j["end_to_end_error"] = sim > 0 ? real / sim - 1.0 : 0.0;
  j["table_error"] = sim > 0 ? comp / sim - 1.0 : 0.0;
  j["composition_error"] = comp > 0 ? real / comp - 1.0 : 0.0;
  j["per_step"] = st;
  j["per_kind"] = kd;
  return j;
}

std::string replay_chrome_json(const ReplayGraph& g, const std::string& title) {
  static const char* names[kLanes] = {"h2d", "gpu", "cpu", "d2h", "h2d-act"};
  nlohmann::ordered_json ev = nlohmann::ordered_json::array();
  for (int i = 0; i < kLanes; ++i) {
    ev.push_back({{"name", "thread_name"},
                  {"ph", "M"},
                  {"pid", 0},
                  {"tid", i},
                  {"args", {{"name", std::string(names[i]) + " (real)"}}}});
  }
  for (const auto& t : g.tasks) {
    std::string name = t.kind;
    if (t.expert >= 0)
      name += fmt::format(" L{} E{}", t.layer, t.expert);
    else if (t.layer >= 0)
      name += fmt::format(" L{}", t.layer);
    ev.push_back({{"name", name},
                  {"cat", t.kind},
                  {"ph", "X"},
                  {"pid", 0},
                  {"tid", t.lane},
                  {"ts", t.real_start_us},
                  {"dur", t.real_end_us - t.real_start_us},
                  {"args",
                   {{"step", t.step},
                    {"run", t.real ? "real" : "placeholder"},
                    {"sim_start_us", t.sim_start_us},
                    {"sim_dur_us", t.sim_end_us - t.sim_start_us}}}});
  }
  nlohmann::ordered_json j;
  j["traceEvents"] = ev;
  j["displayTimeUnit"] = "ns";
  j["otherData"] = {{"title", title}, {"time_unit", "microseconds (real clock)"}};
  return json_text(j);
}

}  // namespace moebench
