// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/scheduler/scheduler.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/config/validate.h"
#include "core/scheduler/continuous_scheduler.h"
#include "core/scheduler/static_scheduler.h"
#include "core/util/error.h"
#include "core/util/strings.h"

namespace moebench {

namespace {

struct Made {
  const char* name;
  const char* doc;
  std::unique_ptr<Scheduler> (*make)();
};

template <class S>
std::unique_ptr<Scheduler> make() {
  return std::make_unique<S>();
}

// Every scheduler, by name: the one list of them (the workload's checks,
// `moebench config list` and the engine all read it). The first is the
// default (workload.scheduler unset: the papers' fixed batches).
const Made kSchedulers[] = {
    {"static", "fixed batches of batch_size, each prefilled and decoded to its end",
     make<StaticScheduler>},
    {"continuous",
     "requests join and leave between steps, batch_size running at most (vLLM's and SGLang's)",
     make<ContinuousScheduler>},
};

const Made* find(const std::string& name) {
  for (const Made& m : kSchedulers) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> scheduler_names() {
  std::vector<std::string> v;
  for (const Made& m : kSchedulers) v.push_back(m.name);
  return v;
}

std::string scheduler_doc(const std::string& name) {
  const Made* m = find(name);
  return m ? m->doc : "";
}

std::unique_ptr<Scheduler> make_scheduler(const std::string& name) {
  const Made* m = find(name);
  if (!m) {
    throw Error(fmt::format("scheduler: expected one of {}, found \"{}\"",
                            join(scheduler_names(), ", "), name));
  }
  std::unique_ptr<Scheduler> s = m->make();
  s->name_ = m->name;
  return s;
}

void check_scheduler(const WorkloadSpec& w, const cfg::Value& src, const std::string& prefix) {
  cfg::require_key(src, prefix, "scheduler", find(w.scheduler) != nullptr,
                   fmt::format("one of {} (moebench config list)", join(scheduler_names(), ", ")),
                   fmt::format("\"{}\"", w.scheduler));
  const std::unique_ptr<Scheduler> s = make_scheduler(w.scheduler);
  const std::vector<std::string> own = s->settings();
  // Every scheduler once: those that serve arrivals, and the keys only others read.
  std::vector<std::string> serving, others;
  for (const Made& m : kSchedulers) {
    const std::unique_ptr<Scheduler> o = m.make();
    if (o->serves_arrivals()) serving.push_back(fmt::format("\"{}\"", m.name));
    for (const std::string& k : o->settings()) {
      if (std::find(own.begin(), own.end(), k) == own.end()) others.push_back(k);
    }
  }
  cfg::require_key(
      src, prefix, "scheduler", w.arrival == "batch" || s->serves_arrivals(),
      fmt::format("a scheduler that serves requests arriving over time ({}) with arrival = \"{}\"",
                  join(serving, ", "), w.arrival),
      fmt::format("\"{}\" (it runs fixed batches)", w.scheduler));
  // Another scheduler's key would be recorded without having any effect.
  for (const std::string& k : others) {
    cfg::require_key(src, prefix, k, src.find(k) == nullptr,
                     fmt::format("no {} with scheduler = \"{}\" (it reads {})", k, w.scheduler,
                                 own.empty() ? "none of the schedulers' keys" : join(own, ", ")),
                     "it is set");
  }
}

}  // namespace moebench
