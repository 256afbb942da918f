// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "harness/run/platform_provenance.h"

#include <oneapi/dnnl/dnnl.h>

#include <fmt/format.h>

#include "kernels/cuda/gpu_query.h"

namespace moebench {

namespace {

std::string format_cuda_version(int v) {
  if (v <= 0) return "";
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

void onednn_probe(Provenance& p) {
  const dnnl_version_t* v = dnnl_version();
  p.onednn_version = fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
}

void gpu_probe(Provenance& p) {
  const GpuQuery q = query_gpus();
  p.cuda_compiled = q.cuda_compiled;
  p.cuda_compiled_version = format_cuda_version(q.cuda_compiled_version);
  p.cuda_runtime_version = format_cuda_version(q.cuda_runtime_version);
  p.cuda_driver_version = format_cuda_version(q.cuda_driver_version);
  p.gpus = nlohmann::ordered_json::array();
  for (const auto& g : q.gpus) {
    nlohmann::ordered_json j;
    j["index"] = g.index;
    j["name"] = g.name;
    j["sm"] = fmt::format("{}.{}", g.sm_major, g.sm_minor);
    j["mem_bytes"] = g.mem_bytes;
    j["sm_count"] = g.sm_count;
    p.gpus.push_back(j);
  }
  p.gpu_note = q.note;
}

}  // namespace

std::vector<ProvenanceProbe> platform_provenance_probes() {
  return {onednn_probe, gpu_probe};
}

}  // namespace moebench
