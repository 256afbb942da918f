# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""DALI Fig. 14: assignment alone. Speedup of HybriMoE's scheduling and of
DALI's greedy assignment over Naive (every routed expert on the CPU), with
the paper's averages.

    python3 analysis/dali_fig14.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common
import matplotlib.pyplot as plt
from dali_common import SHORT

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "DALI", "figure": "Fig. 14",
          "suite": "suites/dali.toml (part dali-fig14)"}


FIG = "dali-fig14"
PART = "dali-fig14"
TITLE = "DALI Fig. 14: assignment only, speedup over Naive (decode)"


def run(results: str, out):
    run_dir, rows = common.find_part(results, PART, suites=("dali",), all_seeds=True)
    if rows is None:
        return None
    pv = common.paper_values("dali")["fig14"]

    def ratios(d):
        recs = []
        for (m, b), g in d.groupby(["model", "workload.batch_size"]):
            v = {s: float(g[g["strategy"] == s]["decode_tokens_per_s"].iloc[0]) for s in g["strategy"]}
            recs.append({"model": SHORT.get(m, m), "batch": int(b), "naive tok/s": v["naive"],
                         "hybrimoe / naive": v["hybrimoe-assign"] / v["naive"],
                         "greedy / naive": v["greedy"] / v["naive"],
                         "greedy / hybrimoe": v["greedy"] / v["hybrimoe-assign"]})
        return pd.DataFrame(recs)

    def measure(d):
        # Per model (the figure shows each; its mean over the batch sizes): the direction; the paper's averages
        # over models and batches (3.58x, 4.42x, 1.23x): the magnitudes.
        r = ratios(d)
        cols = ["hybrimoe / naive", "greedy / naive", "greedy / hybrimoe"]
        mn, pm = r[cols].mean(), r.groupby("model")[cols].mean()
        return {"HybriMoE's assignment beats Naive (every model; magnitude: the average)": common.Claim(
                    common.every(common.more(x, 1.0) for x in pm["hybrimoe / naive"]),
                    common.within_effect(mn["hybrimoe / naive"], pv["hybrimoe"])),
                "greedy beats Naive (every model; magnitude: the average)": common.Claim(
                    common.every(common.more(x, 1.0) for x in pm["greedy / naive"]),
                    common.within_effect(mn["greedy / naive"], pv["greedy"])),
                "greedy beats HybriMoE's assignment (every model; magnitude: the average)": common.Claim(
                    common.every(common.more(x, 1.0) for x in pm["greedy / hybrimoe"]),
                    common.within_effect(mn["greedy / hybrimoe"], pv["greedy_over_hybrimoe"]))}

    checks = common.evaluate(rows, measure)
    table = ratios(common.seed_mean(rows))
    mean = table[["hybrimoe / naive", "greedy / naive", "greedy / hybrimoe"]].mean()
    paper = {"hybrimoe / naive": pv["hybrimoe"], "greedy / naive": pv["greedy"],
             "greedy / hybrimoe": pv["greedy_over_hybrimoe"]}
    table = pd.concat([table, pd.DataFrame([{"model": "mean", **mean.to_dict()},
                                            {"model": "paper", **paper}])], ignore_index=True)
    notes = ("No prefetching, no cache updates; a static 25% of experts resident (assumption, Fig. 19's ratio). "
             "Numbers: " + common.seeds_text(rows) + ". Checks (" + common.margin_text() + "): "
             + common.checks_text(checks)
             + f".\n\nPaper: {pv['source']}.")
    t = table[~table["model"].isin(["mean", "paper"])]
    fig, ax = plt.subplots(figsize=(7, 3.3))
    labels = [f"{r['model']} b{int(r['batch'])}" for _, r in t.iterrows()]
    x = range(len(t))
    ax.bar([i - 0.2 for i in x], t["hybrimoe / naive"], 0.4, label="HybriMoE assignment")
    ax.bar([i + 0.2 for i in x], t["greedy / naive"], 0.4, label="DALI greedy")
    ax.axhline(pv["greedy"], color="#444", ls=":", label=f"paper greedy mean {pv['greedy']}x")
    ax.set_xticks(list(x), labels, fontsize=7)
    ax.set_ylabel("speedup over Naive")
    ax.legend(fontsize=7)
    ax.set_title(TITLE, fontsize=9)
    return common.write_result(out, FIG, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": str(run_dir), "paper": "DALI Fig. 14",
                                "headline": ", ".join(f"{k} {mean[k]:.2f}x (paper {paper[k]:.2f}x)" for k in paper)},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
