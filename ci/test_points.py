# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""run_suite --points (scripts/testbed-region's runs): one process runs a suite at several point folders, each
with its own presets and results root, and every row is the row a run of its own at that point gives (the
workloads the points share change no result); options that would name one run's place are refused."""

import json
import os
import pathlib
import re
import shutil
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUN_SUITE = pathlib.Path(os.environ.get("MOEBENCH_RUN_SUITE", ROOT / "build" / "bin" / "run_suite"))
SUITE = "suites/smoke.toml"
PROFILE = "hybrimoe-a6000"
# Columns measured on the host or naming the run or the preset file's place: all others are simulated.
HOST = re.compile(r"^(run_id|utc_time|wall_time_s|result_of|case_id|preset_files|decision_.*|host_.*)$")


def run(*args, env_extra=None):
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    env.pop("MOEBENCH_TEST_SLOWDOWN", None)
    env.pop("MOEBENCH_CONFIG_PATH", None)
    env.update(env_extra or {})
    return subprocess.run([str(RUN_SUITE), *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT)


def rows(results: pathlib.Path) -> dict:
    (run_dir,) = list((results / "smoke").glob("*/runs.jsonl"))
    out = {}
    for line in run_dir.read_text().splitlines():
        r = json.loads(line)
        out[(r["strategy"], r["axes"], r["repetition"])] = {k: v for k, v in r.items() if not HOST.match(k)}
    return out


def point(root: pathlib.Path, name: str, h2d_gbps: float) -> pathlib.Path:
    text = (ROOT / "configs" / "hardware" / f"{PROFILE}.toml").read_text()
    text, n = re.subn(r"(?m)^h2d_gbps = [0-9.]+", f"h2d_gbps = {h2d_gbps}", text)
    assert n == 1
    d = root / name
    (d / "configs" / "hardware").mkdir(parents=True)
    (d / "configs" / "hardware" / f"{PROFILE}.toml").write_text(text)
    return d


def test_each_point_gets_the_rows_of_a_run_of_its_own(tmp_path):
    a, b = point(tmp_path, "a", 20.0), point(tmp_path, "b", 8.0)
    p = run(SUITE, "-q", "-j", 2, "--points", a, b)
    assert p.returncode == 0, p.stderr
    for d in (a, b):
        alone = tmp_path / f"alone-{d.name}"
        p = run(SUITE, "-q", "-j", 2, "--results", alone, env_extra={"MOEBENCH_CONFIG_PATH": str(d / "configs")})
        assert p.returncode == 0, p.stderr
        assert rows(d / "results") == rows(alone)
    ra, rb = rows(a / "results"), rows(b / "results")
    assert ra.keys() == rb.keys()
    # Each point ran on its own profile: the slower link is slower for a strategy that copies experts.
    slower = [k for k in ra if rb[k]["hardware.link.h2d_gbps"] == 8.0 and ra[k]["hardware.link.h2d_gbps"] == 20.0
              and rb[k]["h2d_bytes"] > 0 and rb[k]["tbt_mean_ms"] > ra[k]["tbt_mean_ms"]]
    assert slower


def test_points_refuses_a_folder_without_presets_and_one_run_options(tmp_path):
    a = point(tmp_path, "a", 20.0)
    (tmp_path / "empty").mkdir()
    p = run(SUITE, "--points", a, tmp_path / "empty")
    assert p.returncode == 2 and "--points: expected a folder holding configs/" in p.stderr
    assert str(tmp_path / "empty") in p.stderr
    for extra in (["--results", tmp_path / "r"], ["--out", tmp_path / "o"], ["--shard", "0/2"], ["--dry-run"]):
        p = run(SUITE, *extra, "--points", a)
        assert p.returncode == 2 and "--points: expected an experiment file" in p.stderr, (extra, p.stderr)
    assert not (a / "results").exists()
    shutil.rmtree(a)


# A real-backend case that waits for an arrival a day away (it once held the run for the day, SIGTERM ignored),
# after a quick one. The point folders need presets of their own only to be points.
SLEEPER = """strategies = ["all-cpu"]
[suite]
name = "sleeper"
backend = "real"
real_weights_gib = 0.05
real_threads = 1
[model]
preset = "tiny-deepseek"
[hardware]
preset = "local-cpu"
[workload]
sequences = [1, 2]
arrival = "file"
arrivals = "arrivals.jsonl"
scheduler = "continuous"
prompt_len = 2
decode_len = 2
"""


def test_sigterm_stops_the_points_names_those_not_run_and_the_command_that_finishes_them(tmp_path):
    import signal
    import time

    suite = tmp_path / "sleeper.toml"
    suite.write_text(SLEEPER)
    (tmp_path / "arrivals.jsonl").write_text('{"arrival_time": 1733558400}\n{"arrival_time": 1733644800}\n')
    a, b = point(tmp_path, "a", 20.0), point(tmp_path, "b", 8.0)
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    env.pop("MOEBENCH_CONFIG_PATH", None)
    p = subprocess.Popen([str(RUN_SUITE), str(suite), "-q", "--points", str(a), str(b)], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not list((a / "results").glob("sleeper/*/cases/*.json")):
        time.sleep(0.05)
    time.sleep(0.5)  # the second case is waiting for its arrival
    t0 = time.time()
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert time.time() - t0 < 10, "the wait for an arrival a day away was not stopped"
    assert p.returncode == 130, err
    assert not (b / "results").exists(), "the point after the interrupted one ran"
    assert f"{b}: not run" in err and f"{a}: interrupted" in err, err
    assert f"--points {a} {b} --resume" in err, err
    # The interrupted point's own command names its presets.
    assert f"MOEBENCH_CONFIG_PATH={a / 'configs'} run_suite {suite}" in err, err


def test_points_resume_finishes_an_unfinished_point_and_keeps_a_complete_one(tmp_path):
    a, b = point(tmp_path, "a", 20.0), point(tmp_path, "b", 8.0)
    p = run(SUITE, "-q", "-j", 2, "--points", a)
    assert p.returncode == 0, p.stderr
    (run_a,) = list((a / "results" / "smoke").glob("*/"))
    # Leave point a's run unfinished: one case's result gone, as a kill leaves it.
    manifest = json.loads((run_a / "manifest.json").read_text())
    manifest["status"] = "interrupted"
    (run_a / "manifest.json").write_text(json.dumps(manifest))
    cases = sorted((run_a / "cases").glob("*.json"))
    cases[0].unlink()
    p = run(SUITE, "-q", "-j", 2, "--points", a, b, "--resume")
    assert p.returncode == 0, p.stderr
    assert list((a / "results" / "smoke").glob("*/")) == [run_a], "point a's run was not the one finished"
    assert json.loads((run_a / "manifest.json").read_text())["status"] == "complete"
    assert len(list((run_a / "cases").glob("*.json"))) == len(cases)
    assert len(list((b / "results" / "smoke").glob("*/"))) == 1
    # Both complete: a second resume runs nothing.
    p = run(SUITE, "--points", a, b, "--resume")
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("complete; nothing to resume") == 2, p.stdout
    assert len(list((a / "results" / "smoke").glob("*/"))) == 1 and len(list((b / "results" / "smoke").glob("*/"))) == 1


def test_a_point_that_fails_is_said_and_the_next_one_runs(tmp_path):
    """A point whose results cannot be written once ended the loop without saying that the next was skipped."""
    a, b = point(tmp_path, "a", 20.0), point(tmp_path, "b", 8.0)
    bad = tmp_path / "bad"
    (bad / "configs").mkdir(parents=True)
    (bad / "results").write_text("a file where the results folder goes\n")
    p = run(SUITE, "-q", "-j", 2, "--points", a, bad, b)
    assert p.returncode == 2, p.stderr
    assert f"point '{bad}': --results {bad / 'results'}" in p.stderr, p.stderr
    assert f"{bad}: error (above)" in p.stderr and f"{b}: complete" in p.stderr, p.stderr
    assert len(list((b / "results" / "smoke").glob("*/runs.jsonl"))) == 1
