// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/paths.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/util/error.h"

namespace moebench {
namespace fs = std::filesystem;

std::string name_rule() {
  return fmt::format(
      "a name of 1 to {} letters, digits, '-', '_' or '.', not starting with '.' (a name, not a "
      "path)",
      kMaxNameChars);
}

std::string name_problem(std::string_view name) {
  if (name.empty()) return "it is empty";
  if (name.size() > kMaxNameChars) return fmt::format("it has {} characters", name.size());
  if (name == "." || name == "..") return "it names the folder itself or its parent";
  if (name.front() == '.') return "it starts with '.'";
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || c == '\\') return "it holds a path separator ('" + std::string(1, c) + "')";
    if (u < 0x20 || u == 0x7f)
      return fmt::format("it holds a control character (0x{:02x})", unsigned(u));
    if (!(std::isalnum(u) || c == '-' || c == '_' || c == '.')) {
      return u < 0x80 ? fmt::format("it holds the character '{}'", c)
                      : "it holds a non-ASCII character";
    }
  }
  return "";
}

std::string shown_name(std::string_view name) {
  // Control characters are shown escaped (a terminal would act on them).
  std::string shown;
  for (char c : name.substr(0, kMaxNameChars)) {
    const auto u = static_cast<unsigned char>(c);
    shown += (u < 0x20 || u == 0x7f) ? fmt::format("\\x{:02x}", unsigned(u)) : std::string(1, c);
  }
  return "'" + shown + (name.size() > kMaxNameChars ? "...'" : "'");
}

fs::path child_path(const fs::path& root, std::string_view name, const std::string& what) {
  const std::string problem = name_problem(name);
  if (!problem.empty()) {
    throw Error(
        fmt::format("{}: expected {}, found {}: {}", what, name_rule(), shown_name(name), problem));
  }
  return root / fs::path(std::string(name));
}

std::string file_kind(const fs::path& path) {
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      struct stat lb {};
      if (::lstat(path.c_str(), &lb) == 0 && S_ISLNK(lb.st_mode))
        return "a symbolic link to nothing";
      return "no such file";
    }
    return fmt::format("an unreadable path ({})", std::strerror(err));
  }
  if (S_ISREG(sb.st_mode)) return "a regular file";
  if (S_ISDIR(sb.st_mode)) return "a directory";
  if (S_ISFIFO(sb.st_mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(sb.st_mode)) return "a character device";
  if (S_ISBLK(sb.st_mode)) return "a block device";
  if (S_ISSOCK(sb.st_mode)) return "a socket";
  return "something that is not a regular file";
}

std::string stat_stamp(uint64_t dev, uint64_t ino, uint64_t size, int64_t mtime_ns) {
  return fmt::format("dev {} inode {} size {} mtime {}", dev, ino, size, mtime_ns);
}

std::string file_stamp(const fs::path& path) {
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) return "";
  return stat_stamp(uint64_t(sb.st_dev), uint64_t(sb.st_ino), uint64_t(sb.st_size),
                    int64_t(sb.st_mtim.tv_sec) * 1000000000 + sb.st_mtim.tv_nsec);
}

void require_regular_file(const fs::path& path, const std::string& expected) {
  const std::string kind = file_kind(path);
  if (kind != "a regular file")
    throw Error(fmt::format("{}: expected {}, found {}", path.string(), expected, kind));
}

}  // namespace moebench
