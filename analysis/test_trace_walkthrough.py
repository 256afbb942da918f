# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""The walk-through of converting a real routing log in docs/USAGE.md,
followed step by step on a log of a vLLM log's shape: string request ids,
positions that restart at 0 in every forward pass, renormalised top-2
weights, one file per task, some rows dropped by the logger. The routing in
it is made up here (a format example, not a measurement)."""

import json
import os
import pathlib
import random
import shlex
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(os.environ.get("MOEBENCH_BIN", ROOT / "build" / "bin" / "moebench"))
RUN_SUITE = pathlib.Path(os.environ.get("MOEBENCH_RUN_SUITE", ROOT / "build" / "bin" / "run_suite"))
LAYERS, EXPERTS = 32, 8  # Mixtral-8x7B


def write_task(path: pathlib.Path, requests: list[str], prompt: int, decode: int, rng: random.Random,
               drop: set) -> None:
    lines = []
    for rid in requests:
        passes = [list(range(prompt))] + [[0]] * decode  # positions restart at 0 in every forward pass
        for p, positions in enumerate(passes):
            for pos in positions:
                for layer in range(LAYERS):
                    if (rid, p, layer) in drop:
                        continue  # the logger lost this row
                    ids = rng.sample(range(EXPERTS), 2)
                    w = rng.uniform(0.5, 0.9)
                    lines.append(json.dumps({"request_id": rid, "pos": pos, "layer_id": layer, "topk_ids": ids,
                                             "topk_weights": [round(w, 4), round(1 - w, 4)]}))
    path.write_text("\n".join(lines) + "\n")


def run(cmd, **kw):
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, **kw)


def test_readme_walkthrough_converts_a_vllm_shaped_log(tmp_path):
    rng = random.Random(5)
    a, b = tmp_path / "task1.jsonl", tmp_path / "task2.jsonl"
    write_task(a, ["cmpl-7", "cmpl-9"], prompt=5, decode=4, rng=rng, drop={("cmpl-9", 2, 7)})
    write_task(b, ["cmpl-7"], prompt=3, decode=2, rng=rng, drop=set())  # the same id in another task
    out = tmp_path / "mixtral.safetensors"
    # Step 2: without mappings, one error naming every missing field and a command with guesses.
    r = run([BIN, "trace", "convert", a, b, "--model", "mixtral-8x7b", "--out", out])
    assert r.returncode != 0 and not out.exists()
    assert "found 5 of them missing" in r.stderr, r.stderr
    suggested = r.stderr.split("e.g.\n", 1)[1].strip()
    assert suggested.startswith("moebench trace convert")
    args = shlex.split(suggested)[1:]
    assert ["--field", "seq=request_id"] == args[args.index("seq=request_id") - 1:args.index("seq=request_id") + 1]
    for m in ["token=pos", "layer=layer_id", "experts=topk_ids", "weights=topk_weights"]:
        assert m in args, suggested
    # Step 3: read as positions, the second forward pass repeats position 0; per-forward reads the passes.
    r = run([BIN, *args])
    assert r.returncode != 0 and "token 0 layer 0 again" in r.stderr, r.stderr
    # Step 4: the dropped row is refused with its count, then filled.
    r = run([BIN, *args, "--layout", "per-forward"])
    assert r.returncode != 0 and "found 1 missing" in r.stderr, r.stderr
    r = run([BIN, *args, "--layout", "per-forward", "--missing", "hole"])
    assert r.returncode == 0, r.stderr
    assert "3 sequences" in r.stdout, r.stdout  # task1's two requests, task2's one (its cmpl-7 kept apart)
    assert f"{(5 + 4) * 2 + 3 + 2} tokens" in r.stdout, r.stdout
    assert "router probabilities per token and layer: none" in r.stdout
    assert "missing rows: 1 (hole: 0 tokens dropped, 0 rows filled, 1 hole rows)" in r.stdout, r.stdout
    # Step 5: statistics (the hole left out and counted), and a suite: a strategy that reads probabilities is refused
    # before anything runs.
    r = run([BIN, "trace", "stats", out])
    assert r.returncode == 0, r.stderr
    assert f"holes: 1 of {((5 + 4) * 2 + 3 + 2) * LAYERS} (token, layer) rows" in r.stdout, r.stdout
    suite = tmp_path / "s.toml"
    suite.write_text('strategies = ["gpu-ondemand", "hybrimoe"]\n[suite]\nname = "walk"\n[model]\npreset = '
                     '"mixtral-8x7b"\n[hardware]\npreset = "hybrimoe-a6000"\n[workload]\nkind = "trace"\n'
                     f'trace = "{out.name}"\n')
    r = run([RUN_SUITE, suite, "--dry-run", "--results", tmp_path / "results"])
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 of 2 cases would fail" in r.stdout, r.stdout
    assert "will fail: strategy 'hybrimoe'" in r.stdout, r.stdout
    r = run([RUN_SUITE, suite, "--filter", "strategy.name=gpu-ondemand", "--results", tmp_path / "results", "-q"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 of the trace's" in r.stderr and "rows are holes" in r.stderr, r.stderr
    rows = [json.loads(line) for p in (tmp_path / "results").rglob("runs.jsonl") for line in p.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["routing_holes"] == 1, rows
