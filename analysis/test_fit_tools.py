# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""scripts/fit-testbed and scripts/testbed-region on bad input: each refused by file, entry and key before any
suite runs, never a traceback; their outputs checked before the work that fills them. No suite runs here."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

import inputs

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROFILE = "dali-rtx3090"


FIT = inputs.script_module(ROOT / "scripts" / "fit-testbed")


def test_digit_separators_are_read_and_written_whole():
    """`layer_overhead_us = 6_474` was once read as 6 and written back as 3.159_474."""
    text = (ROOT / "configs" / "hardware" / f"{PROFILE}.toml").read_text()
    key = "stack.ktransformers.layer_overhead_us"
    a, b = FIT.entry_span(text, key)
    text = text[:a] + re.sub(r"^(layer_overhead_us\s*=\s*)\S+", r"\g<1>6_474", text[a:b], count=1,
                             flags=re.M) + text[b:]
    assert FIT.get_value(text, key) == 6474.0
    out = FIT.set_value(text, key, 3.159)
    a, b = FIT.entry_span(out, key)
    assert re.search(r"^layer_overhead_us = 3\.159$", out[a:b], re.M), out[a:b]
    assert FIT.get_value(out, key) == 3.159


def run_tool(tool, tmp_path, *args, profile_text=None):
    """The tool on a copy of the repository's scripts, analysis helpers and the profile (edited), so that the
    tracked profile is never touched."""
    root = tmp_path / "repo"
    for d in ("scripts", "analysis", "configs/hardware", "suites/dali"):
        (root / d).mkdir(parents=True, exist_ok=True)
    for f in ("scripts/fit-testbed", "scripts/testbed-region", "analysis/inputs.py", "analysis/screening.py"):
        (root / f).write_bytes((ROOT / f).read_bytes())
    for f in (ROOT / "suites" / "dali").glob("table9-*.toml"):
        (root / "suites" / "dali" / f.name).write_bytes(f.read_bytes())
    text = (ROOT / "configs" / "hardware" / f"{PROFILE}.toml").read_text()
    (root / "configs" / "hardware" / f"{PROFILE}.toml").write_text(profile_text(text) if profile_text else text)
    env = dict(os.environ, MOEBENCH_RUN_SUITE="/bin/false")  # a suite that ran would fail the tool
    r = subprocess.run([sys.executable, str(root / "scripts" / tool), PROFILE, *map(str, args)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    return r.stderr


def test_fit_testbed_checks_its_json_and_entries_before_the_fit(tmp_path):
    """--json /tmp once failed after the whole fit ran; a missing suite or a bad entry ended in a traceback."""
    assert "found a directory" in run_tool("fit-testbed", tmp_path, "--json", tmp_path)
    assert "a folder a file can be written in, found /proc/self" in run_tool(
        "fit-testbed", tmp_path, "--json", "/proc/self/x.json")
    gone = run_tool("fit-testbed", tmp_path, profile_text=lambda t: t.replace(
        'suite = "suites/dali/table9-mixtral.toml"', 'suite = "suites/dali/nope.toml"', 1))
    assert "suites/dali/nope.toml: expected an experiment file of the repository (a regular file), found no such " \
           "file" in gone
    bad = run_tool("fit-testbed", tmp_path, profile_text=lambda t: t.replace("value = 1.65", 'value = "fast"', 1))
    assert "[[calibration]] 1 (dali-table9-hybrimoe-mixtral-8x7b): key 'value': expected a finite number > 0" in bad


@pytest.mark.parametrize("edit, message", [
    (lambda t: re.sub(r"(?m)^low = .*$", 'low = "abc"', t, count=1), "key 'low': expected a finite number > 0, "
                                                                     "found 'abc'"),
    (lambda t: re.sub(r"(?m)^low = .*\n", "", t, count=1), "expected key 'low', found none"),
    (lambda t: re.sub(r"(?m)^key = .*$", 'key = "link.nope"', t, count=1), "has no 'nope = <number>' line"),
])
def test_testbed_region_refuses_a_bad_unknown_by_entry_and_key(tmp_path, edit, message):
    err = run_tool("testbed-region", tmp_path, "--out", tmp_path / "out", profile_text=edit)
    assert "[[unknown]] 1" in err or "nope" in err, err
    assert message in err, err


def test_testbed_region_checks_its_out_before_the_region(tmp_path):
    err = run_tool("testbed-region", tmp_path, "--out", "/proc/h4")
    assert "--out" in err and "/proc/h4" in err, err


def test_fit_testbed_starts_from_another_files_values(tmp_path):
    """--from FILE: the fitted keys start at FILE's values (the rest of the profile is its own); a FILE without one
    of them is refused by file and key before any suite runs."""
    text = (ROOT / "configs" / "hardware" / f"{PROFILE}.toml").read_text()
    key = "stack.ktransformers.layer_overhead_us"
    start = tmp_path / "start.toml"
    start.write_text(FIT.set_value(text, key, 6474.0))
    assert FIT.start_values(text, [key], str(start)) == [6474.0]
    assert FIT.start_values(text, [key]) == [FIT.get_value(text, key)]
    a, b = FIT.entry_span(text, key)
    start.write_text(text[:a] + re.sub(r"(?m)^layer_overhead_us\s*=.*\n", "", text[a:b], count=1) + text[b:])
    err = run_tool("fit-testbed", tmp_path, "--from", start)
    assert f"{start} (--from): fits: the entry of '{key}'" in err and "has no 'layer_overhead_us = <number>'" in err
