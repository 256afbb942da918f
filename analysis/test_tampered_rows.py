# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""The analysis computes a verdict only from complete, finite, unique rows of the run's own cases (hostile
input, third round): a NaN in every llama.cpp row once gave "not reproduced ... nanx-nanx", NaN, null or inf in
one seed was dropped silently, a planted duplicate turned a ratio into 0.20x, negative speeds gave a verdict,
smoke.py drew another suite's row, an empty runs.jsonl read as "not run", a corrupt line or a missing column
gave a traceback naming no file, and a newer run with a broken manifest hid every older run."""

import json
import pathlib
import subprocess
import sys

import pytest
import common

ROOT = pathlib.Path(__file__).resolve().parent.parent


def row(case, rep=0, **over):
    r = {"suite": "p", "run_id": "20261128T000000Z-x", "case_id": case, "case_index": 0, "repetition": rep,
         "status": "ok", "backend": "sim", "strategy": "s", "parts": "p", "ttft_mean_ms": 10.0, "tbt_mean_ms": 2.0,
         "prefill_tokens_per_s": 100.0, "decode_tokens_per_s": 500.0, "total_time_s": 0.1,
         "decode_hit_rate_token_frac": 0.5}
    r.update(over)
    return r


def write_run(root: pathlib.Path, lines, name="20261128T000000Z-x", cases=("a", "b"), status="complete"):
    d = root / "p" / name
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"status": status, "suite": {"name": "p"},
                                                 "cases": [{"case_id": c} for c in cases]}))
    (d / "runs.jsonl").write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return d


@pytest.mark.parametrize("lines, why", [
    ([row("a"), '{"suite": "p", "run_id": "r", "case_id": "b", "status": "ok", "ttft_mean_ms": NaN}'],
     "runs.jsonl:2: expected one JSON object per line, found invalid JSON (NaN"),
    ([row("a"), row("b", decode_tokens_per_s=float("inf"))], "runs.jsonl:2: expected one JSON object per line, "
                                                              "found invalid JSON (Infinity"),
    ([row("a"), json.dumps(row("b")).replace('"decode_tokens_per_s": 500.0', '"decode_tokens_per_s": 1e999')],
     "line 2 (case b): 'decode_tokens_per_s' is inf"),
    ([row("a"), row("a")], "line 2 (case a): repetition 0 of the case again (also line 1)"),
    ([row("a"), row("b", decode_tokens_per_s=-5.0)], "line 2 (case b): 'decode_tokens_per_s' is -5.0"),
    ([row("a"), row("b", tbt_mean_ms="fast")], "'tbt_mean_ms' is \"fast\" (not a number)"),
    ([row("a"), {k: v for k, v in row("b").items() if k != "decode_tokens_per_s"}],
     "line 2 (case b): no key 'decode_tokens_per_s'"),
    ([row("a"), row("c")], "line 2 (case c): a case the manifest does not list"),
    ([row("a"), row("b", suite="smoke")], "suite 'smoke', not the run's 'p'"),
    ([row("a"), row("a", rep=1, tbt_mean_ms=3.0)], "simulated metrics unlike the case's other repetition"),
    ([row("a"), row("b", decode_hit_rate_token_frac=1.5)], "'decode_hit_rate_token_frac' is 1.5"),
    (["{not json"], "runs.jsonl:1: expected one JSON object per line, found invalid JSON"),
])
def test_rows_that_run_suite_never_writes_are_refused_by_name(tmp_path, lines, why):
    d = write_run(tmp_path, lines)
    with pytest.raises(common.RunsError) as e:
        common.load_runs(d)
    assert str(d / "runs.jsonl") in str(e.value) and why in str(e.value), str(e.value)
    # A figure reading the part says it too (report.py shows the error as the figure's status).
    with pytest.raises(common.RunsError):
        common.find_part(str(tmp_path), "p", suites=())


def test_good_rows_pass_and_a_null_where_the_workload_has_none(tmp_path):
    d = write_run(tmp_path, [row("a"), row("a", rep=1), row("b", decode_tokens_per_s=None, tbt_mean_ms=None)])
    assert len(common.load_runs(d)) == 3


def test_an_empty_run_is_an_error_not_not_run(tmp_path):
    d = write_run(tmp_path, [])
    with pytest.raises(common.RunsError, match="expected the rows of the run's 2 case"):
        common.find_part(str(tmp_path), "p", suites=())
    assert d.exists()


def test_a_newer_run_with_a_broken_manifest_does_not_hide_older_runs(tmp_path, capsys):
    old = write_run(tmp_path, [row("a"), row("b")])
    new = write_run(tmp_path, [row("a"), row("b")], name="20261129T000000Z-x")
    (new / "manifest.json").write_text("{broken")
    assert common.latest_run(str(tmp_path), "p") == old
    run, rows = common.find_part(str(tmp_path), "p", suites=())
    assert run == old and len(rows) == 2
    assert f"warning: {new / 'manifest.json'}: expected a readable JSON manifest" in capsys.readouterr().err


def test_smoke_refuses_another_suites_row(tmp_path):
    d = tmp_path / "smoke" / "20261128T000000Z-x"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"status": "complete", "suite": {"name": "smoke", "description": ""},
                                                 "provenance": {"git_commit": "0" * 40},
                                                 "cases": [{"case_id": "a"}]}))
    r = row("a", suite="smoke")
    (d / "runs.jsonl").write_text(json.dumps(r) + "\n" + json.dumps(dict(r, suite="dali", case_id="z")) + "\n")
    p = subprocess.run([sys.executable, str(ROOT / "analysis" / "smoke.py"), "--results", str(tmp_path)],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "a case the manifest does not list" in p.stderr, p.stderr
    assert not (d / "figures").exists()


def test_a_run_read_again_is_reparsed_when_its_files_change_and_each_caller_owns_its_copy(tmp_path):
    d = write_run(tmp_path, [row("a"), row("b")])
    first = common.load_runs(d)
    first.loc[0, "tbt_mean_ms"] = 99.0  # the caller's copy: the next read does not see it
    assert common.load_runs(d)["tbt_mean_ms"].tolist() == [2.0, 2.0]
    # The run changes under the same name (a resumed run appends, a tampered one is caught): read again.
    (d / "runs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [row("a"), row("b", tbt_mean_ms=3.25)]))
    assert common.load_runs(d)["tbt_mean_ms"].tolist() == [2.0, 3.25]
    (d / "runs.jsonl").write_text(json.dumps(row("a")) + "\n" + json.dumps(row("a")) + "\n")
    with pytest.raises(common.RunsError):
        common.load_runs(d)
