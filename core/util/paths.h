// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Names that become paths, and files that are read. Every writer that turns
// a user-chosen name into a path (a suite name -> results/<name>/) goes
// through child_path(), and every reader of a user-named file checks it with
// require_regular_file() first, so that
//   - a name never leaves the folder it is joined to ("..", "/tmp/x",
//     "a/../../b" and control characters are refused), and
//   - a FIFO, a device (/dev/zero) or a folder is refused by name instead of
//     blocking forever or being read without end.

#include <filesystem>
#include <string>
#include <string_view>

namespace moebench {

// The most characters a name may have.
inline constexpr size_t kMaxNameChars = 128;

// Why `name` cannot be one path component ("" when it can): it must be 1 to
// kMaxNameChars characters of letters, digits, '-', '_' and '.', and must
// not start with '.' (so neither "." nor ".." nor a hidden folder).
std::string name_problem(std::string_view name);

// The rule name_problem() enforces, for error messages.
std::string name_rule();
// `name` quoted for an error message, control characters escaped (\x01).
std::string shown_name(std::string_view name);

// root / name, after checking that `name` is one safe component (throws
// moebench::Error naming `what`, e.g. "suite.name", and the name). The
// result is lexically inside `root`.
std::filesystem::path child_path(const std::filesystem::path& root, std::string_view name,
                                 const std::string& what);

// What kind of file system object `path` is, as an error message says it:
// "a regular file", "a directory", "a FIFO (named pipe)", "a character
// device", "a block device", "a socket", "a symbolic link to nothing",
// "no such file", or "an unreadable path (<reason>)". Does not open it.
std::string file_kind(const std::filesystem::path& path);

// A file's identity for "has it changed?": device, inode, size and
// modification time (ns), as text. stat_stamp() formats the fields, so a
// stamp taken from an open file descriptor compares equal to file_stamp()
// of its path while neither changed. file_stamp() is "" for a path that
// cannot be stat()ed.
std::string stat_stamp(uint64_t dev, uint64_t ino, uint64_t size, int64_t mtime_ns);
std::string file_stamp(const std::filesystem::path& path);

// Throws moebench::Error "<path>: expected <expected>, found <file_kind>"
// unless `path` is (a link to) a regular file. Never blocks: a FIFO is
// refused without opening it.
void require_regular_file(const std::filesystem::path& path,
                          const std::string& expected = "a regular file");

}  // namespace moebench
