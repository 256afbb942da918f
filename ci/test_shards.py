# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""run_suite --shard I/N and --merge: the shards of a suite are
disjoint, cover it, and merged equal the unsharded run case for case (every
simulated metric identical); a merge refuses missing, duplicated or foreign
shards unless told to keep a partial result; a shard resumes only itself;
the merged folder is what the analysis and ci/check_regression read."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUN_SUITE = pathlib.Path(os.environ.get("MOEBENCH_RUN_SUITE", ROOT / "build" / "bin" / "run_suite"))
SUITE = "suites/regression.toml"
SHARDS = 4
# Columns measured on the host (time of day, wall clock, decision times) or naming the run: all
# others are simulated and must be identical.
HOST = re.compile(r"^(run_id|utc_time|wall_time_s|result_of|decision_.*|host_.*)$")

sys.path.insert(0, str(ROOT / "analysis"))


def run(*args, check=None):
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    env.pop("MOEBENCH_TEST_SLOWDOWN", None)
    p = subprocess.run([str(RUN_SUITE), *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT)
    if check is not None:
        assert p.returncode == check, p.stdout + p.stderr
    return p


def rows(run_dir: pathlib.Path) -> dict:
    out = {}
    for line in (run_dir / "runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        out[(r["case_id"], r["repetition"])] = {k: v for k, v in r.items() if not HOST.match(k)}
    return out


def manifest(run_dir: pathlib.Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The regression suite run whole, and as 4 shards into the suite's own results folder (their default
    names), then merged."""
    root = tmp_path_factory.mktemp("shards")
    run(SUITE, "--results", root / "whole", "--jobs", 2, "--quiet", check=0)
    whole = next((root / "whole").glob("*/*/manifest.json")).parent
    for i in range(SHARDS):
        run(SUITE, "--shard", f"{i}/{SHARDS}", "--results", root / "sharded", "--jobs", 2, "--quiet", check=0)
    suite_dir = root / "sharded" / "regression"
    shard_dirs = sorted(suite_dir.glob("*-shard*of4"))
    assert len(shard_dirs) == SHARDS
    p = run("--merge", *shard_dirs, "--results", root / "sharded", check=0)
    merged = pathlib.Path(re.search(r"merged: (\S+)", p.stdout).group(1))
    return {"root": root, "whole": whole, "shards": shard_dirs, "merged": merged}


def test_the_merged_shards_equal_the_unsharded_run(runs):
    whole, merged = rows(runs["whole"]), rows(runs["merged"])
    assert len(whole) >= 30 and whole.keys() == merged.keys()
    for key in whole:
        assert whole[key] == merged[key], key
    mw, mm = manifest(runs["whole"]), manifest(runs["merged"])
    assert mm["status"] == "complete" and mm["experiment_hash"] == mw["experiment_hash"]
    assert [c["case_id"] for c in mm["cases"]] == [c["case_id"] for c in mw["cases"]]  # suite order
    assert [c["config"] for c in mm["cases"]] == [c["config"] for c in mw["cases"]]
    assert mm["seeds"] == mw["seeds"] and len(mm["merged_from"]) == SHARDS
    # runs.csv is the same view of the same rows.
    assert len((runs["merged"] / "runs.csv").read_text().splitlines()) == len(whole) + 1


def test_shards_are_disjoint_cover_the_suite_and_are_balanced(runs):
    ids = [set(c["case_id"] for c in manifest(d)["cases"]) for d in runs["shards"]]
    whole = [c["case_id"] for c in manifest(runs["whole"])["cases"]]
    assert sum(len(s) for s in ids) == len(whole) and set().union(*ids) == set(whole)
    assert all(manifest(d)["shard"]["suite_cases"] == whole for d in runs["shards"])
    # Balanced by the work estimate (harness/suite/shards.cc, case_work_estimate: sequences x tokens x MoE
    # layers) within the largest case's (no shared simulations in this suite).
    rows = [json.loads(x) for x in (runs["whole"] / "runs.jsonl").read_text().splitlines()]
    work = {r["case_id"]: max(1, r["workload.sequences"]) * max(1, r["workload.prompt_len"] + r["workload.decode_len"])
            * (r["model.num_layers"] - r["model.first_dense_layers"]) for r in rows}
    loads = [sum(work[c] for c in s) for s in ids]
    assert max(loads) - min(loads) <= max(work.values()), loads
    # The same assignment every time (each array task computes it on its own).
    listed = run(SUITE, "--shard", "2/4", "--dry-run", check=0).stdout
    assert set(re.findall(r"\] ([0-9a-f]{16}) ", listed)) == ids[2]


def test_cases_sharing_a_simulation_stay_in_one_shard(tmp_path):
    """A paper suite's two comparisons of a strategy whose implementation is the same in both are one simulation
    (llama.cpp on DALI's testbed: no entry for its stack, the testbed's default kernel in both): they go to the
    same shard, so no shard simulates what another copies."""
    suite = "suites/dali/fig12-deepseek.toml"
    whole = set(re.findall(r"\] ([0-9a-f]{16}) ", run(suite, "--dry-run", check=0).stdout))
    shards = [set(re.findall(r"\] ([0-9a-f]{16}) ", run(suite, "--shard", f"{i}/3", "--dry-run",
                                                             check=0).stdout)) for i in range(3)]
    assert set().union(*shards) == whole and sum(map(len, shards)) == len(whole)
    # Which cases share a simulation: an unsharded run copies one's rows into the other (result_of).
    # One batch, one seed: enough to have pairs (the shards above are of the whole suite).
    run(suite, "--results", tmp_path, "--jobs", 2, "--quiet", "--filter",
        "workload.batch_size=8,workload.seed=1", check=0)
    run_dir = next(tmp_path.glob("*/*/runs.jsonl")).parent
    pairs = {(r["case_id"], r["result_of"]) for r in map(json.loads, (run_dir / "runs.jsonl").read_text().splitlines())
             if r.get("result_of")}
    assert pairs, "expected cases that share a simulation in this suite"
    for a, b in pairs:
        assert [a in s for s in shards] == [b in s for s in shards], (a, b)


def test_the_analysis_reads_the_merge_not_a_shard(runs):
    import common
    suite_dir = runs["merged"].parent
    assert common.latest_run(str(suite_dir.parent), suite_dir.name) == runs["merged"]
    assert all(d not in common.run_dirs(str(suite_dir.parent), suite_dir.name) for d in runs["shards"])


def test_check_regression_reads_the_merged_folder(runs):
    p = subprocess.run([sys.executable, str(ROOT / "ci" / "check_regression"), "--run", str(runs["merged"])],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr


def test_merge_refuses_a_missing_shard_unless_partial(runs, tmp_path):
    before = set(runs["merged"].parent.iterdir())
    p = run("--merge", *runs["shards"][:3], "--results", runs["root"] / "sharded", check=2)
    missing = set(manifest(runs["shards"][3])["cases"][i]["case_id"] for i in range(2))
    assert "shard 3 of 4 not given" in p.stderr and "in no shard" in p.stderr
    assert all(m in p.stderr for m in missing) and "nothing was written" in p.stderr
    assert set(runs["merged"].parent.iterdir()) == before
    out = tmp_path / "partial"
    p = run("--merge", *runs["shards"][:3], "--out", out, "--partial", check=1)
    m = manifest(out)
    assert m["status"] == "partial" and m["absent_shards"] == [3]
    assert set(m["missing_cases"]) == set(c["case_id"] for c in manifest(runs["shards"][3])["cases"])
    assert "PARTIAL" in p.stdout
    import common
    assert common.latest_run(str(tmp_path), "x") is None  # a partial merge is not a complete run


def test_merge_refuses_duplicates_and_foreign_shards(runs, tmp_path):
    p = run("--merge", runs["shards"][0], runs["shards"][0], "--out", tmp_path / "a", check=2)
    assert "expected each shard folder once" in p.stderr
    copy = tmp_path / "copy"
    shutil.copytree(runs["shards"][0], copy)
    (copy / ".run_suite.lock").unlink(missing_ok=True)
    p = run("--merge", runs["shards"][0], copy, *runs["shards"][1:], "--out", tmp_path / "b", check=2)
    assert re.search(r"found shard 0/4 in both \S+ and \S+copy", p.stderr), p.stderr
    other = tmp_path / "smoke-shard"
    run("suites/smoke.toml", "--shard", "0/4", "--out", other, "--quiet", check=0)
    p = run("--merge", runs["shards"][0], other, "--out", tmp_path / "c", check=2)
    assert "expected every shard to agree on manifest key 'suite.name'" in p.stderr, p.stderr
    p = run("--merge", runs["whole"], "--out", tmp_path / "d", check=2)
    assert "expected the run folder of a shard" in p.stderr
    for d in ("a", "b", "c", "d"):
        assert not (tmp_path / d / "manifest.json").exists()


def _copies(runs, tmp_path):
    out = []
    for d in runs["shards"]:
        c = tmp_path / "in" / d.name
        shutil.copytree(d, c)
        (c / ".run_suite.lock").unlink(missing_ok=True)
        out.append(c)
    return out


def _edit_manifests(dirs, edit):
    for d in dirs:
        m = manifest(d)
        edit(m)
        (d / "manifest.json").write_text(json.dumps(m))


def test_merge_recomputes_the_case_list_and_checks_every_row(runs, tmp_path):
    """--merge trusted the manifests: a case id removed from every shard's list (and its file) merged as
    "complete, 7 of 7" for an 8-case suite; edited hashes and case rows were accepted. The case list and the
    experiment hash are recomputed from the suite file, every stored row is checked against its case, and
    nothing is written on a refusal."""
    dirs = _copies(runs, tmp_path)
    gone = manifest(dirs[0])["cases"][0]["case_id"]
    _edit_manifests(dirs, lambda m: m["shard"]["suite_cases"].remove(gone))
    (dirs[0] / "cases" / f"{gone}.json").unlink()
    _edit_manifests(dirs[:1], lambda m: m.update(cases=[c for c in m["cases"] if c["case_id"] != gone]))
    p = run("--merge", *dirs, "--out", tmp_path / "a", check=2)
    assert "key 'shard.suite_cases': expected the" in p.stderr and f"without {gone}" in p.stderr, p.stderr
    dirs = _copies(runs, tmp_path / "2")
    _edit_manifests(dirs, lambda m: m.update(experiment_hash="0" * 16))
    p = run("--merge", *dirs, "--out", tmp_path / "b", check=2)
    assert "key 'experiment_hash': expected" in p.stderr, p.stderr
    dirs = _copies(runs, tmp_path / "3")
    case = sorted((dirs[1] / "cases").glob("*.json"))[0]
    stored = json.loads(case.read_text())
    stored["rows"][0]["strategy.cache.kind"] = "belady"
    case.write_text(json.dumps(stored))
    p = run("--merge", *dirs, "--out", tmp_path / "c", check=2)
    assert f"{case}: row of case {case.stem}: key 'strategy.cache.kind': expected" in p.stderr, p.stderr
    for d in ("a", "b", "c"):
        assert not (tmp_path / d).exists()


def test_merge_names_the_file_and_key_of_a_wrong_json_type(runs, tmp_path):
    """Wrong JSON types gave "internal error: [json.exception.type_error.302]", exit 3, and left 8 case files
    and a lock."""
    dirs = _copies(runs, tmp_path)
    _edit_manifests(dirs[2:3], lambda m: m["shard"].update(index="2"))
    p = run("--merge", *dirs, "--out", tmp_path / "out", check=2)
    assert f"{dirs[2] / 'manifest.json'}: key 'shard.index': expected an integer, found string" in p.stderr, \
        p.stderr
    assert "internal error" not in p.stderr and not (tmp_path / "out").exists()
    dirs = _copies(runs, tmp_path / "2")
    case = sorted((dirs[0] / "cases").glob("*.json"))[0]
    case.write_text(json.dumps({"case_id": case.stem, "status": "ok", "rows": {"a": 1}}))
    p = run("--merge", *dirs, "--out", tmp_path / "out2", check=2)
    assert f"{case}: key 'rows': expected an array, found object" in p.stderr, p.stderr
    assert not (tmp_path / "out2").exists()


def test_a_shard_resumes_itself_only(runs, tmp_path):
    d = tmp_path / "s1"
    run(SUITE, "--shard", "1/4", "--out", d, "--quiet", check=0)
    done = sorted((d / "cases").glob("*.json"))
    done[0].unlink()  # as if the task was preempted before this case finished
    m = manifest(d)
    m["status"] = "interrupted"
    (d / "manifest.json").write_text(json.dumps(m))
    p = run(SUITE, "--shard", "2/4", "--resume", "--out", d, check=2)
    assert "expected a run of shard 2/4, found a run of shard 1/4" in p.stderr
    p = run(SUITE, "--resume", "--out", d, check=2)
    assert "found a run of shard 1/4" in p.stderr
    p = run(SUITE, "--shard", "1/4", "--resume", "--out", d, check=0)
    assert manifest(d)["status"] == "complete" and len(list((d / "cases").glob("*.json"))) == len(done)
    assert rows(d) == rows(runs["shards"][1])


def test_bad_shard_options_are_refused():
    for bad in ("4/4", "-1/4", "1/0", "a/b", "1", "1/4/2"):
        p = run(SUITE, "--shard", bad, "--dry-run", check=2)
        assert "--shard: expected I/N with N from 1 to 100000 and I from 0 to N - 1" in p.stderr, bad
        assert f"found '{bad}'" in p.stderr
    p = run("--merge", check=2)
    p = run(SUITE, "--merge", "x", check=2)
    assert "--merge: expected only shard folders" in p.stderr
    p = run(check=2)
    assert "expected an experiment file (suites/*.toml) or --merge DIR..." in p.stderr


def test_slurm_sweep_submits_an_array_and_a_merge_that_waits_for_it(tmp_path):
    """scripts/slurm-sweep --dry-run: the commands it would submit (the real submission is ci/slurm-test,
    make slurm-test, against a one-node Slurm)."""
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    p = subprocess.run([str(ROOT / "scripts" / "slurm-sweep"), "suites/smoke.toml", "--shards", "4", "--partition",
                        "gpu", "--time", "2:00:00", "--mem", "16G", "--cpus", "2", "--gres", "gpu:1", "--results",
                        str(tmp_path), "--dry-run", "--", "--filter", "strategy.name~fiddler"],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    assert p.returncode == 0, p.stderr
    shard_cmd, merge_cmd, where = p.stdout.strip().splitlines()
    for opt in ("--partition=gpu", "--time=2:00:00", "--mem=16G"):
        assert opt in shard_cmd and opt in merge_cmd
    assert "--array=0-3" in shard_cmd and "--cpus-per-task=2" in shard_cmd and "--gres=gpu:1" in shard_cmd
    assert "--gres" not in merge_cmd  # the merge needs no GPU
    assert "--dependency=afterany:" in merge_cmd  # runs even when a shard failed, and says what is missing
    assert shard_cmd.endswith("suites/slurm/shard.sbatch --filter strategy.name~fiddler")
    assert f"MOEBENCH_SWEEP={tmp_path}/slurm/smoke-" in shard_cmd
    assert f"MOEBENCH_MERGED={tmp_path}/smoke/" in merge_cmd  # where make report finds it
    assert str(tmp_path) in where
    assert list(tmp_path.iterdir()) == []  # a dry run writes nothing
    for bad, msg in ((["--shards", "0"], "--shards: expected a whole number from 1 to 100000"),
                     (["--shards", "2", "--bogus"], "expected an option of slurm-sweep --help"),
                     (["--shards", "2", "--bin", str(tmp_path)], "expected run_suite in")):
        p = subprocess.run([str(ROOT / "scripts" / "slurm-sweep"), "suites/smoke.toml", *bad, "--dry-run"],
                           capture_output=True, text=True, cwd=ROOT, env=env)
        assert p.returncode == 2 and msg in p.stderr, (bad, p.stderr)


def test_slurm_sweep_refuses_what_slurm_or_run_suite_would_misread(tmp_path):
    """A comma in --results set another run_suite for the array tasks through --export, %j in a path is a
    Slurm pattern, --shards 99999999999999999999 wrapped round to --array=0-7766279631452241918, --cpus 1000
    and -- --out X failed in every task at start, --dry-run printed arguments unquoted (a newline in --mem split
    the command) and created the results folder."""
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))

    def sweep(*args):
        return subprocess.run([str(ROOT / "scripts" / "slurm-sweep"), "suites/smoke.toml", *map(str, args),
                               "--dry-run"], capture_output=True, text=True, cwd=ROOT, env=env)

    for bad, msg in ((["--shards", "2", "--results", tmp_path / "r,MOEBENCH_RUN_SUITE=evil"],
                      "--results: expected a path without commas, %"),
                     (["--shards", "2", "--results", tmp_path / "r%j"], "--results: expected a path without"),
                     (["--shards", "99999999999999999999"], "--shards: expected a whole number from 1 to 100000"),
                     (["--shards", "200000"], "--shards: expected a whole number from 1 to 100000"),
                     (["--shards", "2", "--cpus", "1000"], "--cpus: expected a whole number from 1 to 256"),
                     (["--shards", "2", "--mem", "16G\nx"], "expected sbatch option values without control"),
                     (["--shards", "2", "--", "--out", "X"], "expected run_suite options other than the ones")):
        p = sweep(*bad)
        assert p.returncode == 2 and msg in p.stderr, (bad, p.stderr)
    p = sweep("--shards", "40")
    assert p.returncode == 0 and "warning: --shards 40 for the suite's 7 case(s): 33 shard(s)" in p.stderr
    fresh = tmp_path / "not-yet"
    p = sweep("--shards", "2", "--results", fresh / "with space")
    assert p.returncode == 0, p.stderr
    assert not fresh.exists()  # nothing created by a dry run
    shard_cmd = p.stdout.splitlines()[0]
    assert "with\\ space" in shard_cmd  # quoted as a shell reads it
