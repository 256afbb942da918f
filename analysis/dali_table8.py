# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""DALI Table 8: cosine of the input used to predict the next layer against
the true next-layer input, raw (HybriMoE) and residual-corrected (DALI),
Qwen3-30B-A3B and Mixtral, batch 8.

    make predictors && python3 analysis/dali_table8.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common
import predictors_common as pc

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "DALI", "figure": "Table 8",
          "suite": "make predictors"}

TITLE = "DALI Table 8: cosine of predicted vs true next-layer gate input (raw vs residual-corrected)"
MODELS = {"qwen": "qwen3-30b-a3b", "mixtral": "mixtral-8x7b"}


def run(results: str, out):
    pv = common.paper_values("dali")["table8"]
    recs, files = [], []
    for short, model in MODELS.items():
        per_seed = pc.load_seeds(results, model, 8)
        if per_seed is None:
            return None
        for seed, d in per_seed.items():
            files.append(d["_path"])
            for i, layer in enumerate(pv["layers"]):
                idx = layer - 1  # cosine between 1-based layer `layer` and the next one
                raw = d["cos_raw"][idx] if idx < len(d["cos_raw"]) else float("nan")
                res = d["cos_residual"][idx] if idx < len(d["cos_residual"]) else float("nan")
                recs.append({common.SEED_COLUMN: seed, "model": short, "layer": layer, "raw (harness)": raw,
                             "raw (paper)": pv[f"{short}.raw"][i], "residual (harness)": res,
                             "residual (paper)": pv[f"{short}.residual"][i]})
    rows = pd.DataFrame(recs)
    # The generator's cross-layer cosines are fitted on this table (docs/calibration.md): true by construction.
    name = "residual-corrected closer to the truth in every layer"
    checks = common.evaluate(rows, lambda t: {name: common.every(
        common.more_abs(r, w) for r, w in zip(t["residual (harness)"], t["raw (harness)"]))},
        roles={name: "construction"})
    table = rows.groupby(["model", "layer"], as_index=False, sort=False)[
        ["raw (harness)", "raw (paper)", "residual (harness)", "residual (paper)"]].mean()
    notes = ("The residual vectors come from the calibration stream, the cosines from the evaluation stream. "
             f"Note: {pv['note']}. Numbers: " + common.seeds_text(rows) + ". Check (" + common.margin_text() + "): "
             + common.checks_text(checks) + f".\n\nPaper: {pv['source']}.")
    g = table.groupby("model")[["raw (harness)", "raw (paper)", "residual (harness)", "residual (paper)"]].mean()
    return common.write_result(out, "dali-table8", TITLE, table, None,
                               {"verdict": common.figure_verdict(checks), "run": "; ".join(sorted(files))[:300], "paper": "DALI Table 8",
                                "headline": "mean raw/residual: " + ", ".join(
                                    f"{m} {r['raw (harness)']:.2f}/{r['residual (harness)']:.2f} (paper "
                                    f"{r['raw (paper)']:.2f}/{r['residual (paper)']:.2f})" for m, r in g.iterrows())
                                + " (calibration targets)"}, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
