// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/experiment/workload_files.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/config/validate.h"
#include "core/experiment/requests.h"
#include "core/trace/trace_workload.h"
#include "core/util/paths.h"
#include "core/util/sha256.h"
#include "core/util/strings.h"

namespace moebench {
namespace fs = std::filesystem;
using cfg::Value;

const WorkloadFiles::TraceHeader& WorkloadFiles::header(const Value& wl, const std::string& key,
                                                        const std::string& rel,
                                                        const fs::path& base_dir,
                                                        const ModelSpec& m) {
  auto& cache = traces_;
  const fs::path path = fs::path(rel).is_absolute() ? fs::path(rel) : base_dir / rel;
  const std::string id = path.lexically_normal().string() + "\n" + m.name;
  if (auto it = cache.find(id); it != cache.end()) return it->second;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw ConfigError(cfg::where_of_key(wl, key), "workload." + key,
                      "an existing trace file (a regular file)",
                      file_kind(path) + " at '" + path.string() + "'");
  }
  std::unique_ptr<TraceSource> src;
  try {
    src = open_trace_file(path);
  } catch (const Error& e) {
    throw ConfigError(cfg::where_of_key(wl, key), "workload." + key, "a valid trace file",
                      e.what());
  }
  check_trace_model(src->info(), m, path.string());
  // The file's bytes join the case's identity: a trace changed between a run
  // and its --resume makes other cases.
  std::string sha;
  try {
    sha = file_sha256(path);
  } catch (const Error& e) {
    throw ConfigError(cfg::where_of_key(wl, key), "workload." + key, "a readable trace file",
                      e.what());
  }
  return cache.emplace(id, TraceHeader{src->info(), path.string(), src->file_stamp(), sha})
      .first->second;
}

// Applies sequences / prompt_len / decode_len to a trace workload (select the
// first N sequences, cap the lengths), checks batch_size against what is
// selected, and records the values that apply: the number of sequences kept
// and the longest prompt and generation kept.
void WorkloadFiles::resolve_trace(WorkloadSpec& w, const Value& wl, const ModelSpec& m,
                                  const fs::path& base_dir,
                                  std::map<std::string, std::string>* stamps) {
  const TraceHeader& h = header(wl, "trace", w.trace, base_dir, m);
  const TraceInfo& in = h.info;
  (*stamps)[h.path] = h.stamp;
  w.trace_sha256 = h.sha256;
  if (!w.calibration_trace.empty()) {
    const TraceHeader& c = header(wl, "calibration_trace", w.calibration_trace, base_dir, m);
    (*stamps)[c.path] = c.stamp;
    w.calibration_trace_sha256 = c.sha256;
  }
  TraceSelection sel;
  if (wl.find("sequences")) sel.sequences = w.sequences;
  if (wl.find("prompt_len")) sel.prompt_cap = w.prompt_len;
  if (wl.find("decode_len")) sel.decode_cap = w.decode_len;
  if (const auto p = sel.check(in, w.trace)) {
    throw ConfigError(cfg::where_of_key(wl, p->key), "workload." + p->key, p->expected, p->found);
  }
  const std::vector<SequenceInfo> seqs = sel.apply(in, w.trace);
  for (size_t i = 0; i < seqs.size() && m.context_length > 0; ++i) {
    if (seqs[i].tokens() <= m.context_length) continue;
    throw ConfigError(
        cfg::where_of_key(wl, "trace"), "workload.trace",
        fmt::format("sequences of at most the model's context ({} tokens, prompt and output "
                    "together; model '{}'; cap them with prompt_len and decode_len)",
                    m.context_length, m.name),
        fmt::format("sequence {} of '{}' with {} + {} = {} tokens", i, w.trace, seqs[i].prompt_len,
                    seqs[i].decode_len, seqs[i].tokens()));
  }
  w.sequences = int64_t(seqs.size());
  w.prompt_len = 0;
  w.decode_len = 0;
  for (const SequenceInfo& q : seqs) {
    w.prompt_len = std::max(w.prompt_len, q.prompt_len);
    w.decode_len = std::max(w.decode_len, q.decode_len);
  }
  cfg::require_key(wl, "workload", "decode_len", w.prompt_len + w.decode_len > 0,
                   "a selection with at least one token", "0 tokens kept");
  cfg::require_key(
      wl, "workload", "batch_size", w.batch_size <= w.sequences,
      fmt::format("at most the {} sequences selected from trace '{}'", w.sequences, w.trace),
      std::to_string(w.batch_size));
}

