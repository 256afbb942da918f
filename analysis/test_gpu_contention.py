# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""analysis/gpu_contention.py: the terms' fit recovers known terms, the
committed replays' held-out check, a timeline's span, a bad log named."""

import json
import pathlib
import subprocess
import sys
import gpu_contention

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "analysis" / "gpu_contention.py"


def test_the_fit_recovers_a_factor_and_a_per_task_cost():
    # real = 1.3 * sim + 5 * tasks, exactly
    pts = [(n, s, 1.3 * s + 5.0 * n) for n, s in ((10, 100.0), (40, 90.0), (5, 400.0), (100, 1000.0))]
    factor, per_task = gpu_contention.fit(pts)
    assert abs(factor - 1.3) < 1e-9 and abs(per_task - 5.0) < 1e-9
    assert gpu_contention.error(pts, factor, per_task) < 1e-12
    # A negative per-task cost is not a cost: the factor alone is refitted.
    pts = [(n, s, 2.0 * s - 1.0 * n) for n, s in ((10, 100.0), (40, 90.0), (5, 400.0))]
    assert gpu_contention.fit(pts)[1] == 0.0


def test_logs_parse_into_cases_with_their_task_kinds(tmp_path):
    log = tmp_path / "r.log"
    log.write_text("replay: 1 case(s) of m on a GPU\n"
                   "dali (model.preset=m; workload.batch_size=1):\n"
                   "steps: simulated 100.0 us, composed 110.0 us, real 120.0 us; end to end +0.200\n"
                   "  cpu-expert (cpu)    3 tasks real        busy sim     30.0 us real     36.0 us (1.200)\n"
                   "  attention           2 tasks placeholder busy sim     10.0 us real     12.0 us (1.200)\n")
    b = gpu_contention.parse_logs([log])
    assert len(b) == 1 and b[0]["real"] == 120.0 and b[0]["where"] == "r.log:2"
    assert b[0]["kinds"]["cpu-expert (cpu)"] == (3, 30.0, 36.0)
    assert gpu_contention.samples(b, ("cpu-expert (cpu)", "deferred-expert")) == [(3, 30.0, 36.0)]


def test_the_committed_replays_held_out_check():
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # Each term fitted on half the cases makes the other half's busy times closer.
    seen = 0
    for line in r.stdout.splitlines():
        if line.split()[:1] and line.split()[0] in gpu_contention.TERMS:
            seen += 1
            for cell in line.split("   ")[-2:]:
                before, after = cell.split("(")[0].split("->")
                assert float(after) < float(before), line
    assert seen == len(gpu_contention.TERMS), r.stdout


def test_a_timelines_span_runs_from_the_first_start_to_the_last_end(tmp_path):
    t = tmp_path / "t.json"
    ev = [{"ph": "X", "ts": 5, "dur": 10, "args": {"step": 0}}, {"ph": "X", "ts": 40, "dur": 5, "args": {"step": 6}},
          {"ph": "X", "ts": 100, "dur": 5, "args": {"step": 7}}, {"ph": "M", "args": {}}]
    t.write_text(json.dumps({"traceEvents": ev}))
    assert gpu_contention.span_us(t) == 40.0


def test_a_missing_log_is_named(tmp_path):
    try:
        gpu_contention.parse_logs([tmp_path / "none.log"])
    except ValueError as e:
        assert "none.log: expected a replay log" in str(e)
    else:
        raise AssertionError("no error")


def test_half_errors_judge_one_half_of_the_cases():
    kept = [{"i": 0, "real": 110.0, "s": 100.0}, {"i": 1, "real": 100.0, "s": 100.0},
            {"i": 2, "real": 103.0, "s": 100.0}, {"i": 3, "real": 80.0, "s": 100.0}]
    assert gpu_contention.half_errors(kept, "s", 0) == "median +0.065, median |.| 0.065, within 5%: 1 of 2"
    assert gpu_contention.half_errors(kept, "s", 1) == "median -0.100, median |.| 0.100, within 5%: 1 of 2"


def test_bad_runs_and_options_are_named_not_a_traceback(tmp_path):
    """--check on missing or empty folders, a smoke run, options read as folders, a truncated timeline and a
    non-JSON row once ended in tracebacks (one a JSONDecodeError naming no file)."""
    def run(*args):
        r = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (args, r.stderr)
        return r.stderr

    assert "found no such file" in run("--check", tmp_path / "nope", tmp_path / "nope2")
    (tmp_path / "empty").mkdir()
    assert "runs.jsonl: expected a run's rows (a regular file), found no such file" in run(
        "--check", tmp_path / "empty", tmp_path / "empty")
    assert "--check: expected at least one argument" in run("--check", "--toml", "--handoff")
    assert "--check: expected two run folders" in run("--check", tmp_path / "empty")
    run_dir = tmp_path / "run"
    (run_dir / "timelines").mkdir(parents=True)
    (run_dir / "runs.jsonl").write_text('{"strategy": "s", "axes": "a", "case_id": "c1"}\nnot json\n')
    assert f"{run_dir / 'runs.jsonl'}:2: expected a run's rows (a JSON object per line)" in run(
        "--check", run_dir, run_dir)
    # A smoke run: none of the replay's cases.
    (run_dir / "runs.jsonl").write_text('{"strategy": "s", "axes": "a", "case_id": "c1"}\n')
    assert "expected a run of suites/gpu-replay.toml (the replay's cases), found no case" in run(
        "--check", run_dir, run_dir)
    # A truncated timeline is named.
    t = run_dir / "timelines" / "c1.json"
    t.write_text('{"traceEvents": [{"ph": "X", "ts": 0, "dur": 5, "args": {"step": 0}}')
    try:
        gpu_contention.span_us(t)
        raise AssertionError("a truncated timeline accepted")
    except ValueError as e:
        assert str(t) in str(e) and "expected a case's timeline" in str(e)
