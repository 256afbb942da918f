# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""DALI Table 9: decode speed by (w_size, u_size) against HybriMoE, batch
32, sequence length 64, on DeepSeek-V2-Lite, Qwen3-30B-A3B and Mixtral.
The paper's tokens/s come from its RTX 3090 machine; compare the ratios to
HybriMoE, not the absolute speeds (the harness's workload and cost model
differ; see the notes).

    python3 analysis/dali_table9.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "DALI", "figure": "Table 9",
          "suite": "suites/dali.toml (parts dali-table9-*)"}

from dali_common import SHORT

FIG = "dali-table9"
PARTS = ["dali-table9-deepseek", "dali-table9-qwen", "dali-table9-mixtral"]
TITLE = "DALI Table 9: decode speed by (w_size, u_size), batch 32"


def run(results: str, out):
    runs, rows = common.find_parts(results, PARTS, suites=("dali",), all_seeds=True)
    if rows is None:
        return None
    pv = common.paper_values("dali")["table9"]

    def tabulate(d):
        recs, ratios = [], {}
        for model, g in d.groupby("model"):
            m = SHORT.get(model, model)
            hyb = float(g[g["strategy"] == "hybrimoe"]["decode_tokens_per_s"].iloc[0])
            p_hyb = pv[f"{m}.hybrimoe"]
            recs.append({"model": m, "setting": "HybriMoE", "tok/s": hyb, "/ HybriMoE": 1.0,
                         "paper tok/s": p_hyb, "paper / HybriMoE": 1.0})
            dl = g[g["strategy"] == "dali"]
            for (w, u), p in zip(pv[f"{m}.settings"], pv[f"{m}.dali"]):
                r = dl[(dl["strategy.cache.params.w_size"].astype(int) == w)
                       & (dl["strategy.cache.params.u_size"].astype(int) == u)]
                v = float(r["decode_tokens_per_s"].iloc[0]) if not r.empty else float("nan")
                ratios.setdefault(m, []).append((v / hyb, p / p_hyb))
                recs.append({"model": m, "setting": f"({w}, {u})", "tok/s": v, "/ HybriMoE": v / hyb,
                             "paper tok/s": p, "paper / HybriMoE": p / p_hyb})
        return recs, ratios

    # Per model: every (w_size, u_size) setting faster than HybriMoE (direction), by the paper's ratio of the
    # two speeds for that setting (magnitude).
    checks = common.evaluate(rows, lambda d: {
        f"{m}: every setting faster than HybriMoE": common.every_claim(
            common.Claim(common.more(x, 1.0), common.within_effect(x, p)) for x, p in rs)
        for m, rs in tabulate(d)[1].items()})
    recs, _ = tabulate(common.seed_mean(rows))
    table = pd.DataFrame(recs)
    notes = ("Absolute speeds differ from the paper's by more than an order of magnitude: the paper's tokens/s "
             "are per sequence, the harness's decode_tokens_per_s counts every sequence of the batch (analysis/"
             "METRICS.md); compare the '/ HybriMoE' columns. Numbers: " + common.seeds_text(rows) + ". Checks ("
             + common.margin_text() + "): "
             + common.checks_text(checks) + f".\n\nPaper: {pv['source']}.")
    return common.write_result(out, FIG, TITLE, table, None,
                               {"verdict": common.figure_verdict(checks), "run": "; ".join(runs), "paper": "DALI Table 9",
                                "headline": "best DALI setting / HybriMoE: " + ", ".join(
                                    f"{m} {g['/ HybriMoE'].iloc[1:].max():.2f}x (paper {g['paper / HybriMoE'].iloc[1:].max():.2f}x)"
                                    for m, g in table.groupby("model"))},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
