# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""A tool's standard output is part of its result: `moebench kernels --json`, `config list`, `config describe`
and `run_suite --dry-run` sent to /dev/full or a closed stdout once exited 0. Now: one line on stderr, exit 2
(core/util/stdio_guard.h)."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
MOEBENCH = pathlib.Path(os.environ.get("MOEBENCH_BIN", ROOT / "build" / "bin" / "moebench"))
RUN_SUITE = pathlib.Path(os.environ.get("MOEBENCH_RUN_SUITE", ROOT / "build" / "bin" / "run_suite"))

COMMANDS = [
    [MOEBENCH, "kernels", "--json"],
    [MOEBENCH, "config", "list"],
    [MOEBENCH, "config", "describe", "workload"],
    [RUN_SUITE, "suites/smoke.toml", "--dry-run"],
]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(map(str, c[1:])))
def test_output_stdout_does_not_take_is_an_error(cmd):
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    with open("/dev/full", "w") as full:
        r = subprocess.run(list(map(str, cmd)), stdout=full, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert r.returncode == 2 and "could not write the output to stdout" in r.stderr, r.stderr
    r = subprocess.run(list(map(str, cmd)), stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                       preexec_fn=lambda: os.close(1))
    assert r.returncode == 2 and "could not write the output to stdout: stdout was closed" in r.stderr, r.stderr
    r = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0 and r.stdout, r.stderr
