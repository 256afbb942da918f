// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/stdio_guard.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

namespace moebench {

namespace {

bool g_stdout_was_closed = false;

// Opens `device` on descriptor `fd` when fd is closed; true when it was.
bool reopen_if_closed(int fd, const char* device, int flags) {
  if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) return false;
  const int got = ::open(device, flags);
  if (got >= 0 && got != fd) {
    ::dup2(got, fd);
    ::close(got);
  }
  return true;
}

}  // namespace

void guard_standard_streams() {
  reopen_if_closed(STDIN_FILENO, "/dev/null", O_RDONLY);
  g_stdout_was_closed = reopen_if_closed(STDOUT_FILENO, "/dev/full", O_WRONLY);
  reopen_if_closed(STDERR_FILENO, "/dev/null", O_WRONLY);
}

int finish_stdout(const char* tool, int code) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && !std::ferror(stdout) && !std::cout.fail()) return code;
  const std::string why = g_stdout_was_closed ? std::string("stdout was closed")
                          : err != 0          ? std::string(std::strerror(err))
                                     : std::string("a write failed (a full disk or device?)");
  std::fprintf(stderr, "%s: error: could not write the output to stdout: %s\n", tool, why.c_str());
  std::clearerr(stdout);
  return code == 0 ? 2 : code;
}

}  // namespace moebench
