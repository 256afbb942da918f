# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""ci/check_regression passes on the committed reference and fails, with a
table naming the slowed strategy, when a strategy is made slower on purpose
(the test-only MOEBENCH_TEST_SLOWDOWN flag)."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "ci" / "check_regression"
BIN = os.environ.get("MOEBENCH_RUN_SUITE", str(ROOT / "build" / "bin" / "run_suite"))


def check(env_extra=None, *args):
    env = dict(os.environ)
    env.pop("MOEBENCH_TEST_SLOWDOWN", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, str(SCRIPT), "--bin", BIN, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)


def test_deliberately_slowed_strategy_fails_with_a_table(tmp_path):
    p = check({"MOEBENCH_TEST_SLOWDOWN": "ktransformers:1.5"}, "--results", str(tmp_path))
    assert p.returncode == 1, p.stdout + p.stderr
    # A failing check keeps its run, inside the results root it was given, and says where.
    kept = list((tmp_path / "regression-check").iterdir())
    assert len(kept) == 1 and (kept[0] / "runs.jsonl").is_file() and str(kept[0]) in p.stderr
    lines = [l for l in p.stdout.splitlines() if "WORSE" in l]
    assert lines, p.stdout
    assert all("/ ktransformers " in l for l in lines), p.stdout
    assert any("tbt_mean_ms" in l for l in lines)
    assert "--accept" in p.stdout


def test_accept_writes_a_reference_that_then_passes(tmp_path):
    ref = tmp_path / "ref.csv"
    results = tmp_path / "results"
    p = check(None, "--reference", str(ref), "--accept", "--results", str(results))
    assert p.returncode == 0, p.stdout + p.stderr
    assert ref.read_text().startswith("model,strategy,case_id")
    assert not (results / "regression-check").exists()  # a run that passes leaves nothing behind
    # A missing case is a failure.
    accepted = ref.read_text()
    lines = accepted.splitlines()
    row = next(l for l in lines[1:] if l.split(",")[1] == "all-cpu")
    ref.write_text("\n".join(lines + [row.replace(",all-cpu,", ",no-such-strategy,", 1)]) + "\n")
    # (A failing check keeps its run: inside the test's own results root, not the repository's.)
    p = check(None, "--reference", str(ref), "--results", str(results))
    assert p.returncode == 1 and "MISSING" in p.stdout
    assert str(results / "regression-check") in p.stderr
    # The accepted reference passes on that run (a second run of the suite would be the same: it is
    # deterministic; this test's two runs are what it costs).
    (kept,) = list((results / "regression-check").iterdir())
    ref.write_text(accepted)
    p = check(None, "--reference", str(ref), "--run", str(kept))
    assert p.returncode == 0, p.stdout + p.stderr
