# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""DALI Fig. 16(a): decode speedup of prefetching methods over Naive
(greedy assignment only) on Mixtral, two experts prefetched per layer:
random, HybriMoE's gate reuse, DALI's residual-based prediction. The paper
gives no numbers; its text states the order.

    python3 analysis/dali_fig16.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common
import matplotlib.pyplot as plt

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "DALI", "figure": "Fig. 16(a)",
          "suite": "suites/dali.toml (part dali-fig16)"}


FIG = "dali-fig16"
PART = "dali-fig16"
TITLE = "DALI Fig. 16(a): prefetching methods on Mixtral (2 experts per layer)"
ORDER = ["naive", "random", "hybrimoe", "residual"]


def run(results: str, out):
    run_dir, rows = common.find_part(results, PART, suites=("dali",), all_seeds=True)
    if rows is None:
        return None
    pv = common.paper_values("dali")["fig16"]

    def speedups(d):
        v = d.set_index("strategy")
        naive = float(v.loc["naive", "decode_tokens_per_s"])
        return {s: float(v.loc[s, "decode_tokens_per_s"]) / naive for s in ORDER}

    def measure(d):
        sp = speedups(d)
        return {"random slower than naive": common.more(1.0, sp["random"]),
                "HybriMoE's prefetch above random": common.more(sp["hybrimoe"], sp["random"]),
                "residual-based the fastest": common.every(common.more(sp["residual"], sp[o])
                                                           for o in ("random", "hybrimoe"))}

    checks = common.evaluate(rows, measure)
    v = common.seed_mean(rows).set_index("strategy")
    naive = float(v.loc["naive", "decode_tokens_per_s"])
    recs = [{"method": s, "decode tok/s": float(v.loc[s, "decode_tokens_per_s"]),
             "speedup over naive": float(v.loc[s, "decode_tokens_per_s"]) / naive,
             "decode hit rate": float(v.loc[s, "decode_hit_rate_token_frac"]),
             "prefetch precision": float(v.loc[s, "prefetch_precision_frac"]) if s != "naive" else float("nan")}
            for s in ORDER]
    table = pd.DataFrame(recs)
    sp = dict(zip(table["method"], table["speedup over naive"]))
    notes = ("Prefetched experts go to DALI's use-once prefetch buffer beside the placed cache (25% of experts; "
             "docs/STRATEGIES.md). Prefetch precision: prefetched "
             "experts used before eviction / prefetched (analysis/METRICS.md). Numbers: " + common.seeds_text(rows)
             + ". Checks (" + common.margin_text() + "): "
             + common.checks_text(checks)
             + f".\n\nPaper: {pv['source']}. Stated trend: {pv['trend']}.")
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.bar(table["method"], table["speedup over naive"], color=["#999", "#a44", "#4878a8", "#2a2"])
    ax.axhline(1.0, color="#444", lw=0.8)
    ax.set_ylabel("decode speedup over naive")
    ax.set_title(TITLE, fontsize=9)
    return common.write_result(out, FIG, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": str(run_dir), "paper": "DALI Fig. 16(a)",
                                "headline": "speedup over naive: " + ", ".join(f"{s} {sp[s]:.2f}x" for s in ORDER[1:])
                                            + " (paper: random < 1 < HybriMoE < residual)"},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
