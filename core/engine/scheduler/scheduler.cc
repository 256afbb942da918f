// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/scheduler/scheduler.h"

#include <fmt/format.h>

#include "core/engine/scheduler/continuous_scheduler.h"
#include "core/engine/scheduler/static_scheduler.h"
#include "core/util/error.h"
#include "core/util/strings.h"

namespace moebench {

namespace {

struct Made {
  const char* name;
  std::unique_ptr<Scheduler> (*make)();
};

// Every scheduler, by name.
const Made kSchedulers[] = {
    {"static", [] { return std::unique_ptr<Scheduler>(std::make_unique<StaticScheduler>()); }},
    {"continuous",
     [] { return std::unique_ptr<Scheduler>(std::make_unique<ContinuousScheduler>()); }},
};

}  // namespace

std::vector<std::string> scheduler_names() {
  std::vector<std::string> v;
  for (const Made& m : kSchedulers) v.push_back(m.name);
  return v;
}

std::unique_ptr<Scheduler> make_scheduler(const std::string& name) {
  for (const Made& m : kSchedulers) {
    if (name == m.name) return m.make();
  }
  throw Error(fmt::format("scheduler: expected one of {}, found \"{}\"",
                          join(scheduler_names(), ", "), name));
}

}  // namespace moebench
