# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""DALI Fig. 4: execution time of CPU- and GPU-assigned experts under
Fiddler's assignment across batch sizes (prefill and decode length 32),
DeepSeek-V2-Lite and Qwen. The paper gives no numbers; its text states the
trend: small batches leave the CPU far longer than the GPU, and the
imbalance reverses as the batch grows.

    python3 analysis/dali_fig4.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common
import matplotlib.pyplot as plt
from dali_common import SHORT

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "DALI", "figure": "Fig. 4",
          "suite": "suites/dali.toml (part dali-fig4-5)"}


FIG = "dali-fig4"
PART = "dali-fig4-5"
TITLE = "DALI Fig. 4: CPU vs GPU expert time under Fiddler's assignment"


def run(results: str, out):
    run_dir, rows = common.find_part(results, PART, suites=("dali",), all_seeds=True)
    if rows is None:
        return None

    def times(d):
        d = d[d["strategy"] == "fiddler"].copy()
        d["gpu_side_s"] = d["gpu_expert_time_s"] + d["h2d_util_frac"] * d["total_time_s"]
        recs = []
        for _, r in d.sort_values(["model", "workload.batch_size"]).iterrows():
            recs.append({"model": SHORT.get(r["model"], r["model"]), "batch": int(r["workload.batch_size"]),
                         "CPU expert s": float(r["cpu_expert_time_s"]), "GPU expert s": float(r["gpu_expert_time_s"]),
                         "GPU expert + copies s": float(r["gpu_side_s"]),
                         "CPU / GPU(+copies)": float(r["cpu_expert_time_s"]) / float(r["gpu_side_s"])
                         if r["gpu_side_s"] > 0 else float("inf")})
        return pd.DataFrame(recs)

    def measure(d):
        checks = {}
        for m, g in times(d).groupby("model"):
            q = g.sort_values("batch")["CPU / GPU(+copies)"].tolist()
            checks[f"{m}: CPU longer at the smallest batch"] = common.more(q[0], 1.0)
            checks[f"{m}: the CPU/GPU ratio falls as the batch grows"] = common.more(q[0], q[-1])
            checks[f"{m}: GPU longer at the largest batch"] = common.more(1.0, q[-1])
        return checks

    checks = common.evaluate(rows, measure)
    table = times(common.seed_mean(rows))
    notes = ("CPU expert s: CPU lane time computing routed experts; GPU expert s: GPU lane time computing routed "
             "experts; + copies adds the time the PCIe link was busy with expert weights (Fiddler copies a "
             "non-resident expert when that is faster than the CPU). Whole run (prefill and decode). Qwen3-30B-A3B "
             "stands in for the paper's Qwen-1.5. Numbers: " + common.seeds_text(rows) + ". Checks ("
             + common.margin_text() + "): "
             + common.checks_text(checks)
             + ".\n\nPaper: DALI section 3.1, text on Fig. 4 (no numbers given).")
    models = list(table["model"].unique())
    fig, axes = plt.subplots(1, len(models), figsize=(4.5 * len(models), 3.3), squeeze=False)
    for ax, m in zip(axes[0], models):
        t = table[table["model"] == m]
        x = range(len(t))
        ax.bar([i - 0.2 for i in x], t["CPU expert s"], 0.4, label="CPU experts")
        ax.bar([i + 0.2 for i in x], t["GPU expert + copies s"], 0.4, label="GPU experts + copies")
        ax.set_xticks(list(x), [str(b) for b in t["batch"]])
        ax.set_xlabel("batch size")
        ax.set_title(m)
    axes[0][0].set_ylabel("s")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(TITLE, fontsize=9)
    return common.write_result(out, FIG, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": str(run_dir), "paper": "DALI Fig. 4",
                                "headline": "CPU / GPU(+copies) time, smallest -> largest batch: " + ", ".join(
                                    f"{m} {g['CPU / GPU(+copies)'].iloc[0]:.2f} -> {g['CPU / GPU(+copies)'].iloc[-1]:.2f}"
                                    for m, g in table.groupby("model")) + " (paper: >1 -> <1)"},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
