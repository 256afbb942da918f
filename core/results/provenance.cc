// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/results/provenance.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include "core/util/cpu_info.h"
#include "core/util/strings.h"

#ifndef MOEBENCH_SOURCE_DIR
#define MOEBENCH_SOURCE_DIR "."
#endif

namespace moebench::build_info {
// core/results/build_info.cc.in, generated at configure time.
extern const char* const kGitCommit;
extern const char* const kBuildType;
extern const char* const kVersion;
}  // namespace moebench::build_info

namespace moebench {
namespace {

// Runs a shell command and returns its stdout (trimmed); "" on failure.
std::string run_capture(const std::string& cmd, bool* ok = nullptr) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    if (ok) *ok = false;
    return out;
  }
  std::array<char, 256> buf{};
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int rc = ::pclose(p);
  if (ok) *ok = rc == 0;
  return trim(out);
}

std::string format_time(const char* f) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, f, &tm);
  return buf;
}

}  // namespace

std::string utc_now_iso() {
  return format_time("%Y-%m-%dT%H:%M:%SZ");
}
std::string utc_now_stamp() {
  return format_time("%Y%m%dT%H%M%SZ");
}

Provenance collect_provenance(const std::vector<std::string>& argv,
                              const std::vector<ProvenanceProbe>& probes) {
  Provenance p;
  p.moebench_version = build_info::kVersion;
  p.build_commit = build_info::kGitCommit;
  p.build_type = build_info::kBuildType;
#if defined(__clang__)
  p.compiler = fmt::format("clang {}", __clang_version__);
#elif defined(__GNUC__)
  p.compiler = fmt::format("gcc {}", __VERSION__);
#else
  p.compiler = "unknown";
#endif
  const std::string src = MOEBENCH_SOURCE_DIR;
  bool ok = false;
  p.git_commit = run_capture(fmt::format("git -C '{}' rev-parse HEAD 2>/dev/null", src), &ok);
  if (!ok || p.git_commit.empty()) {
    p.git_commit = "unknown";
  } else {
    const std::string status = run_capture(
        fmt::format("git -C '{}' status --porcelain --untracked-files=no 2>/dev/null", src));
    p.git_dirty = !status.empty();
  }
  p.gpus = nlohmann::ordered_json::array();
  p.gpu_note = "not queried (no platform probe)";

  const CpuInfo& c = cpu_info();
  p.cpu_model = c.model;
  p.cpu_flags = c.flag_names();
  p.logical_cpus = c.logical_cpus;
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) == 0) p.hostname = host;
  p.utc_time = utc_now_iso();
  p.command_line = join(argv, " ");
  for (const auto& probe : probes) probe(p);
  return p;
}

nlohmann::ordered_json Provenance::to_json() const {
  nlohmann::ordered_json j;
  j["moebench_version"] = moebench_version;
  j["git_commit"] = git_commit;
  j["git_dirty"] = git_dirty;
  j["build_commit"] = build_commit;
  j["build_type"] = build_type;
  j["compiler"] = compiler;
  j["onednn_version"] = onednn_version;
  j["cuda_compiled"] = cuda_compiled;
  j["cuda_compiled_version"] = cuda_compiled_version;
  j["cuda_runtime_version"] = cuda_runtime_version;
  j["cuda_driver_version"] = cuda_driver_version;
  j["cpu_model"] = cpu_model;
  j["cpu_flags"] = cpu_flags;
  j["logical_cpus"] = logical_cpus;
  j["gpus"] = gpus;
  j["gpu_note"] = gpu_note;
  j["hostname"] = hostname;
  j["utc_time"] = utc_time;
  j["command_line"] = command_line;
  return j;
}

}  // namespace moebench
