# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""End to end: run_suite on the default suite, then its figure script; and
METRICS.md defines every metric column the harness writes."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import common

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(os.environ.get("MOEBENCH_BIN", ROOT / "build" / "bin" / "moebench")).parent



@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory):
    res = tmp_path_factory.mktemp("results")
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    r = subprocess.run([str(BIN / "run_suite"), str(ROOT / "suites" / "smoke.toml"), "--results", str(res), "--quiet",
                        "--jobs", "2"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return res


def test_smoke_figures(smoke_results):
    r = subprocess.run([sys.executable, str(ROOT / "analysis" / "smoke.py"), "--results", str(smoke_results)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    run = common.latest_run(str(smoke_results), "smoke")
    assert (run / "figures" / "smoke.png").stat().st_size > 10_000
    md = (run / "figures" / "smoke.md").read_text()
    assert "gpu-ondemand-belady" in md
    df = common.load_runs(run)
    assert len(df) == 7 and (df["status"] == "ok").all()
    # Belady is an upper bound for the replacement policies on the same workload.
    hit = df.set_index("strategy")["decode_hit_rate_token_frac"]
    assert hit["gpu-ondemand-belady"] >= hit["gpu-ondemand-lru"]
    assert hit["gpu-ondemand-belady"] >= hit["gpu-ondemand-lfu"]


def test_smoke_script_reports_missing_results(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "analysis" / "smoke.py"), "--results", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "expected a complete run" in r.stderr


def test_metrics_doc_defines_every_metric_column(smoke_results):
    run = common.latest_run(str(smoke_results), "smoke")
    row = json.loads((run / "runs.jsonl").read_text().splitlines()[0])
    identity = ["suite", "run_id", "case_id", "case_index", "repetition", "status", "error", "warnings", "backend", "model",
                "hardware", "strategy", "axes", "parts", "preset_files", "utc_time", "wall_time_s", "result_of"]
    keys = list(row.keys())
    assert keys[: len(identity)] == identity
    metrics = [k for k in keys[len(identity):] if "." not in k]
    doc = (ROOT / "analysis" / "METRICS.md").read_text()
    documented = set(re.findall(r"`([a-z0-9_]+)`", doc))
    missing = [m for m in metrics if m not in documented]
    assert not missing, f"METRICS.md does not define: {missing}"