// A served workload's requests file (workload.arrivals), read and checked at
// load: its SHA-256 joins the case's identity (a file changed between a run
// and its --resume is another run), `sequences` must not pass its lines, and
// with lengths = "file" the longest prompt and decode kept are recorded as
// prompt_len and decode_len (as a trace's are), so that the memory checks and
// cache_fill see the requests' real sizes.
const RequestsFile* WorkloadFiles::resolve_requests(WorkloadSpec& w, const Value& wl,
                                                    const ModelSpec& m, const fs::path& base_dir) {
  auto& cache = requests_;
  if (w.arrivals.empty()) return nullptr;
  const fs::path path =
      fs::path(w.arrivals).is_absolute() ? fs::path(w.arrivals) : base_dir / w.arrivals;
  const RequestsNeeds needs{w.arrival == "file", w.lengths == "file", m.context_length};
  const std::string id = fmt::format("{}\n{}{}{}", path.lexically_normal().string(), needs.times,
                                     needs.lengths, needs.context_length);
  auto it = cache.find(id);
  if (it == cache.end()) {
    try {
      it = cache.emplace(id, read_requests_file(path, w.arrivals, needs)).first;
    } catch (const ConfigError& e) {
      if (e.where().line > 0) throw;  // a line of the file: named there
      throw ConfigError(cfg::where_of_key(wl, "arrivals"), "workload.arrivals", e.expected(),
                        e.found());
    }
  }
  const RequestsFile& f = it->second;
  if (int64_t(f.requests.size()) < w.sequences) {
    throw ConfigError(cfg::where_of_key(wl, "sequences"), "workload.sequences",
                      fmt::format("at most the {} requests of '{}'", f.requests.size(),
                                  shown_text(w.arrivals, 200)),
                      std::to_string(w.sequences));
  }
  w.arrivals_sha256 = f.sha256;
  if (w.lengths != "file") return &f;
  w.prompt_len = 0;
  w.decode_len = 0;
  for (size_t i = 0; i < size_t(w.sequences); ++i) {
    w.prompt_len = std::max(w.prompt_len, f.requests[i].prompt_len);
    w.decode_len = std::max(w.decode_len, f.requests[i].decode_len);
  }
  return &f;
}

// A workload of requests is drawn at load as it will be when its cases run
// (seeded): arrivals spread past kMaxArrivalSpanS are refused at the key that
// spreads them, so --dry-run and `config validate` say it.
void check_requests(const WorkloadSpec& w, const Value& wl, const RequestsFile* file) {
  if (!w.per_request()) return;
  try {
    make_requests(w, file);
  } catch (const ConfigError& e) {
    const std::string key = e.key().substr(e.key().find('.') + 1);
    throw ConfigError(cfg::where_of_key(wl, key), e.key(), e.expected(), e.found());
  }
}

// A synthetic workload's longest sequence (prompt and output together) must
// fit the model's context; a trace's sequences are checked in resolve_trace,
// a requests file's lines when it is read (make_requests).
void check_context(const ModelSpec& m, const WorkloadSpec& w, const Value& wl) {
  if (m.context_length <= 0 || w.kind == "trace" || w.lengths == "file") return;
  const bool uniform = w.lengths == "uniform";
  const int64_t p = uniform && w.prompt_len_max >= 0 ? w.prompt_len_max : w.prompt_len;
  const int64_t d = uniform && w.decode_len_max >= 0 ? w.decode_len_max : w.decode_len;
  if (p + d <= m.context_length) return;
  std::string key = p > m.context_length ? "prompt_len" : "decode_len";
  if (uniform && w.prompt_len_max >= 0 && key == "prompt_len") key = "prompt_len_max";
  if (uniform && w.decode_len_max >= 0 && key == "decode_len") key = "decode_len_max";
  throw ConfigError(cfg::where_of_key(wl, key), "workload." + key,
                    fmt::format("sequences of at most the model's context ({} tokens, prompt "
                                "and output together; model '{}')",
                                m.context_length, m.name),
                    fmt::format("{} + {} = {} tokens at the longest", p, d, p + d));
}

}  // namespace moebench
