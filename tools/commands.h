// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Subcommands of build/bin/moebench. Each group registers its CLI11
// subcommands and returns; errors the user causes are thrown as
// moebench::Error and reported by main() as one line with exit status 2.

#include <CLI/CLI.hpp>

namespace moebench::tools {

void add_config_commands(CLI::App& app);
void add_probe_command(CLI::App& app);
void add_kernels_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_trace_commands(CLI::App& app);
void add_predictor_commands(CLI::App& app);
void add_model_commands(CLI::App& app);
void add_record_command(CLI::App* trace);  // moebench trace record (cmd_model.cc)

}  // namespace moebench::tools
