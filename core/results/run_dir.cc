#include "core/results/run_dir.h"

#include <fmt/format.h>

#include "core/util/atomic_file.h"
#include "core/util/error.h"

namespace moebench {
namespace fs = std::filesystem;

RunDirectory::RunDirectory(fs::path dir) : dir_(std::move(dir)) {}

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
    throw Error(fmt::format("{}: expected a JSON document, found invalid JSON ({})", p.string(),
                            e.what()));
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
