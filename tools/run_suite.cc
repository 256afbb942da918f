// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// build/bin/run_suite FILE.toml [--out DIR] [--jobs N] [--resume] [--filter EXPR] [--shard I/N]
//                     [--dry-run]
// build/bin/run_suite FILE.toml --points DIR... [--jobs N] [--filter EXPR] [--resume]
// build/bin/run_suite --merge DIR... [--out DIR] [--partial]

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <cstdio>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "baselines/register.h"
#include "core/util/error.h"
#include "core/util/stdio_guard.h"
#include "harness/suite/suite_runner.h"
#include "tools/cli_checks.h"

namespace {

// --points: folders that hold configs/, without the options that name one
// run's place or slice. 0 when fine, else 2 after saying why.
int check_points(const std::vector<std::string>& points, size_t place_options, bool other) {
  if (points.empty()) return 0;
  if (place_options || other) {
    fmt::print(stderr,
               "run_suite: error: --points: expected an experiment file with --jobs, --filter, "
               "--resume or --quiet, found {} (each point's results go to DIR/results)\n",
               place_options ? "--out or --results" : "--merge, --shard or --dry-run");
    return 2;
  }
  for (const auto& d : points) {
    std::error_code ec;
    if (d.empty() || !std::filesystem::is_directory(std::filesystem::path(d) / "configs", ec)) {
      fmt::print(stderr,
                 "run_suite: error: --points: expected a folder holding configs/ (a point's "
                 "presets), found '{}' without one\n",
                 d);
      return 2;
    }
  }
  return 0;
}

// The suite at each point in turn, in one process: a workload built for
// one point (its routing, the predictors' per-token results) serves the
// others. A point that fails is said and the next one runs; an interrupted
// point (SIGINT, SIGTERM) ends the loop, and the points not run are named
// with the command that finishes them all. The largest exit code.
int run_points(const moebench::SuiteOptions& opt, const std::vector<std::string>& points) {
  int code = 0;
  std::vector<std::string> lines;
  size_t i = 0;
  for (; i < points.size() && code != 130; ++i) {
    moebench::SuiteOptions o = opt;
    o.results_root = std::filesystem::path(points[i]) / "results";
    o.config_roots = {std::filesystem::path(points[i]) / "configs"};
    // --points --resume: a point whose run of these cases is complete is not run again.
    o.resume_skips_complete = opt.resume;
    try {
      const moebench::SuiteOutcome out = moebench::run_suite(o, moebench::builtin_registry());
      code = std::max(code, out.exit_code);
      lines.push_back(fmt::format("  {}: {} ({})", points[i],
                                  out.exit_code == 0     ? "complete"
                                  : out.exit_code == 130 ? "interrupted"
                                                         : "finished with failed cases",
                                  out.run_dir.string()));
    } catch (const moebench::Error& e) {
      fmt::print(stderr, "run_suite: error: point '{}': {}\n", points[i], e.what());
      code = std::max(code, 2);
      lines.push_back(fmt::format("  {}: error (above)", points[i]));
    }
  }
  for (; i < points.size(); ++i) lines.push_back(fmt::format("  {}: not run", points[i]));
  if (points.size() > 1 && (code != 0 || !opt.quiet))
    fmt::print(stderr, "run_suite: --points:\n{}\n", fmt::join(lines, "\n"));
  if (code == 130 || code == 2) {
    std::string again = fmt::format("run_suite {} --points", opt.file.string());
    for (const auto& d : points) again += " " + d;
    fmt::print(stderr,
               "run_suite: --points: finish every point (an unfinished run is resumed, a "
               "complete one kept) with:\n  {} --resume\n",
               again);
  }
  return code;
}

}  // namespace

