# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""analysis/tiny_routing.py on hand-made runs: rank correlations between
recorded and synthetic routing, and the verdict's thresholds."""

import json
import pathlib
import sys
import tiny_routing

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))



def write_run(root, suite, key, variants):
    d = root / suite / "20260101T000000Z-00000000"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"status": "complete"}))
    rows = []
    for v, hits in variants.items():
        for strategy, h in hits.items():
            rows.append({"status": "ok", "model": "tiny-mixtral", "strategy": strategy, "axes": f"{key}={v}",
                         "decode_hit_rate_token_frac": h, "tbt_mean_ms": 1.0 - h})
    (d / "runs.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def test_agreeing_rankings_and_a_disagreeing_one(tmp_path):
    base = {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4, "e": 0.5}
    write_run(tmp_path, "tiny-mixtral-routing-trace", "workload.trace",
              {"../results/tiny/x.trace.safetensors": base, "../results/tiny/x.trace2.safetensors": base})
    write_run(tmp_path, "tiny-mixtral-routing", "workload.seed",
              {"1": {**base, "e": 0.45}, "2": base, "3": {**base, "a": 0.15}})
    s = tiny_routing.run(str(tmp_path), tmp_path / "out")
    md = (tmp_path / "out" / "tiny_routing.md").read_text()
    assert "decode hit rate: recorded vs synthetic rho 1.00 (6 pairs)" in md
    # Every pair is 0.1 apart on both traces (beyond 5%): 10 separated, all ordered alike.
    assert "of the 10 strategy pairs the recorded routing separates" in md and "orders 10 alike" in md
    assert ": agree" in s["headline"]
    # A synthetic side that reverses the order: disagree.
    rev = {k: 1 - v for k, v in base.items()}
    (tmp_path / "tiny-mixtral-routing").rename(tmp_path / "old")
    write_run(tmp_path, "tiny-mixtral-routing", "workload.seed", {"1": rev, "2": rev})
    s = tiny_routing.run(str(tmp_path), tmp_path / "out")
    assert "rho -1.00 (4 pairs)" in s["headline"] and ": disagree" in s["headline"]


def test_only_pairs_every_trace_orders_beyond_the_noise_count():
    import pandas as pd
    ref = {"t1": pd.Series({"a": 0.50, "b": 0.51, "c": 0.80}), "t2": pd.Series({"a": 0.52, "b": 0.50, "c": 0.90})}
    # a/b: 2-4% apart and flipping: not separated; c is above both on both traces.
    other = {"1": pd.Series({"a": 0.4, "b": 0.3, "c": 0.35}), "2": pd.Series({"a": 0.4, "b": 0.3, "c": 0.35})}
    assert tiny_routing.separated_agreement(ref, other) == (2, 1)  # c > b alike, c > a not


def test_axis_reads_strings_and_dicts():
    assert tiny_routing.axis("workload.kind=trace,workload.seed=2", "workload.seed") == "2"
    assert tiny_routing.axis({"workload.seed": 3}, "workload.seed") == "3"
    assert tiny_routing.axis("", "workload.seed") == ""
    assert tiny_routing.run("/nonexistent", pathlib.Path("/tmp/none")) is None


def test_tiny_accuracy_checks_defer_against_skip_on_every_stretch(tmp_path):
    import tiny_accuracy
    (tmp_path / "tiny").mkdir()
    for off, scale in ((0, 1.0), (60000, 1.01), (120000, 0.99)):
        # Written before the scope column existed: read as "all".
        lines = ["model,offset,mode,experts,top_k,tokens,nll_nats,perplexity,agreement,kl_nats"]
        for mode, n, ppl in (("baseline", 0, 4.0), ("defer", 1, 4.2), ("skip", 1, 4.6)):
            lines.append(f"tiny-mixtral,{off},{mode},{n},2,100,1.0,{ppl * scale},0.9,0.01")
        (tmp_path / "tiny" / f"mixtral.accuracy-{off}.csv").write_text("\n".join(lines) + "\n")
        lines = ["model,offset,scope,prompt_len,mode,experts,top_k,tokens,nll_nats,perplexity,agreement,kl_nats"]
        for mode, n, ppl in (("baseline", 0, 4.0), ("defer", 1, 4.01), ("skip", 1, 4.02)):
            lines.append(f"tiny-deepseek,{off},decode,32,{mode},{n},4,100,1.0,{ppl * scale},0.9,0.01")
        (tmp_path / "tiny" / f"deepseek.accuracy-{off}.csv").write_text("\n".join(lines) + "\n")
        # Next words: deferral keeps 2 points more right than skipping on two
        # stretches and 0.5 on the third: inconclusive by the 1-point margin.
        skip_acc = 0.13 if off != 120000 else 0.145
        lines = ["model,offset,context,items_kind,mode,experts,top_k,items,accuracy,agreement"]
        for mode, acc, agr in (("baseline", 0.15, 1.0), ("defer", 0.15, 0.97), ("skip", skip_acc, 0.91)):
            lines.append(f"tiny-mixtral,{off},96,every word,{mode},{1 if mode != 'baseline' else 0},2,400,{acc},{agr}")
        (tmp_path / "tiny" / f"mixtral.cloze-{off}.csv").write_text("\n".join(lines) + "\n")
    s = tiny_accuracy.run(str(tmp_path), tmp_path / "out")
    md = (tmp_path / "out" / "tiny_accuracy.md").read_text()
    assert "tiny-mixtral (all scope): defer 1 costs less perplexity than skip 1: direction only" in md
    assert "3 seed(s)" in md
    # 0.25% apart: below the 2% margin.
    assert "tiny-deepseek (decode scope): defer 1 costs less perplexity than skip 1: inconclusive" in md
    assert "tiny-mixtral: defer 1 changes fewer generated words than skip 1: direction only" in md
    assert "tiny-mixtral: defer 1 keeps more next words right than skip 1: inconclusive" in md
    assert s["verdict"] == "inconclusive"
    assert "13.3% with skipping" in md  # the paper's value, labelled
    table = (tmp_path / "out" / "tiny_accuracy.csv").read_text()
    assert "next-word accuracy" in table and "decode" in table
