# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""DALI Fig. 7 and Fig. 17: the workload-aware window cache against
HybriMoE's score-based update (MRS) and LRU in DALI's system, batch 4,
cache ratios 12.5-75%: (17a) decoding speed, (17b) decode hit rate; Fig. 7
(LRU vs HybriMoE's replacement by cached experts per layer on Mixtral and
DeepSeek) from the same runs.

    python3 analysis/dali_fig7_17.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common
import matplotlib.pyplot as plt
from dali_common import SHORT

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "DALI", "figure": "Fig. 7 and Fig. 17",
          "suite": "suites/dali.toml (parts dali-fig17-*)"}


FIG = "dali-fig7-17"
PARTS = ["dali-fig17-deepseek", "dali-fig17-qwen", "dali-fig17-mixtral"]
TITLE = "DALI Fig. 7 and Fig. 17: workload-aware cache vs MRS vs LRU (batch 4)"
POLICIES = ["workload-aware", "hybrimoe-mrs", "lru"]
# The window cache under the earlier, conditional reading of Algorithm 2's swap (reported, not checked).
CONDITIONAL = "workload-aware-conditional"
# MRS and LRU with a token's experts judged one at a time (reported, not checked: the checks
# read the gate rule, docs/STRATEGIES.md, "How each system's code counts a hit").
TURN = ["hybrimoe-mrs-one-at-a-time", "lru-one-at-a-time"]


def run(results: str, out):
    runs, rows = common.find_parts(results, PARTS, suites=("dali",), all_seeds=True)
    if rows is None:
        return None
    pv = common.paper_values("dali")["fig17"]

    def tabulate(d):
        d = d.copy()
        d["model"] = d["model"].map(lambda m: SHORT.get(m, m))
        d["cache %"] = (100 * d["strategy.residency.cache_ratio"].astype(float)).round(1)
        hit = d.pivot_table(index=["model", "cache %"], columns="strategy", values="decode_hit_rate_token_frac")
        spd = d.pivot_table(index=["model", "cache %"], columns="strategy", values="decode_tokens_per_s")
        t = pd.concat([hit.add_prefix("hit "), spd.add_prefix("tok/s ")], axis=1).reset_index()
        t.columns.name = None
        t["speedup wa / mrs"] = t["tok/s workload-aware"] / t["tok/s hybrimoe-mrs"]
        if f"tok/s {CONDITIONAL}" in t:
            t["speedup wa-conditional / mrs"] = t[f"tok/s {CONDITIONAL}"] / t["tok/s hybrimoe-mrs"]
        return t

    def measure(d):
        t = tabulate(d)
        mix = t[t["model"] == "mixtral"]
        per_model = t.groupby("model")["speedup wa / mrs"].mean()
        return {"17a: workload-aware faster than the MRS update (every model; magnitude: the average)": common.Claim(
                    common.every(common.more(x, 1.0) for x in per_model),
                    common.within_effect(t["speedup wa / mrs"].mean(), pv["speedup_over_hybrimoe_update"])),
                "17b: workload-aware hit rate above LRU and MRS at every ratio (Mixtral)": common.every(
                    common.more_abs(wa, max(lru, mrs)) for wa, lru, mrs in
                    zip(mix["hit workload-aware"], mix["hit lru"], mix["hit hybrimoe-mrs"]))}

    checks = common.evaluate(rows, measure)
    table = tabulate(common.seed_mean(rows))
    mean_speedup = float(table["speedup wa / mrs"].mean())
    conditional = ""
    if "speedup wa-conditional / mrs" in table:
        conditional = (" With the conditional swap (a swap only for a better outsider, the earlier reading; "
                       f"not checked): {float(table['speedup wa-conditional / mrs'].mean()):.2f}x over MRS, mean "
                       f"decode hit rate {float(table[f'hit {CONDITIONAL}'].mean()):.3f} against "
                       f"{float(table['hit workload-aware'].mean()):.3f} with Algorithm 2's swap.")
    turn = ""
    if all(f"hit {p}" in table for p in TURN):
        by_ratio = table.groupby("cache %")[[f"hit {p}" for p in ["hybrimoe-mrs", "lru"] + TURN]].mean()
        turn = (" With a token's experts judged one at a time (residency.admission = \"one-at-a-time\", pinning off; "
                "not checked), mean decode hit rate over the models, MRS / LRU at the gate -> one at a time: "
                + ", ".join(f"{c:g}%: {r['hit hybrimoe-mrs']:.3f} / {r['hit lru']:.3f} -> "
                            f"{r['hit hybrimoe-mrs-one-at-a-time']:.3f} / {r['hit lru-one-at-a-time']:.3f}"
                            for c, r in by_ratio.iterrows())
                + "; workload-aware over MRS one at a time "
                f"{float((table['tok/s workload-aware'] / table['tok/s hybrimoe-mrs-one-at-a-time']).mean()):.2f}x.")
    notes = ("Hit rate: decode, token-weighted (analysis/METRICS.md). 'experts per layer' of Fig. 7 = cache "
             "ratio x routed experts (Mixtral 8, DeepSeek 64, Qwen 128). MRS and LRU admit on-demand loads; the "
             "window cache changes only by its swaps and by prefetches. Mean speedup of the workload-aware cache "
             f"over MRS: {mean_speedup:.2f}x (paper {pv['speedup_over_hybrimoe_update']:.2f}x)." + conditional + turn
             + " Fig. 7 (paper: "
             "no numbers; both LRU and MRS 'poor'): LRU and MRS columns. Numbers: " + common.seeds_text(rows)
             + ". Checks (" + common.margin_text() + "): "
             + common.checks_text(checks)
             + f".\n\nPaper: {pv['source']}; {common.paper_values('dali')['fig7']['source']}.")
    models = [m for m in ["deepseek", "qwen", "mixtral"] if (table["model"] == m).any()]
    fig, axes = plt.subplots(2, len(models), figsize=(4 * len(models), 6), squeeze=False)
    for j, m in enumerate(models):
        t = table[table["model"] == m]
        for p in POLICIES + ([CONDITIONAL] if f"tok/s {CONDITIONAL}" in t else []):
            axes[0][j].plot(t["cache %"], t[f"tok/s {p}"], "o-", label=p)
            axes[1][j].plot(t["cache %"], t[f"hit {p}"], "o-", label=p)
        axes[0][j].set_title(m)
        axes[1][j].set_xlabel("cache %")
    axes[0][0].set_ylabel("decode tokens/s")
    axes[1][0].set_ylabel("decode hit rate")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(TITLE, fontsize=9)
    return common.write_result(out, FIG, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": "; ".join(runs),
                                "paper": "DALI Fig. 7, Fig. 17",
                                "headline": f"workload-aware / MRS decode speed {mean_speedup:.2f}x "
                                            f"(paper {pv['speedup_over_hybrimoe_update']:.2f}x)"},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
