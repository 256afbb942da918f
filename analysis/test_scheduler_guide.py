# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Follows docs/ADDING_A_SCHEDULER.md: every file it names exists, its list entry is the one in
core/scheduler/scheduler.cc, `moebench config list` prints every listed scheduler with its sentence, and
no C++ source outside core/scheduler/ compares a workload's scheduler with a name or lists the names (a
new scheduler would then have to be added there too: more than the guide's four files)."""

import os
import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(os.environ.get("MOEBENCH_BIN", ROOT / "build" / "bin" / "moebench")).parent
LIST = ROOT / "core" / "scheduler" / "scheduler.cc"
SOURCE_DIRS = ("core", "harness", "baselines", "predictors", "kernels", "workloads", "tools", "fuzz")


def guide() -> str:
    return (ROOT / "docs" / "ADDING_A_SCHEDULER.md").read_text()


def listed() -> list:
    """The names in kSchedulers, in order."""
    text = LIST.read_text()
    body = text[text.index("kSchedulers[] = {"):]
    body = body[:body.index("};")]
    return re.findall(r'\{\s*"([a-z0-9-]+)",', body)


def squash(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def test_every_named_file_exists():
    paths = set(re.findall(r"`((?:core|analysis|suites|docs)/[A-Za-z0-9_./<>{},-]+\.(?:cc|h|toml|py|md))`",
                           guide()))
    assert len(paths) >= 6, paths
    missing = []
    for p in paths:
        if "<" in p:
            continue
        m = re.match(r"(.*)\{(.+)\}(.*)", p)  # core/config/workload_spec.{h,cc}
        for q in ([m.group(1) + x + m.group(3) for x in m.group(2).split(",")] if m else [p]):
            if not (ROOT / q).is_file():
                missing.append(q)
    assert not missing


def test_the_guides_entry_is_the_lists():
    entry = re.search(r"```cpp\n(.+?)```", guide(), re.S).group(1)
    assert squash(entry) in squash(LIST.read_text())
    assert len(listed()) >= 2 and listed()[0] == "static", listed()


def test_config_list_prints_every_scheduler_with_its_sentence():
    r = subprocess.run([str(BIN / "moebench"), "config", "list"], capture_output=True, text=True,
                       env=dict(os.environ, MOEBENCH_HOME=str(ROOT)), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    for name in listed():
        assert re.search(rf"^  {re.escape(name)}: \S.+$", r.stdout, re.M), (name, r.stdout[-600:])


def offending_lines(names, files):
    """Lines that compare something with a scheduler's name, or list two of the names."""
    alt = "|".join(re.escape(n) for n in names)
    compare = re.compile(rf'[=!]=\s*"(?:{alt})"|"(?:{alt})"\s*[=!]=')
    two = re.compile(rf'"(?:{alt})"\s*,\s*"(?:{alt})"')
    out = []
    for f in files:
        for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if compare.search(line) or two.search(line):
                out.append(f"{f}:{i}: {line.strip()}")
    return out


def test_no_source_outside_the_scheduler_folder_names_a_scheduler():
    files = [f for d in SOURCE_DIRS for f in (ROOT / d).rglob("*")
             if f.suffix in (".cc", ".h", ".cu", ".cuh") and not f.name.endswith("_test.cc")
             and "core/scheduler/" not in f.as_posix()]
    assert len(files) > 100
    assert offending_lines(listed(), files) == []


def test_the_check_finds_a_comparison_and_a_list(tmp_path):
    probe = tmp_path / "x.cc"
    probe.write_text('if (w.scheduler == "continuous") {}\n'
                     'const char* k[] = {"static", "continuous"};\n'
                     'run("continuous");  // choosing one is not naming the list\n')
    assert [x.split(":")[1] for x in offending_lines(["static", "continuous"], [probe])] == ["1", "2"]