namespace {

int run(int argc, char** argv) {
  CLI::App app{
      "run_suite: run an experiment file (every list-valued key is a sweep axis) and write "
      "results/"};
  moebench::SuiteOptions opt;
  std::string file, out, results = "results", shard;
  std::vector<std::string> merge, points;
  bool partial = false;
  app.add_option("file", file, "Experiment TOML (suites/*.toml)");
  app.add_option("--out", out, "Run directory (default results/<suite>/<UTC time>-<hash>)");
  app.add_option("--results", results, "Results root directory");
  app.add_option("--jobs,-j", opt.jobs, "Cases run in parallel")
      ->check(moebench::cli::whole(1, 256));
  app.add_flag("--resume", opt.resume,
               "Finish the latest unfinished run of this suite (or --out DIR)");
  app.add_option("--filter", opt.filter,
                 "Only cases matching key=value / key~text terms, comma-separated");
  app.add_option("--shard", shard,
                 "Run slice I of N of the cases (0 <= I < N; docs/USAGE.md, \"Sweeps on a Slurm "
                 "cluster\")");
  app.add_option("--merge", merge,
                 "Merge these shard run folders into one run folder (--out, default "
                 "<results>/<suite>/<time>-<hash>-merged)")
      ->expected(1, -1);
  app.add_option("--points", points,
                 "Run the suite once per point folder DIR: presets from DIR/configs first, results "
                 "under DIR/results; the points share the workloads this process builds "
                 "(scripts/testbed-region)")
      ->expected(1, -1);
  app.add_flag("--partial", partial,
               "With --merge: keep a result with missing cases (status \"partial\", exit 1)");
  app.add_flag("--dry-run", opt.dry_run, "List the cases and exit");
  app.add_flag("--timeline", opt.timeline,
               "Write a Chrome-trace timeline (Perfetto) for every case");
  app.add_flag("--quiet,-q", opt.quiet, "No progress or summary output");
  app.add_option("--max-cases", opt.max_cases,
                 "Refuse an experiment that expands to more cases (default 100000)")
      ->check(moebench::cli::whole(1));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a usage error exits 2, as every other error does.
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  for (int i = 0; i < argc; ++i) opt.argv.push_back(argv[i]);
  // An option given with an empty value is a mistake (an unset shell
  // variable), never "the default": `--shard ""` once ran the whole suite.
  for (const char* name : {"--shard", "--out", "--results", "--filter"}) {
    if (app.count(name) == 0) continue;
    const std::string v = name == std::string("--shard")     ? shard
                          : name == std::string("--out")     ? out
                          : name == std::string("--results") ? results
                                                             : opt.filter;
    if (v.find_first_not_of(" \t") == std::string::npos) {
      fmt::print(stderr,
                 "run_suite: error: {}: expected a value, found an empty one (an unset shell "
                 "variable?); leave the option out for its default\n",
                 name);
      return 2;
    }
  }
  for (const auto& d : merge) {
    if (d.empty()) {
      fmt::print(stderr,
                 "run_suite: error: --merge: expected shard folders, found an empty name\n");
      return 2;
    }
  }
  if (!merge.empty()) {
    if (!file.empty() || !shard.empty() || opt.resume || opt.dry_run || !opt.filter.empty()) {
      fmt::print(stderr,
                 "run_suite: error: --merge: expected only shard folders (with --out, --results, "
                 "--partial, --quiet), found {}\n",
                 !file.empty() ? "an experiment file '" + file + "'"
                               : "--shard, --resume, --dry-run or --filter");
      return 2;
    }
  } else if (file.empty()) {
    fmt::print(stderr,
               "run_suite: error: expected an experiment file (suites/*.toml) or --merge DIR..., "
               "found neither (run_suite --help)\n");
    return 2;
  }
  if (const int bad = check_points(points, app.count("--out") + app.count("--results"),
                                   !merge.empty() || !shard.empty() || opt.dry_run);
      bad) {
    return bad;
  }
  if (partial && merge.empty()) {
    fmt::print(stderr, "run_suite: error: --partial: expected with --merge, found without\n");
    return 2;
  }
  opt.file = file;
  opt.out = out;
  opt.results_root = results;
  opt.progress_tty = ::isatty(STDOUT_FILENO);
  try {
    if (!merge.empty()) {
      moebench::MergeOptions m;
      for (const auto& d : merge) m.inputs.emplace_back(d);
      m.results_root = results;
      m.out = out;
      m.partial = partial;
      m.quiet = opt.quiet;
      m.argv = opt.argv;
      return moebench::merge_shards(m, moebench::builtin_registry()).exit_code;
    }
    if (!shard.empty()) opt.shard = moebench::parse_shard(shard);
    if (!points.empty()) return run_points(opt, points);
    const auto o = moebench::run_suite(opt, moebench::builtin_registry());
    return o.exit_code;
  } catch (const moebench::Error& e) {
    fmt::print(stderr, "run_suite: error: {}\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // Inputs are checked against the memory available before large
    // allocations; one that still runs out is reported, not shown as a crash.
    fmt::print(stderr,
               "run_suite: error: out of memory (std::bad_alloc): the input asks for more memory "
               "than this "
               "machine has free; use a smaller workload or model\n");
    return 2;
  } catch (const std::exception& e) {
    // fmt::print throws when stdout refuses a write: said by finish_stdout.
    if (std::ferror(stdout)) return 2;
    fmt::print(stderr, "run_suite: internal error: {}\n", e.what());
    return 3;
  }
}

}  // namespace

int main(int argc, char** argv) {
  moebench::guard_standard_streams();
  return moebench::finish_stdout("run_suite", run(argc, argv));
}
