# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""SMoE Fig. 3: per-layer top-k recall of layer-wise, iteration-wise and
token-wise prediction on DeepSeek-V3 (the trained linear predictor for
token-wise), with the last-iteration baseline.

    make predictors && python3 analysis/smoe_fig3.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common
import matplotlib.pyplot as plt
import predictors_common as pc

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "SMoE", "figure": "Fig. 3",
          "suite": "make predictors"}

TITLE = "SMoE Fig. 3: prediction recall by layer, DeepSeek-V3"


def run(results: str, out):
    pv = common.paper_values("smoe")["fig3"]
    per_seed = pc.load_seeds(results, "deepseek-v3", 8)
    if per_seed is None:
        return None
    COLS = ("layer-wise", "iteration-wise", "token-wise", "last-iteration")
    rows = pd.concat([pd.DataFrame({common.SEED_COLUMN: seed, "layer": range(d["layers"]),
                                    "layer-wise": d["recall_layerwise"], "iteration-wise": d["recall_iterationwise"],
                                    "token-wise": d["recall_tokenwise"], "last-iteration": d["recall_last_iteration"]})
                      for seed, d in per_seed.items()], ignore_index=True)

    def measure(t):
        shallow = t[(t["layer"] >= 1) & (t["layer"] < 10)]
        deep = t[t["layer"] >= 30]
        return {"iteration-wise: shallow layers more accurate than deep":
                    common.more_abs(shallow["iteration-wise"].mean(), deep["iteration-wise"].mean()),
                "layer-wise most accurate of the three": common.every(
                    common.more_abs(t["layer-wise"].mean(), t[c].mean()) for c in ("iteration-wise", "token-wise")),
                "token-wise below layer-wise": common.more_abs(t["layer-wise"].mean(), t["token-wise"].mean())}

    checks = common.evaluate(rows, measure)
    table = rows.groupby("layer", as_index=False)[list(COLS)].mean()
    files = sorted(d["_path"] for d in per_seed.values())
    notes = ("Recall = |predicted top-k ∩ true top-k| / k per token and layer, averaged; layer-wise = layer l's "
             "router on layer l-1's input; iteration-wise = layer l's router on the first MoE layer's input; "
             "token-wise = SMoE's linear predictor (trained on the calibration stream) for the next token. Means: "
             + ", ".join(f"{c} {table[c].mean():.3f}" for c in ("layer-wise", "iteration-wise", "token-wise",
                                                             "last-iteration"))
             + ". Paper trends: " + "; ".join([pv["trend_iteration"], pv["trend_layer"], pv["trend_token"]])
             + ". Numbers: " + common.seeds_text(rows) + ". Checks (" + common.margin_text() + "): "
             + common.checks_text(checks)
             + f".\n\nPaper: {pv['source']}.")
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for c in ("layer-wise", "iteration-wise", "token-wise", "last-iteration"):
        ax.plot(table["layer"], table[c], label=c)
    ax.set_xlabel("MoE layer")
    ax.set_ylabel("top-8 recall")
    ax.legend(fontsize=8)
    ax.set_title(TITLE + " (harness)", fontsize=9)
    return common.write_result(out, "smoe-fig3", TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": "; ".join(files)[:300], "paper": "SMoE Fig. 3",
                                "headline": common.checks_text(checks)},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
