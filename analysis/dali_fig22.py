# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""DALI Fig. 22: decoding speed over decoding lengths 128-1024 (batch 16,
prompt 32) on Mixtral and DeepSeek-V2-Lite, with the paper's average
speedups (stated for Mixtral) beside the harness's.

    python3 analysis/dali_fig22.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common
import matplotlib.pyplot as plt
from dali_common import BASELINES, SHORT

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "DALI", "figure": "Fig. 22",
          "suite": "suites/dali.toml (parts dali-fig22-*)"}


FIG = "dali-fig22"
PARTS = ["dali-fig22-mixtral", "dali-fig22-deepseek"]
TITLE = "DALI Fig. 22: decode speed vs decoding length (batch 16, prompt 32)"


def run(results: str, out):
    runs, rows = common.find_parts(results, PARTS, suites=("dali",), all_seeds=True)
    if rows is None:
        return None
    pv = common.paper_values("dali")["fig22"]

    def mean_speedups(d):
        sp = common.speedups(d, ["model", "workload.decode_len"], "decode_tokens_per_s", "dali", BASELINES)
        sp["model"] = sp["model"].map(lambda m: SHORT.get(m, m))
        return sp, {(m, b): float(g[f"dali / {b}"].mean()) for m, g in sp.groupby("model") for b in BASELINES}

    def measure(d):
        # Per model (the figure shows each): DALI faster than each baseline (its mean over the decoding
        # lengths), by the paper's average speedup (the text's numbers; the text says Mixtral, the caption
        # DeepSeek, so both models are held to them).
        _, mn = mean_speedups(d)
        return {f"{m}: DALI faster than every baseline": common.every_claim(
                    common.Claim(common.more(mn[(m, b)], 1.0), common.within_effect(mn[(m, b)], pv[b])) for b in BASELINES)
                for m in sorted({k[0] for k in mn})}

    checks = common.evaluate(rows, measure)
    df = common.seed_mean(rows)
    sp, mean = mean_speedups(df)
    summary = pd.DataFrame([{"model": m, "DALI over": b, "harness mean speedup": h,
                             "paper mean speedup": pv.get(b) if m == "mixtral" else None,
                             "harness / paper": common.ratio(h, pv.get(b) if m == "mixtral" else None)}
                            for (m, b), h in mean.items()])
    table = pd.concat([summary, sp.rename(columns={"workload.decode_len": "decode length"})], ignore_index=True)
    notes = ("Paper averages are stated for Mixtral (text); the caption names DeepSeek, whose run has no paper "
             "numbers. Numbers: " + common.seeds_text(rows) + ". Checks (" + common.margin_text() + "): "
             + common.checks_text(checks)
             + f".\n\nPaper: {pv['source']}.")
    models = [m for m in SHORT if (df["model"] == m).any()]
    fig, axes = plt.subplots(1, len(models), figsize=(4 * len(models), 3.3), squeeze=False)
    for ax, m in zip(axes[0], models):
        t = df[df["model"] == m]
        for s in BASELINES + ["dali"]:
            r = t[t["strategy"] == s].sort_values("workload.decode_len")
            ax.plot(r["workload.decode_len"], r["decode_tokens_per_s"], "o-", label=s)
        ax.set_xscale("log", base=2)
        ax.set_title(SHORT[m])
        ax.set_xlabel("decoding length")
    axes[0][0].set_ylabel("decode tokens/s")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(TITLE, fontsize=9)
    return common.write_result(out, FIG, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": "; ".join(runs),
                                "paper": "DALI Fig. 22",
                                "headline": "Mixtral mean decode speedup: " + ", ".join(
                                    f"{b} {mean.get(('mixtral', b), float('nan')):.2f}x (paper {pv[b]:.2f}x)"
                                    for b in BASELINES)},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
