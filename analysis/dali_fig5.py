# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""DALI Fig. 5: share of inference time the PCIe link spends on expert
weights, HybriMoE against DALI, across batch sizes (prefill and decode
length 32). The paper gives no numbers; its caption states DALI's share is
well below HybriMoE's on average.

    python3 analysis/dali_fig5.py --results results --out results/report"""

from __future__ import annotations

import sys

import common
import matplotlib.pyplot as plt
from dali_common import SHORT

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "DALI", "figure": "Fig. 5",
          "suite": "suites/dali.toml (part dali-fig4-5)"}


FIG = "dali-fig5"
PART = "dali-fig4-5"
TITLE = "DALI Fig. 5: PCIe transfer share of run time, HybriMoE vs DALI"


def run(results: str, out):
    run_dir, rows = common.find_part(results, PART, suites=("dali",), all_seeds=True)
    if rows is None:
        return None

    def shares(d):
        d = d[d["strategy"].isin(["hybrimoe", "dali"])]
        piv = d.pivot_table(index=["model", "workload.batch_size"], columns="strategy", values="h2d_util_frac")
        t = piv.reset_index().rename(columns={"workload.batch_size": "batch", "hybrimoe": "HybriMoE share",
                                              "dali": "DALI share"})
        t["model"] = t["model"].map(lambda m: SHORT.get(m, m))
        return t, t.groupby("model")[["HybriMoE share", "DALI share"]].mean()

    checks = common.evaluate(rows, lambda d: {
        f"{m}: DALI's average share below HybriMoE's": common.more_abs(r["HybriMoE share"], r["DALI share"])
        for m, r in shares(d)[1].iterrows()})
    table, avg = shares(common.seed_mean(rows))
    table.columns.name = None
    notes = ("Share: time the host-to-device link is busy with expert weights / simulated run time "
             "(h2d_util_frac). Average over batch sizes: " + ", ".join(
                 f"{m} HybriMoE {r['HybriMoE share']:.3f}, DALI {r['DALI share']:.3f}" for m, r in avg.iterrows())
             + " (" + common.seeds_text(rows) + "). Checks (" + common.margin_text() + "): "
             + common.checks_text(checks)
             + ".\n\nPaper: DALI section 3.1, Fig. 5 caption (no numbers given).")
    fig, ax = plt.subplots(figsize=(6, 3.3))
    for m, g in table.groupby("model"):
        ax.plot(g["batch"], g["HybriMoE share"], "o--", label=f"{m} HybriMoE")
        ax.plot(g["batch"], g["DALI share"], "s-", label=f"{m} DALI")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("PCIe busy / run time")
    ax.legend(fontsize=7)
    ax.set_title(TITLE, fontsize=9)
    return common.write_result(out, FIG, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": str(run_dir), "paper": "DALI Fig. 5",
                                "headline": "mean PCIe share HybriMoE -> DALI: " + ", ".join(
                                    f"{m} {r['HybriMoE share']:.2f} -> {r['DALI share']:.2f}" for m, r in avg.iterrows())},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
