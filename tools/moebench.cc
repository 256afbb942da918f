// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// build/bin/moebench: the harness's multi-tool (config, probe, trace, predictor, ...).

#include <cstdio>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "core/util/error.h"
#include "core/util/stdio_guard.h"
#include "tools/commands.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"moebench: benchmark harness for hybrid CPU/GPU inference of MoE models"};
  app.require_subcommand(1);
  moebench::tools::add_config_commands(app);
  moebench::tools::add_probe_command(app);
  moebench::tools::add_kernels_command(app);
  moebench::tools::add_calibrate_command(app);
  moebench::tools::add_replay_command(app);
  moebench::tools::add_trace_commands(app);
  moebench::tools::add_predictor_commands(app);
  moebench::tools::add_model_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a usage error exits 2, as every other error does.
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const moebench::Error& e) {
    fmt::print(stderr, "moebench: error: {}\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // Inputs are checked against the memory available before large
    // allocations; one that still runs out is reported, not shown as a crash.
    fmt::print(
        stderr,
        "moebench: error: out of memory (std::bad_alloc): the input asks for more memory than this "
        "machine has free; use a smaller workload or model\n");
    return 2;
  } catch (const std::exception& e) {
    // fmt::print throws when stdout refuses a write: said by finish_stdout.
    if (std::ferror(stdout)) return 2;
    fmt::print(stderr, "moebench: internal error: {}\n", e.what());
    return 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  moebench::guard_standard_streams();
  return moebench::finish_stdout("moebench", run(argc, argv));
}
