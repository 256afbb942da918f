// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// A run directory: results/<suite>/<run-id>/ with
//   manifest.json   provenance, suite, every case's resolved config, status
//   cases/<id>.json one file per finished case (all its repetitions)
//   runs.jsonl      one row per case and repetition
//   runs.csv        the same rows
//   timelines/      optional Chrome-trace files
// Every file is written atomically. cases/<id>.json is written as each case
// finishes, so a run killed at any instant loses at most the cases in
// progress, and `run_suite --resume` finishes the rest without redoing or
// duplicating anything. runs.jsonl/runs.csv are regenerated from cases/
// every 20 s while the run goes on and at its end (interrupted or not).

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results/records.h"

namespace moebench {

// Creates the results root `root` when missing and checks that results can
// be written in it. Throws moebench::Error naming `root`, the option that
// named it (`what`, e.g. "--results") and the problem: a file, a device, a
// symbolic link loop or to nothing, a read-only or unwritable folder.
void require_results_root(const std::filesystem::path& root, const std::string& what);

class RunDirectory {
 public:
  explicit RunDirectory(std::filesystem::path dir);
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  // Creates the directory and takes an exclusive lock on it (flock on
  // .run_suite.lock, held until this object is destroyed or the process
  // ends, kill -9 included). Throws moebench::Error naming the holder (pid,
  // host, command) when another process holds it: two run_suite processes
  // never write one run folder.
  void lock(const std::string& holder);

  // Why `dir` cannot be used as a run folder ("" when it can): it must not
  // exist yet, be empty, or be a run folder (with manifest.json). A folder
  // of the user's is never written into: its files would be mixed with the
  // results and could be taken for a killed writer's temporaries.
  static std::string not_a_run_folder(const std::filesystem::path& dir);

  const std::filesystem::path& path() const { return dir_; }
  // Creates the directory (and cases/), removing temporaries left by killed writers.
  void prepare();

  // Returns the bytes written.
  uint64_t write_manifest(const nlohmann::ordered_json& manifest) const;
  // Sets aside `bytes` of the file system (.manifest-reserve, allocated) so
  // that the run's last manifest can be written when the disk fills during
  // the run: release_reserve() frees them just before. Throws moebench::Error
  // naming the folder when the file system has no room for them.
  void reserve(uint64_t bytes) const;
  void release_reserve() const;
  bool has_manifest() const;
  nlohmann::ordered_json read_manifest() const;

  // Cases already finished: case id -> the stored case object.
  std::map<std::string, nlohmann::ordered_json> finished_cases() const;
  void write_case(const std::string& case_id, const nlohmann::ordered_json& c) const;

  // Rewrites runs.jsonl and runs.csv from `rows` (fixed columns first).
  void write_runs(const std::vector<Column>& fixed, const std::vector<RunRecord>& rows) const;

 private:
  std::filesystem::path dir_;
  int lock_fd_ = -1;
};

}  // namespace moebench
