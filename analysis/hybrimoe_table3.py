# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""HybriMoE Table III: speedup breakdown on Qwen2 at 25% cache, prefill and
decode, harness beside the paper.

    python3 analysis/hybrimoe_table3.py --results results --out results/report
reads the latest run holding part 'hybrimoe-table3' (suites/ablation.toml
or suites/ablation/hybrimoe-table3.toml)."""

from __future__ import annotations

import sys

import pandas as pd

import common
import matplotlib.pyplot as plt

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "HybriMoE", "figure": "Table III",
          "suite": "suites/ablation.toml (part hybrimoe-table3)"}


PART = "hybrimoe-table3"
TITLE = "HybriMoE Table III: technique breakdown (Qwen2-57B-A14B, 25% cache)"
# harness strategy name -> the paper's row
ROWS = {"ktransformers-frequency": "baseline", "+scheduling": "+scheduling", "+prefetching": "+prefetching",
        "+caching": "+caching", "all": "all"}


def run(results: str, out):
    run_dir, seeded = common.find_part(results, PART, all_seeds=True)
    if seeded is None:
        return None
    pv = common.paper_values("hybrimoe")["table3"]

    def latencies(d):
        lat = {}
        for strat, row in ROWS.items():
            r = common.strategy_rows(d, run_dir, PART, strat)
            lat[row] = {"prefill": float(r["ttft_mean_ms"].iloc[0]) / 1e3,
                        "decode": float(r["tbt_mean_ms"].iloc[0]) / 1e3}
        return lat

    def measure(d):
        # Per phase and technique the paper's table gives a row for: faster than the baseline (direction) by the
        # paper's speedup (magnitude); and the paper's fastest row the harness's fastest (direction only). The
        # prefill column has no "+caching" row, so no prefill "+caching" claim is judged (one once was).
        lat, out = latencies(d), {}
        for phase in ("prefill", "decode"):
            rows_p = [r for r in ROWS.values() if pv[phase].get(r) is not None]
            paper_best = min(rows_p, key=lambda r: pv[phase][r])
            for r in rows_p:
                if r == "baseline":
                    continue
                paper = pv[phase]["baseline"] / pv[phase][r]
                out[f"{phase}: '{r}' faster than the baseline"] = common.faster(lat["baseline"][phase],
                                                                                lat[r][phase], paper)
            out[f"{phase}: '{paper_best}' (the paper's fastest) the fastest"] = common.every(
                common.more(lat[r][phase], lat[paper_best][phase]) for r in rows_p if r != paper_best)
        return out

    checks = common.evaluate(seeded, measure)
    lat = latencies(common.seed_mean(seeded))
    recs = []
    for phase in ("prefill", "decode"):
        base_h = lat["baseline"][phase]
        base_p = pv[phase]["baseline"]
        for row in ROWS.values():
            paper = pv[phase].get(row)
            h = lat[row][phase]
            sp_h = base_h / h
            sp_p = base_p / paper if paper else None
            recs.append({"phase": phase, "technique": row, "harness latency (s)": h,
                         "paper latency (s)": paper if paper is not None else float("nan"),
                         "harness speedup (x)": sp_h, "paper speedup (x)": sp_p if sp_p else float("nan"),
                         "speedup ratio harness/paper": common.ratio(sp_h, sp_p) or float("nan")})
    table = pd.DataFrame(recs)
    notes = ("Latency = mean TTFT (prefill) and mean TBT (decode) of the harness run; speedup over the baseline "
             "(kTransformers with fixed GPU experts); " + common.seeds_text(seeded) + ". Checks (" + common.margin_text()
             + "): " + common.checks_text(checks)
             + f".\n\nPaper: {pv['source']}; {pv['setting']}.")
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, phase in zip(axes, ("prefill", "decode")):
        t = table[table["phase"] == phase]
        x = range(len(t))
        ax.bar([i - 0.2 for i in x], t["harness speedup (x)"], 0.4, label="harness (simulated)", color="#4878a8")
        ax.bar([i + 0.2 for i in x], t["paper speedup (x)"].fillna(0), 0.4, label="paper", color="#d9a441")
        ax.set_xticks(list(x), t["technique"], rotation=20)
        ax.set_title(f"{phase}: speedup over baseline")
        ax.axhline(1.0, color="grey", lw=0.5)
    axes[0].legend(fontsize=8)
    fig.suptitle(TITLE, fontsize=9)
    allrow = table[table["technique"] == "all"].set_index("phase")
    headline = "; ".join(f"{ph} 'all': {allrow.loc[ph, 'harness speedup (x)']:.2f}x vs paper "
                         f"{allrow.loc[ph, 'paper speedup (x)']:.2f}x" for ph in ("prefill", "decode"))
    return common.write_result(out, PART, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": str(run_dir), "headline": headline,
                                "paper": "HybriMoE Table III"}, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
