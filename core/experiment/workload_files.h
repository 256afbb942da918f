// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The files a workload reads when an experiment is expanded (a routing trace
// and its calibration trace, a requests file), each opened and checked once
// however many cases read it, their bytes hashed into the cases' identity;
// and the workload checks that need the model. Used by experiment.cc.

#include <filesystem>
#include <map>
#include <string>

#include "core/config/model_spec.h"
#include "core/config/value.h"
#include "core/config/workload_spec.h"
#include "core/experiment/requests_file.h"
#include "core/trace/trace.h"

namespace moebench {

class WorkloadFiles {
 public:
  // A trace workload (`wl` its table): the selection applied (the first
  // `sequences`, prompts and generations capped), batch_size checked against
  // it, the values that apply recorded in `w` (the sequences kept, the
  // longest prompt and generation), the files' SHA-256 too and their stamps
  // in `stamps`.
  void resolve_trace(WorkloadSpec& w, const cfg::Value& wl, const ModelSpec& m,
                     const std::filesystem::path& base_dir,
                     std::map<std::string, std::string>* stamps);
  // A served workload's requests file (workload.arrivals), or nullptr
  // without one: its SHA-256 joins the case's identity, `sequences` must not
  // pass its lines, and with lengths = "file" the longest prompt and decode
  // kept are recorded as prompt_len and decode_len.
  const RequestsFile* resolve_requests(WorkloadSpec& w, const cfg::Value& wl, const ModelSpec& m,
                                       const std::filesystem::path& base_dir);

 private:
  // A trace file's header and its identity when opened.
  struct TraceHeader {
    TraceInfo info;
    std::string path, stamp, sha256;
  };
  const TraceHeader& header(const cfg::Value& wl, const std::string& key, const std::string& rel,
                            const std::filesystem::path& base_dir, const ModelSpec& m);

  std::map<std::string, TraceHeader> traces_;     // by path and model
  std::map<std::string, RequestsFile> requests_;  // by path and what was read of it
};

// A workload of requests drawn at load as it will be when its cases run:
// arrivals spread past kMaxArrivalSpanS are refused at the key that spreads them.
void check_requests(const WorkloadSpec& w, const cfg::Value& wl, const RequestsFile* file);
// A synthetic workload's longest sequence must fit the model's context.
void check_context(const ModelSpec& m, const WorkloadSpec& w, const cfg::Value& wl);

}  // namespace moebench
