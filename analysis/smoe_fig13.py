# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""SMoE Fig. 13: decode time breakdown per token (predict, cache management,
GPU compute, wait for cache, shared experts, CPU not overlapped) of
HybriMoE and SMoE with two prefetched experts, DeepSeek-V3.

    python3 analysis/smoe_fig13.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common
import matplotlib.pyplot as plt

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "SMoE", "figure": "Fig. 13",
          "suite": "suites/smoe-fig13.toml"}


PART = "smoe-fig13"
TITLE = "SMoE Fig. 13: decode time breakdown per token (DeepSeek-V3, 2 prefetched experts)"
PARTS = [("predict", "bd_predict_ms_per_token"), ("GPU compute", "bd_gpu_compute_ms_per_token"),
         ("wait cache", "bd_wait_cache_ms_per_token"), ("shared experts", "bd_shared_expert_ms_per_token"),
         ("CPU not overlapped", "bd_cpu_other_ms_per_token")]


def run(results: str, out):
    run_dir, seeded = common.find_part(results, PART, suites=(), all_seeds=True)
    if seeded is None:
        return None
    pv = common.paper_values("smoe")["fig13"]
    layers = int(seeded["model.num_layers"].iloc[0]) - int(seeded["model.first_dense_layers"].iloc[0])

    def tabulate(df):
        recs = []
        for _, r in df.iterrows():
            rec = {"system": r["strategy"]}
            for label, col in PARTS:
                rec[f"{label} ms/token"] = float(r[col])
            # Host decision time of the cache policy and prefetcher, per token (SMoE's cache_management_time).
            rec["cache management ms/token (host)"] = (float(r["decision_cache_ns"] or 0) +
                                                       float(r["decision_prefetcher_ns"] or 0)) * layers / 1e6
            rec["wait cache ms/token/layer"] = float(r["bd_wait_cache_ms_per_token"]) / layers
            rec["paper wait ms/token/layer"] = pv.get(f"wait_cache_ms_per_token_per_layer.{r['strategy']}", float("nan"))
            rec["TBT ms"] = float(r["tbt_mean_ms"])
            recs.append(rec)
        return pd.DataFrame(recs)

    def measure(df):
        w = tabulate(df).set_index("system")["wait cache ms/token/layer"]
        # Relative to HybriMoE's wait: SMoE's may be 0.
        return {"SMoE waits for the cache less than HybriMoE": common.Effect(
            (w["hybrimoe"] - w["smoe"]) / w["hybrimoe"] if w["hybrimoe"] else float("nan"), common.REL_TOL, unit="%")}

    checks = common.evaluate(seeded, measure)
    table = tabulate(common.seed_mean(seeded))
    t = table.set_index("system")
    notes = ("Per generated token, summed over the MoE layers; 'wait cache' per layer is the same divided by the "
             f"{layers} MoE layers, as the paper states it. The cache-management column is measured host time of "
             "the cache policy and prefetcher decisions (the simulated system charges no time for it). Paper: "
             "HybriMoE waits about 1 ms per token per layer, SMoE nearly 0; SMoE's cache management about 0.01 ms. "
             "Numbers: " + common.seeds_text(seeded) + ". Check (" + common.margin_text() + "; the effect is HybriMoE's "
             "wait minus SMoE's over HybriMoE's): " + common.checks_text(checks) + f".\n\nPaper: {pv['source']}.")
    fig, ax = plt.subplots(figsize=(7, 3))
    left = [0.0] * len(table)
    for label, _ in PARTS:
        vals = table[f"{label} ms/token"].tolist()
        ax.barh(table["system"], vals, left=left, label=label)
        left = [a + b for a, b in zip(left, vals)]
    ax.set_xlabel("ms per generated token")
    ax.legend(fontsize=7, ncol=3)
    ax.set_title(TITLE + " (harness)", fontsize=9)
    return common.write_result(out, PART, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": str(run_dir), "paper": "SMoE Fig. 13",
                                "headline": "wait cache ms/token/layer: " + ", ".join(
                                    f"{s} {t.loc[s, 'wait cache ms/token/layer']:.3f} (paper "
                                    f"{t.loc[s, 'paper wait ms/token/layer']:.2f})" for s in t.index)}, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
