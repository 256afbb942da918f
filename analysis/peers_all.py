# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Every strategy on one page per model and testbed: the four papers' systems, the classic baselines
and the peer systems, decode and prefill, with the oracle composition beside them, on one implementation
(suites/peers.toml). A comparison page: it states no paper's claim and has no verdict.

    python3 analysis/peers_all.py --results results --out results/report"""

from __future__ import annotations

import sys

import common
import matplotlib.pyplot as plt
import peers_common as pc

FIGURE = {"paper": "All strategies", "figure": "Every strategy per model, decode and prefill, with the oracle",
          "suite": "suites/peers.toml", "page": "comparison"}


TITLE = "Every strategy per model and testbed: decode TBT and TTFT over the oracle's (batch 1, 25% GPU budget, one implementation)"
ID = "peers-all"
ORACLE = "oracle"


def run(results: str, out):
    run_dir, seeded = pc.rows(results)
    if seeded is None:
        return None
    strategies = list(dict.fromkeys(seeded["strategy"]))  # the suite's order
    table = pc.per_model_table(seeded, strategies, {
        "tbt_mean_ms": "TBT (ms)", "ttft_mean_ms": "TTFT (ms)", "decode_hit_rate_token_frac": "decode hit rate",
        "h2d_util_frac": "link busy", "cpu_util_frac": "CPU busy", "gpu_util_frac": "GPU busy"})
    for col in ("TBT (ms)", "TTFT (ms)"):
        ref = table[table["strategy"] == ORACLE].set_index("setting")[col]
        table[f"{col.split()[0]} / oracle"] = [r[col] / ref.get(r["setting"], float("nan"))
                                               for _, r in table.iterrows()]
    models = list(table["setting"].unique())
    testbeds = list(dict.fromkeys(table["testbed"]))
    names = list(dict.fromkeys(table["model"]))
    fig, axes = plt.subplots(2 * len(testbeds), len(names), squeeze=False,
                             figsize=(4.2 * len(names), (0.3 * len(strategies) + 0.8) * 2 * len(testbeds)))
    for b, tb in enumerate(testbeds):
        for j, name in enumerate(names):
            t = table[(table["testbed"] == tb) & (table["model"] == name)].set_index("strategy")
            for i, col in enumerate(("TBT / oracle", "TTFT / oracle")):
                ax = axes[2 * b + i][j]
                if t.empty:
                    ax.set_visible(False)
                    continue
                vals = t[col].reindex(strategies)
                colors = ["#a44" if s == ORACLE else "#4878a8" for s in strategies]
                ax.barh(range(len(strategies)), vals, color=colors)
                ax.set_yticks(range(len(strategies)), strategies if j == 0 else [""] * len(strategies), fontsize=6)
                ax.invert_yaxis()
                ax.axvline(1.0, color="#a44", ls="--", lw=1)
                unit = col.split()[0] + " (ms)"
                ax.set_xlabel(f"{col} (oracle: {t.loc[ORACLE, unit]:.3g} ms)" if ORACLE in t.index else col,
                              fontsize=7)
                ax.set_title(f"{name}, {tb}", fontsize=8)
    fig.suptitle(TITLE, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    best = {m: table[(table["setting"] == m) & (table["strategy"] != ORACLE)].nsmallest(1, "TBT (ms)")["strategy"]
            .iloc[0] for m in models}
    below = table[(table["strategy"] != ORACLE) & ((table["TBT / oracle"] < 1) | (table["TTFT / oracle"] < 1))]
    notes = (
        "Every strategy with the same GPU budget (25% of the routed experts; strategies that keep no cache ignore "
        "it) on HybriMoE's RTX A6000 and DALI's RTX 3090 testbeds, 4 sequences of 64 + 64 tokens at batch 1, mean "
        "of 3 workload seeds, "
        "the mechanism comparison (each strategy's decisions on one implementation: the profile's own kernel "
        "and stack costs; docs/COST_MODEL.md). The oracle row (red, and the dashed line) composes exact "
        "assignment, perfect next-layer prediction and Belady replacement: each bounds its own dimension, the "
        "composition is not an end-to-end lower bound (docs/STRATEGIES.md)"
        + (", and here " + ", ".join(
            f"{r['strategy']} on {r['setting']} ({'decode' if r['TBT / oracle'] < 1 else ''}"
            f"{' and ' if r['TBT / oracle'] < 1 and r['TTFT / oracle'] < 1 else ''}"
            f"{'prefill' if r['TTFT / oracle'] < 1 else ''})" for _, r in below.iterrows())
           + " is faster than it." if not below.empty else "; no strategy is faster than it here.")
        + " Fastest decode apart from the oracle: " + ", ".join(f"{m} {s}" for m, s in best.items())
        + ". `ktransformers` equals `all-cpu` here: its paper's placement keeps every routed expert on the CPU, "
        "and its own kernels are not part of this comparison. " + common.seeds_text(seeded) + ".")
    return common.write_result(out, ID, TITLE, table, fig,
                               {"verdict": common.NO_CLAIM, "run": str(run_dir),
                                "headline": "fastest decode (not the oracle): "
                                + ", ".join(f"{m} {s}" for m, s in best.items()),
                                "paper": "none (comparison page)"}, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
