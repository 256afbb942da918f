# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Serving with the GPU memory shared by the KV cache and the expert cache (docs/SERVING.md, "GPU
memory"): goodput and p99 TPOT against the running requests allowed (batch_size), whose KV cache leaves the
expert cache fewer slots (residency.cache_fill), per strategy and request rate (suites/serving-memory.toml).
No paper shows this: the page states no claim; a best split is named only where it holds in every seed.

    python3 analysis/serving_memory.py --results results --out results/report"""

from __future__ import annotations

import sys

import common
import matplotlib.pyplot as plt
import serving

FIGURE = {"paper": "Serving", "figure": "Goodput against the GPU memory split between KV cache and experts",
          "suite": "suites/serving-memory.toml", "page": "comparison"}


PART = "serving-memory"
ID = "serving-memory"
TITLE = "Serving: goodput and p99 TPOT against the running requests allowed (KV cache vs expert slots)"
COLUMNS = {"gpu_cache_slots": "expert slots", "serve_goodput_rps": "goodput (req/s)",
           "serve_tpot_p99_ms": "p99 TPOT (ms)", "serve_ttft_p99_ms": "p99 TTFT (ms)",
           "gpu_mem_required_gib": "GPU memory (GiB)"}


def best_split(rows, strategy: str) -> str:
    """The batch_size whose goodput is above every other batch_size's beyond the tolerance in every seed."""
    d = rows[rows["strategy"] == strategy]
    g = d.pivot_table(index="workload.seed", columns="workload.batch_size", values="serve_goodput_rps")
    for b in g.columns:
        if all(serving.above(g.loc[s, b], g.loc[s, o]) for o in g.columns if o != b for s in g.index):
            return str(int(b))
    return "none in every seed"


def run(results: str, out):
    run_dir, rows = common.find_part(results, PART, suites=(), all_seeds=True)
    if rows is None:
        return None
    rows = rows.copy()
    rows["workload.rate"] = rows["workload.rate"].astype(float)
    strategies = list(dict.fromkeys(rows["strategy"]))
    rates = sorted(rows["workload.rate"].unique())
    layers = int(rows["model.num_layers"].iloc[0] - rows["model.first_dense_layers"].iloc[0])
    table = (rows.groupby(["workload.rate", "strategy", "workload.batch_size"], sort=False)[list(COLUMNS)].mean()
             .reset_index().rename(columns=COLUMNS))
    table["expert slots per layer"] = table["expert slots"] / layers
    fig, axes = plt.subplots(len(rates), 2, squeeze=False, figsize=(11, 3.8 * len(rates)))
    notes = []
    for i, rate in enumerate(rates):
        d = rows[rows["workload.rate"] == rate]
        for j, col in enumerate(("serve_goodput_rps", "serve_tpot_p99_ms")):
            ax = axes[i][j]
            serving.curves(ax, d, strategies, "workload.batch_size", col, "running requests allowed (batch_size)",
                           COLUMNS[col])
            ax.set_title(f"{rate:g} req/s", fontsize=8)
        # Slots per layer by batch_size (the strategies differ by their prefetch buffers).
        slots = d[d["gpu_cache_slots"] > 0].groupby("workload.batch_size")["gpu_cache_slots"].agg(["min", "max"])
        axes[i][0].set_title(f"{rate:g} req/s; expert slots per layer by batch_size: "
                             + ", ".join(f"{int(b)}: {r['min'] / layers:.3g}-{r['max'] / layers:.3g}"
                                         for b, r in slots.iterrows()), fontsize=6)
        axes[i][0].legend(fontsize=6)
        notes.append(f"At {rate:g} req/s, the batch_size with the most goodput beyond the tolerance in every seed: "
                     + ", ".join(f"{s} {best_split(d, s)}" for s in strategies) + ".")
    fig.suptitle(TITLE, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    hw, model = rows["hardware"].iloc[0], rows["model"].iloc[0]
    text = (" ".join(notes) + f"\n\n{model} on {hw}; the expert cache takes the GPU memory the weights, the KV "
            "cache of batch_size requests and the runtime leave (residency.cache_fill), so the slots per layer "
            "fall as batch_size rises (strategies that cache nothing ignore them). Poisson arrivals, the "
            "continuous scheduler (docs/SERVING.md); " + common.seeds_text(rows) + "; " + common.margin_text()
            + ".")
    return common.write_result(out, ID, TITLE, table, fig,
                               {"verdict": common.NO_CLAIM, "run": str(run_dir),
                                "headline": "; ".join(notes), "paper": "none (serving page)"}, text)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
