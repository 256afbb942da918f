// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/util/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "core/util/error.h"
#include "core/util/memory.h"
#include "core/util/paths.h"
#include "core/util/sha256.h"
#include "core/util/strings.h"

namespace moebench {
namespace fs = std::filesystem;

namespace {

std::atomic<uint64_t> g_counter{0};

[[noreturn]] void fail(const fs::path& path, std::string_view what) {
  throw Error(fmt::format("{}: expected to be able to {}, found: {}", path.string(), what,
                          std::strerror(errno)));
}

void fsync_dir(const fs::path& dir) {
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: some file systems refuse fsync on directories
    ::close(dfd);
  }
}

void ensure_parent(const fs::path& path) {
  const fs::path parent = path.parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) {
    throw Error(fmt::format("{}: expected to be able to create directory, found: {}",
                            parent.string(), ec.message()));
  }
}

}  // namespace

fs::path temporary_path_for(const fs::path& path) {
  return fs::path(path.string() + fmt::format(".tmp.{}.{}", ::getpid(), g_counter++));
}

static void require_replaceable(const fs::path& path) {
  struct stat lb {};
  if (::lstat(path.c_str(), &lb) != 0) {
    if (errno == ENOENT) return;  // a new file
    fail(path, "inspect the destination");
  }
  if (S_ISREG(lb.st_mode)) return;
  // The rename would put a regular file where a device, a FIFO, a folder or
  // a link was (as root, /dev/null itself): refused, nothing written.
  const std::string kind =
      S_ISLNK(lb.st_mode) ? "a symbolic link (to " + file_kind(path) + ")" : file_kind(path);
  throw Error(fmt::format(
      "{}: expected a new file or a regular file to replace, found {}; nothing was written (name "
      "a file path instead)",
      path.string(), kind));
}

AtomicFileWriter::AtomicFileWriter(fs::path path) : path_(std::move(path)) {
  require_replaceable(path_);
  ensure_parent(path_);
  tmp_ = temporary_path_for(path_);
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(tmp_, "create a file");
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) {
    std::error_code ec;
    fs::remove(tmp_, ec);
  }
}

void AtomicFileWriter::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(tmp_, "write");
    }
    p += w;
    n -= static_cast<size_t>(w);
    written_ += static_cast<uint64_t>(w);
  }
}

void AtomicFileWriter::pwrite(uint64_t offset, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(tmp_, "write");
    }
    p += w;
    offset += static_cast<uint64_t>(w);
    n -= static_cast<size_t>(w);
  }
}

void AtomicFileWriter::commit() {
  if (committed_)
    throw InternalError("AtomicFileWriter::commit called twice for " + path_.string());
  if (::fsync(fd_) != 0) fail(tmp_, "flush to disk");
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail(tmp_, "close");
  }
  fd_ = -1;
  require_replaceable(path_);  // again: the destination may have appeared meanwhile
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail(path_, "rename into place");
  committed_ = true;
  fsync_dir(path_.parent_path());
}

void write_file_atomic(const fs::path& path, std::string_view content) {
  AtomicFileWriter w(path);
  w.write(content);
  w.commit();
}

int remove_stale_temporaries(const fs::path& dir,
                             const std::function<bool(const std::string&)>& ours) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  int removed = 0;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto pos = name.rfind(".tmp.");
    if (pos == std::string::npos || !ours(name.substr(0, pos))) continue;
    std::error_code kind_ec;
    if (!entry.is_regular_file(kind_ec)) continue;
    const auto parts = split(std::string_view(name).substr(pos + 5), '.');
    if (parts.size() != 2) continue;
    char* end = nullptr;
    const long pid = std::strtol(parts[0].c_str(), &end, 10);
    if (end == parts[0].c_str() || *end != '\0' || pid <= 0) continue;
    const bool alive = ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
    if (alive && pid != ::getpid()) continue;
    if (pid == ::getpid()) continue;  // our own writers are still open
    std::error_code rec;
    if (fs::remove(entry.path(), rec)) ++removed;
  }
  return removed;
}

