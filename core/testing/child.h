// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Tests that set a process-wide limit (an rlimit, a signal disposition) run
// that part in a child process, so the limit never binds the test runner.

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>

namespace moebench::testing {

// Runs body() in a forked child and returns its exit code (body's return
// value; 125 when it threw), or 1000 + the signal's number when the child
// ended by a signal, or -1 when no child could be started.
inline int exit_code_in_child(const std::function<int()>& body) {
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) {
    int code = 125;
    try {
      code = body();
    } catch (...) {
    }
    ::_exit(code);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
}

// Limits this process's address space to what it maps now plus `extra`
// bytes (RLIMIT_AS); false when the limit cannot be set. For a child only.
inline bool limit_address_space_above_now(uint64_t extra) {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;  // VmSize in pages
  const rlim_t cap = rlim_t(pages) * uint64_t(::sysconf(_SC_PAGESIZE)) + extra;
  const rlimit lim{cap, cap};
  return ::setrlimit(RLIMIT_AS, &lim) == 0;
}

}  // namespace moebench::testing
