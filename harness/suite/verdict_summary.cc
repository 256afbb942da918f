// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// The figures' verdicts a paper suite ends with (suite_runner.cc calls it
// when a run completes): analysis/report.py --only for the figures that read
// the suite or its parts, then the next command.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/util/error.h"
#include "core/util/paths.h"
#include "core/util/strings.h"
#include "harness/suite/suite_internal.h"
#include "harness/suite/suite_runner.h"

namespace moebench {
namespace fs = std::filesystem;

namespace {

// The source tree holding analysis/: $MOEBENCH_HOME, else the build's source.
fs::path analysis_home() {
  if (const char* h = std::getenv("MOEBENCH_HOME"); h && *h) return h;
#ifdef MOEBENCH_SOURCE_DIR
  return MOEBENCH_SOURCE_DIR;
#else
  return ".";
#endif
}

// The Python that has the analysis's packages: $MOEBENCH_PYTHON, else the
// one `make` recorded (build/.python, "PYTHON=..."), else /usr/bin/python3.
std::string analysis_python(const fs::path& home) {
  if (const char* p = std::getenv("MOEBENCH_PYTHON"); p && *p) return p;
  try {
    for (const std::string& line : split(read_file(home / "build" / ".python"), '\n')) {
      if (starts_with(line, "PYTHON=") && line.size() > 7) return line.substr(7);
    }
  } catch (const Error&) {
  }
  return "/usr/bin/python3";
}

}  // namespace

// A paper suite ends with its figures' verdicts (analysis/report.py --only:
// the figure scripts that read this suite or its parts) and the next
// command. Runs the interpreter directly (no shell); a machine without it
// gets the command to run instead.
void print_verdict_summary(const SuiteOptions& opt, const Experiment& ex,
                           const std::vector<const Case*>& cases) {
  const fs::path home = analysis_home();
  const fs::path script = home / "analysis" / "report.py";
  std::set<std::string> names = {ex.suite.name, opt.file.stem().string()};
  for (const Case* c : cases) names.insert(c->parts.begin(), c->parts.end());
  const std::string only = join(std::vector<std::string>(names.begin(), names.end()), ",");
  const std::string py = analysis_python(home);
  const std::vector<std::string> args = {py,          script.string(),
                                         "--results", opt.results_root.string(),
                                         "--out",     (opt.results_root / "report").string(),
                                         "--only",    only};
  fmt::print("\nverdicts ({}; the rule: docs/REPRODUCING.md, \"Reading the report\"):\n",
             ex.suite.reproduces);
  std::fflush(stdout);
  int status = -1;
  std::error_code ec;
  if (fs::is_regular_file(script, ec)) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (::posix_spawnp(&pid, py.c_str(), nullptr, nullptr, argv.data(), environ) == 0) {
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    fmt::print("  (not computed here: {} did not run; run `{}` or `make report`)\n",
               script.string(), join(args, " "));
  }
  const bool default_root = opt.results_root == fs::path("results");
  fmt::print(
      "next: {} ({}/index.md: every figure and table with its verdict, and the before/after "
      "table)\n",
      default_root ? std::string("make report")
                   : fmt::format("{} {} --results {} --out {}", py, script.string(),
                                 opt.results_root.string(), (opt.results_root / "report").string()),
      (opt.results_root / "report").string());
}

}  // namespace moebench