namespace {

// A regular file open for reading (a FIFO would block and /dev/zero never
// end: only regular files are read), closed when it goes; what read_file and
// file_sha256 share. Throws moebench::Error naming the path.
class ReadableFile {
 public:
  explicit ReadableFile(const fs::path& path) : path_(path) {
    const std::string kind = file_kind(path);
    if (kind != "a regular file")
      throw Error(fmt::format("{}: expected a readable file, found {}", path.string(), kind));
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) {
      throw Error(fmt::format("{}: expected a readable file, found: {}", path.string(),
                              std::strerror(errno)));
    }
    if (::fstat(fd_, &sb_) != 0 || !S_ISREG(sb_.st_mode)) {
      ::close(fd_);
      throw Error(
          fmt::format("{}: expected a readable file, found something that is not a regular file",
                      path.string()));
    }
  }
  ~ReadableFile() { ::close(fd_); }
  ReadableFile(const ReadableFile&) = delete;
  ReadableFile& operator=(const ReadableFile&) = delete;

  const struct stat& stat() const { return sb_; }
  // Up to n bytes into p; 0 at the end of the file.
  size_t read(char* p, size_t n) {
    while (true) {
      const ssize_t got = ::read(fd_, p, n);
      if (got >= 0) return size_t(got);
      if (errno == EINTR) continue;
      throw Error(fmt::format("{}: expected a readable file, found: {}", path_.string(),
                              std::strerror(errno)));
    }
  }

 private:
  fs::path path_;
  int fd_ = -1;
  struct stat sb_ {};
};

}  // namespace

std::string read_file(const fs::path& path) {
  ReadableFile f(path);
  check_allocation(uint64_t(f.stat().st_size), path.string() + " (read whole)");
  std::string out;
  out.resize(size_t(f.stat().st_size));
  size_t have = 0;
  while (true) {
    if (have == out.size()) out.resize(out.size() + 65536);  // the file grew meanwhile
    const size_t n = f.read(out.data() + have, out.size() - have);
    if (n == 0) break;
    have += n;
  }
  out.resize(have);
  return out;
}

std::string file_sha256(const fs::path& path) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;  // path and stamp -> hash
  ReadableFile f(path);
  const struct stat& sb = f.stat();
  const std::string key = path.string() + "\n" +
                          stat_stamp(uint64_t(sb.st_dev), uint64_t(sb.st_ino), uint64_t(sb.st_size),
                                     int64_t(sb.st_mtim.tv_sec) * 1000000000 + sb.st_mtim.tv_nsec);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  Sha256 h;
  std::vector<char> buf(size_t(1) << 20);
  while (const size_t n = f.read(buf.data(), buf.size())) h.update(buf.data(), n);
  const std::string hex = h.hex_digest();
  std::lock_guard<std::mutex> lock(mu);
  known[key] = hex;
  return hex;
}

void check_writable(const fs::path& path, const std::string& what) {
  std::error_code ec;
  const fs::path target = path.empty() ? path : fs::absolute(path, ec);
  if (path.empty() || target.filename().empty()) {
    throw Error(fmt::format("{}: expected a file name, found '{}'", what, path.string()));
  }
  if (fs::is_symlink(fs::symlink_status(target, ec))) {
    throw Error(fmt::format(
        "{}: expected a new file or a regular file to replace, found a symbolic link at '{}'", what,
        path.string()));
  }
  struct stat lb {};
  if (::lstat(target.c_str(), &lb) == 0 || errno != ENOENT) {
    const std::string kind = file_kind(target);
    if (kind != "a regular file") {
      throw Error(
          fmt::format("{}: expected a new file or a regular file to replace, found {} at '{}'",
                      what, kind, path.string()));
    }
  }
  fs::path dir = target.parent_path();
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.parent_path()) dir = dir.parent_path();
  if (!fs::is_directory(dir, ec)) {
    throw Error(fmt::format("{}: expected a path inside a folder, found {} at '{}'", what,
                            file_kind(dir), dir.string()));
  }
  if (dir != target.parent_path()) {
    // The folders are made when the file is written: the existing ancestor must take them.
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      throw Error(fmt::format("{}: expected a writable folder, found '{}': {}", what, dir.string(),
                              std::strerror(errno)));
    }
    return;
  }
  const fs::path probe = temporary_path_for(target);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw Error(fmt::format("{}: expected a folder a file can be written in, found '{}': {}", what,
                            dir.string(), std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace moebench
