// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Crash-safe file output. Every result file moebench writes goes through
// here, so a run killed at any instant (kill -9, power loss after fsync)
// leaves either the previous complete file or the new complete file at the
// destination, never a truncated one.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace moebench {

// Writes `content` to `path` atomically: the bytes go to a temporary file in
// the same directory, are fsync'ed, and the temporary is renamed over `path`
// (then the directory is fsync'ed). Creates missing parent directories.
// Only a new file or a regular file is replaced: a device, a FIFO, a folder
// or a symbolic link at `path` is refused before anything is written.
// Throws moebench::Error naming the path and the system error on failure.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// Streaming variant for large files (trace files). Nothing appears at `path`
// until commit(); an uncommitted writer removes its temporary when destroyed.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  // Overwrites bytes already written (e.g. a header whose size was reserved).
  void pwrite(uint64_t offset, const void* data, size_t n);
  uint64_t bytes_written() const { return written_; }
  const std::filesystem::path& path() const { return path_; }
  // Flushes, fsyncs and renames the temporary into place. REQUIRES: not yet committed.
  void commit();

 private:
  std::filesystem::path path_, tmp_;
  int fd_ = -1;
  uint64_t written_ = 0;
  bool committed_ = false;
};

// The name a temporary for `path` gets: "<name>.tmp.<pid>.<n>".
std::filesystem::path temporary_path_for(const std::filesystem::path& path);

// Removes temporaries in `dir` (not recursive) left behind by writers whose
// process no longer exists, only those of files `ours` names (given the name
// before ".tmp."): a user's "draft.tmp.999999.0" is not ours to delete.
// Returns how many were removed.
int remove_stale_temporaries(const std::filesystem::path& dir,
                             const std::function<bool(const std::string&)>& ours);

// Throws moebench::Error ("<what>: expected ..., found ...") unless
// write_file_atomic(path, ...) can succeed as far as can be known before the
// work that produces the content: `path` is absent or a regular file, and a
// file can be created in its folder (tried and removed), or the folder's
// nearest existing ancestor is a writable directory. For tools that measure
// for minutes before they write.
void check_writable(const std::filesystem::path& path, const std::string& what);

// Reads a whole file. Throws moebench::Error ("<path>: expected a readable
// file, found <reason>") when it cannot.
std::string read_file(const std::filesystem::path& path);

// The lower-case hex SHA-256 of a regular file's bytes, read in chunks (a
// trace of hundreds of MB is never held whole). Remembered for the process by
// path and identity (core/util/paths.h, file_stamp), so a file read by
// several expansions of one suite (run_suite --points) is hashed once.
// Throws moebench::Error as read_file does.
std::string file_sha256(const std::filesystem::path& path);

}  // namespace moebench
