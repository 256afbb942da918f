// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/results/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/util/atomic_file.h"
#include "core/util/error.h"

namespace moebench {
namespace fs = std::filesystem;

RunDirectory::RunDirectory(fs::path dir) : dir_(std::move(dir)) {}

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
  remove_stale_temporaries(dir_);
  remove_stale_temporaries(dir_ / "cases");
}

void RunDirectory::write_manifest(const nlohmann::ordered_json& manifest) const {
  write_file_atomic(dir_ / "manifest.json", manifest.dump(2) + "\n");
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
  write_file_atomic(dir_ / "cases" / (case_id + ".json"), c.dump() + "\n");
}

void RunDirectory::write_runs(const std::vector<Column>& fixed,
                              const std::vector<RunRecord>& rows) const {
  const auto cols = column_order(fixed, rows);
  write_file_atomic(dir_ / "runs.jsonl", to_jsonl(cols, rows));
  write_file_atomic(dir_ / "runs.csv", to_csv(cols, rows));
}

}  // namespace moebench
