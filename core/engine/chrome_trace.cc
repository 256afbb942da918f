// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The run's tasks as a Chrome trace (core/engine/engine.h, chrome_trace_json).
#include <fmt/format.h>

#include "core/engine/engine.h"
#include "core/util/json_text.h"

namespace moebench {

std::string chrome_trace_json(const std::vector<TaskRecord>& timeline, const std::string& title,
                              const std::vector<TaskRecord>& measured) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  const int processes = measured.empty() ? 1 : 2;
  for (int pid = 0; pid < processes; ++pid) {
    for (int i = 0; i < kNumLanes; ++i) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", pid},
                        {"tid", i},
                        {"args", {{"name", to_string(static_cast<Lane>(i))}}}});
    }
  }
  if (!measured.empty()) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"args", {{"name", "composed lanes"}}}});
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"args", {{"name", "measured (host clock)"}}}});
  }
  // Each dependency between two recorded lane tasks as a flow arrow (from
  // the end of the task waited for to the start of the one waiting).
  std::map<int64_t, const TaskRecord*> by_task, by_copy;
  for (const auto& t : timeline) {
    if (t.task >= 0) by_task[t.task] = &t;
    if (t.task < 0 && t.copy >= 0) by_copy[t.copy] = &t;
  }
  int64_t flow = 0;
  for (const auto& t : timeline) {
    const TaskRecord* waited[5] = {};
    for (int q = 0; q < 4; ++q) {
      const auto it = t.waits[q] >= 0 ? by_task.find(t.waits[q]) : by_task.end();
      if (it != by_task.end()) waited[q] = it->second;
    }
    if (t.task >= 0 && t.copy >= 0) {  // a GPU expert and its own copy
      const auto it = by_copy.find(t.copy);
      if (it != by_copy.end()) waited[4] = it->second;
    }
    for (const TaskRecord* w : waited) {
      if (!w) continue;
      const TaskRecord& from = *w;
      events.push_back({{"name", "waits for"},
                        {"cat", "dependency"},
                        {"ph", "s"},
                        {"id", flow},
                        {"pid", 0},
                        {"tid", static_cast<int>(from.lane)},
                        {"ts", from.end_ns / 1e3}});
      events.push_back({{"name", "waits for"},
                        {"cat", "dependency"},
                        {"ph", "f"},
                        {"bp", "e"},
                        {"id", flow},
                        {"pid", 0},
                        {"tid", static_cast<int>(t.lane)},
                        {"ts", t.start_ns / 1e3}});
      ++flow;
    }
  }
  // Process 0: the lanes' tasks with their graph, for tools that read the
  // timeline back (moebench replay): the task's id, the ids it waits for,
  // its copy's transfer id. Process 1: a real run's executed tasks as
  // measured (their records carry no graph: what they waited for is in
  // process 0).
  auto task_event = [&](const TaskRecord& t, int pid) {
    nlohmann::ordered_json args = {{"step", t.step}};
    if (t.layer >= 0) args["layer"] = t.layer;
    if (t.expert >= 0) args["expert"] = t.expert;
    if (t.tokens >= 0) args["tokens"] = t.tokens;
    if (t.sequences >= 0) args["sequences"] = t.sequences;
    if (t.context >= 0) args["context"] = t.context;
    if (t.task >= 0) args["task"] = t.task;
    nlohmann::ordered_json waits = nlohmann::ordered_json::array();
    for (int64_t w : t.waits)
      if (w >= 0) waits.push_back(w);
    if (!waits.empty()) args["waits"] = waits;
    if (t.copy >= 0) args["copy"] = t.copy;
    if (t.reduced) args["reduced"] = true;
    if (t.writeback) args["writeback"] = true;
    std::string name = to_string(t.kind);
    if (t.expert >= 0)
      name += fmt::format(" L{} E{}", t.layer, t.expert);
    else if (t.layer >= 0)
      name += fmt::format(" L{}", t.layer);
    events.push_back({{"name", name},
                      {"cat", to_string(t.kind)},
                      {"ph", "X"},
                      {"pid", pid},
                      {"tid", static_cast<int>(t.lane)},
                      {"ts", t.start_ns / 1e3},
                      {"dur", (t.end_ns - t.start_ns) / 1e3},
                      {"args", args}});
  };
  for (const auto& t : timeline) task_event(t, 0);
  for (const auto& t : measured) task_event(t, 1);
  nlohmann::ordered_json j;
  j["traceEvents"] = events;
  j["displayTimeUnit"] = "ns";
  j["otherData"] = {
      {"title", title},
      {"time_unit", measured.empty() ? "microseconds (simulated clock)"
                                     : "microseconds (process 0: the lanes' composition of the "
                                       "measured durations; process 1: the host clock)"}};
  return json_text(j);
}

}  // namespace moebench
