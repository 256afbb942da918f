# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Follows docs/ADDING_A_POLICY.md (linked from the README's "Add your own
policy"): every file it names exists, its registry line is in
baselines/register.cc, the preset resolves, and its compare commands run."""

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(os.environ.get("MOEBENCH_BIN", ROOT / "build" / "bin" / "moebench")).parent


def section() -> str:
    return (ROOT / "docs" / "ADDING_A_POLICY.md").read_text()


def test_every_named_file_exists():
    paths = set(re.findall(r"`((?:baselines|configs|suites|analysis|core)/[A-Za-z0-9_./<>-]+\.(?:cc|h|toml|py))`",
                           section()))
    assert len(paths) >= 7
    missing = [p for p in paths if "<" not in p and not (ROOT / p).is_file()]
    assert not missing


def test_registry_line_is_in_register_cc():
    line = re.search(r"```cpp\n\s*(.+?)\n\s*```", section()).group(1).strip()
    assert line in (ROOT / "baselines" / "register.cc").read_text()


def test_preset_resolves_and_compare_commands_run(tmp_path):
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    r = subprocess.run([str(BIN / "moebench"), "config", "show", "--strategy", "example-fifo"], capture_output=True,
                       text=True, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert '"fifo"' in r.stdout
    cmds = [c.strip() for c in re.findall(r"```sh\n(.+?)```", section(), re.S)[-1].strip().splitlines()]
    m = re.match(r"make compare STRATEGY=(\S+)", cmds[0])
    assert m, cmds
    # `make compare` runs the suite, then compare.py with the Python make recorded.
    r = subprocess.run(["make", "-n", "compare", f"STRATEGY={m.group(1)}"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert re.search(rf"bin/run_suite results/compare/compare-{re.escape(m.group(1))}.toml", r.stdout), r.stdout
    assert re.search(rf"analysis/compare.py --strategy {re.escape(m.group(1))}", r.stdout), r.stdout
    # STRATEGY really replaces the strategy under study (once it did not: the
    # suite kept example-fifo): the generated suite names it everywhere.
    generated = tmp_path / "compare-gpu-ondemand.toml"
    r = subprocess.run(["make", "--no-print-directory", "compare-suite", "STRATEGY=gpu-ondemand",
                        f"COMPARE_SUITE={generated}"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    g = generated.read_text()
    assert "example-fifo" not in g and 'strategies = ["gpu-ondemand"' in g and 'name = "gpu-ondemand+belady"' in g
    r = subprocess.run(["make", "--no-print-directory", "compare-suite", "STRATEGY=../x"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode != 0 and "expected STRATEGY" in r.stderr
    # The suite as a user edits it ("replace example-fifo with your preset"):
    # CI runs its own copy with the example put back, so the edit breaks nothing.
    text = (ROOT / "suites" / "compare.toml").read_text()
    mine = re.search(r'strategies = \["([^"]+)"', text).group(1)
    fixture = tmp_path / "compare.toml"
    fixture.write_text(text.replace(f'"{mine}', '"example-fifo'))
    results = tmp_path / "results"
    # On one model to stay quick.
    r = subprocess.run([str(BIN / "run_suite"), str(fixture), "--filter", "model.name=deepseek-v2-lite",
                        "--results", str(results), "--quiet", "--jobs", "2"], capture_output=True, text=True, env=env,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, str(ROOT / "analysis" / "compare.py"), "--strategy", "example-fifo",
                        "--results", str(results)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "example-fifo+belady" in r.stdout and "oracle" in r.stdout
    # The tutorial's comparison is the mechanism one, and the table says so.
    assert "Comparison: mechanism" in r.stdout, r.stdout[:400]
    assert (next(results.glob("compare/*/figures")) / "compare.png").is_file()


def test_two_components_with_one_class_name_fail_the_build(tmp_path):
    """A copy of baselines/example whose FifoCache was not renamed built with no error: the static library held two
    FifoCache::victim and the linker kept the first, so the new policy silently ran the old code. Every object of
    the library is linked whole into check_unique_components, which makes that a "multiple definition" error; the
    same two objects linked from an archive the usual way show the silent case it replaces."""
    build = BIN.parent
    link = build / "baselines" / "CMakeFiles" / "check_unique_components.dir" / "link.txt"
    text = link.read_text()
    assert "--whole-archive" in text and "libmoebench_baselines.a" in text, text
    obj = tmp_path / "fifo.o"
    subprocess.run(["c++", "-std=c++20", f"-I{ROOT}", "-c", str(ROOT / "baselines/example/cache/fifo.cc"), "-o",
                    str(obj)], check=True)
    (tmp_path / "fifo_copy.o").write_bytes(obj.read_bytes())  # the copy, class name unchanged
    subprocess.run(["ar", "rcs", str(tmp_path / "libdup.a"), str(obj), str(tmp_path / "fifo_copy.o")], check=True)
    (tmp_path / "main.cc").write_text("int main() { return 0; }\n")

    def link_with(*archive):
        return subprocess.run(["c++", str(tmp_path / "main.cc"), "-o", str(tmp_path / "a.out"), *archive,
                               "-Wl,--unresolved-symbols=ignore-all"], capture_output=True, text=True)
    assert link_with(str(tmp_path / "libdup.a")).returncode == 0  # what a plain static link does
    r = link_with("-Wl,--whole-archive", str(tmp_path / "libdup.a"), "-Wl,--no-whole-archive")
    assert r.returncode != 0 and "multiple definition of `moebench::FifoCache::victim" in r.stderr, r.stderr
