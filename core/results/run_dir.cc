// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/results/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/util/atomic_file.h"
#include "core/util/error.h"
#include "core/util/json_text.h"
#include "core/util/paths.h"

namespace moebench {
namespace fs = std::filesystem;

RunDirectory::RunDirectory(fs::path dir) : dir_(std::move(dir)) {}

void require_results_root(const fs::path& root, const std::string& what) {
  auto refuse = [&](const std::string& found) {
    throw Error(fmt::format("{} {}: expected a folder results can be written in, found {}", what,
                            root.string(), found));
  };
  std::error_code ec;
  const auto st = fs::status(root, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    refuse(fmt::format("an unusable path ({})", ec.message()));
  if (st.type() == fs::file_type::not_found) {
    if (fs::is_symlink(root, ec)) refuse("a symbolic link to nothing");
    fs::create_directories(root, ec);
    if (ec) refuse(fmt::format("a path where no folder can be created ({})", ec.message()));
    return;
  }
  if (!fs::is_directory(st)) refuse(file_kind(root));
  if (::access(root.c_str(), W_OK | X_OK) != 0)
    refuse(fmt::format("a folder that cannot be written ({})", std::strerror(errno)));
}

std::string RunDirectory::not_a_run_folder(const fs::path& dir) {
  std::error_code ec;
  const auto st = fs::symlink_status(dir, ec);
  if (ec || st.type() == fs::file_type::not_found) return "";  // created (or refused) by lock()
  if (!fs::is_directory(dir, ec)) return file_kind(dir);
  if (fs::is_regular_file(dir / "manifest.json", ec)) return "";
  // What lock() and an unfinished start leave: the lock, empty cases/ and timelines/.
  std::vector<std::string> foreign;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    std::error_code eec;
    if (name == ".run_suite.lock" && e.is_regular_file(eec)) continue;
    if ((name == "cases" || name == "timelines") && e.is_directory(eec) &&
        fs::is_empty(e.path(), eec) && !eec)
      continue;
    foreign.push_back(name);
  }
  if (ec) return fmt::format("a folder that cannot be listed ({})", ec.message());
  if (foreign.empty()) return "";
  std::sort(foreign.begin(), foreign.end());
  return fmt::format("a folder that is not a run (no manifest.json) holding '{}'{}", foreign[0],
                     foreign.size() > 1 ? fmt::format(" and {} more", foreign.size() - 1) : "");
}

RunDirectory::~RunDirectory() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

void RunDirectory::lock(const std::string& holder) {
  if (lock_fd_ >= 0) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) {
    throw Error(fmt::format("{}: expected to be able to create the run directory, found: {}",
                            dir_.string(), ec.message()));
  }
  const fs::path file = dir_ / ".run_suite.lock";
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(fmt::format("{}: expected to be able to create the run folder's lock, found: {}",
                            file.string(), std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string who;
    char buf[512];
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n > 0) who.assign(buf, size_t(n));
    ::close(fd);
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    if (err == EWOULDBLOCK) {
      throw Error(fmt::format(
          "{}: expected a run folder no other process is writing, found it in use by {}; wait "
          "for that run to end (or stop it), then --resume",
          dir_.string(), who.empty() ? "another run_suite" : who));
    }
    throw Error(fmt::format("{}: expected to be able to lock the run folder, found: {}",
                            file.string(), std::strerror(err)));
  }
  // Who holds it, for the message a second process prints.
  if (::ftruncate(fd, 0) == 0) {
    const std::string text = holder + "\n";
    [[maybe_unused]] const ssize_t w = ::pwrite(fd, text.data(), text.size(), 0);
  }
  lock_fd_ = fd;
}

void RunDirectory::prepare() {
  std::error_code ec;
  fs::create_directories(dir_ / "cases", ec);
  if (ec) {
    throw Error(fmt::format("{}: expected to be able to create the run directory, found: {}",
                            dir_.string(), ec.message()));
  }
  // Only the temporaries of the files a run writes: a user's file that looks
  // like one is not ours to delete.
  remove_stale_temporaries(dir_, [](const std::string& name) {
    return name == "manifest.json" || name == "runs.jsonl" || name == "runs.csv";
  });
  remove_stale_temporaries(dir_ / "cases", [](const std::string& name) {
    return name.size() == 21 && name.substr(16) == ".json" &&
           name.find_first_not_of("0123456789abcdef") == 16;
  });
}

uint64_t RunDirectory::write_manifest(const nlohmann::ordered_json& manifest) const {
  const std::string text = json_text(manifest, 2) + "\n";
  write_file_atomic(dir_ / "manifest.json", text);
  return text.size();
}

void RunDirectory::reserve(uint64_t bytes) const {
  const fs::path file = dir_ / ".manifest-reserve";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = fd < 0 ? errno : ::posix_fallocate(fd, 0, off_t(bytes));
  if (fd >= 0) ::close(fd);
  if (err != 0) {
    std::error_code ec;
    fs::remove(file, ec);
    const auto space = fs::space(dir_, ec);
    throw Error(fmt::format(
        "{}: expected room to finish the run's record (at least {} KiB on its file system), "
        "found: {} ({} KiB free); free some space, then --resume",
        dir_.string(), (bytes + 1023) / 1024, std::strerror(err),
        ec ? std::string("?") : std::to_string(space.available / 1024)));
  }
}

void RunDirectory::release_reserve() const {
  std::error_code ec;
  fs::remove(dir_ / ".manifest-reserve", ec);
}

bool RunDirectory::has_manifest() const {
  std::error_code ec;
  return fs::is_regular_file(dir_ / "manifest.json", ec);
}

namespace {
nlohmann::ordered_json parse_json_file(const fs::path& p) {
  const std::string text = read_file(p);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(
        fmt::format("{}: expected a JSON document, found invalid JSON ({})", p.string(), e.what()));
  }
}
}  // namespace

nlohmann::ordered_json RunDirectory::read_manifest() const {
  return parse_json_file(dir_ / "manifest.json");
}

std::map<std::string, nlohmann::ordered_json> RunDirectory::finished_cases() const {
  std::map<std::string, nlohmann::ordered_json> out;
  std::error_code ec;
  if (!fs::is_directory(dir_ / "cases", ec)) return out;
  for (const auto& e : fs::directory_iterator(dir_ / "cases", ec)) {
    if (e.path().extension() != ".json") continue;
    const std::string name = e.path().filename().string();
    if (name.find(".tmp.") != std::string::npos) continue;
    auto j = parse_json_file(e.path());
    out[e.path().stem().string()] = std::move(j);
  }
  return out;
}

void RunDirectory::write_case(const std::string& case_id, const nlohmann::ordered_json& c) const {
  write_file_atomic(dir_ / "cases" / (case_id + ".json"), json_text(c) + "\n");
}

void RunDirectory::write_runs(const std::vector<Column>& fixed,
                              const std::vector<RunRecord>& rows) const {
  const auto cols = column_order(fixed, rows);
  write_file_atomic(dir_ / "runs.jsonl", to_jsonl(cols, rows));
  write_file_atomic(dir_ / "runs.csv", to_csv(cols, rows));
}

}  // namespace moebench
