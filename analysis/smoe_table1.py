# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""SMoE Table I: decode tokens/s of KTransformers, HybriMoE, SMoE and
SMoE-Flex on DeepSeek-V3 and Qwen3-235B-A22B, harness beside the paper's
mean over its six datasets.

    python3 analysis/smoe_table1.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common
import matplotlib.pyplot as plt

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "SMoE", "figure": "Table I",
          "suite": "suites/smoe-table1.toml"}


PARTS = {"deepseek": "smoe-table1-deepseek-v3", "qwen3": "smoe-table1-qwen3"}
TITLE = "SMoE Table I: decode tokens/s (RTX 4090, 8 cached experts per layer)"
SYSTEMS = ["ktransformers", "hybrimoe", "smoe", "smoe-flex"]


def run(results: str, out):
    pv = common.paper_values("smoe")["table1"]
    runs, seeded = [], []
    for model, part in PARTS.items():
        run_dir, df = common.find_part(results, part, suites=("smoe-table1",), all_seeds=True)
        if df is None:
            return None
        runs.append(str(run_dir))
        for s in SYSTEMS:
            common.strategy_rows(df, run_dir, part, s)
        seeded.append(df.assign(model_key=model))
    both = pd.concat(seeded, ignore_index=True)

    def tabulate(d):
        recs = []
        for model, g in d.groupby("model_key", sort=False):
            base = float(g[g["strategy"] == "ktransformers"]["decode_tokens_per_s"].iloc[0])
            for s in SYSTEMS:
                r = g[g["strategy"] == s]
                h = float(r["decode_tokens_per_s"].iloc[0])
                p = pv[f"{model}.{s}"]
                pbase = pv[f"{model}.ktransformers"]
                recs.append({"model": model, "system": s, "harness tok/s": h, "paper tok/s": p,
                             "ratio harness/paper": h / p, "harness vs KTrans": h / base, "paper vs KTrans": p / pbase,
                             "decode hit rate": float(r["decode_hit_rate_token_frac"].iloc[0])})
        return pd.DataFrame(recs)

    def measure(d):
        table, checks = tabulate(d), {}
        for model in PARTS:
            t = table[table["model"] == model].set_index("system")["harness tok/s"]
            # With the paper's ratios of its own decode speeds (Table I) as the magnitudes.
            checks[f"{model}: SMoE faster than KTransformers"] = common.speedup(
                t["smoe"], t["ktransformers"], pv[f"{model}.smoe"] / pv[f"{model}.ktransformers"])
            checks[f"{model}: SMoE faster than HybriMoE"] = common.speedup(
                t["smoe"], t["hybrimoe"], pv[f"{model}.smoe"] / pv[f"{model}.hybrimoe"])
        return checks

    checks = common.evaluate(both, measure)
    table = tabulate(common.seed_mean(both, keys=["model_key"]))
    notes = ("Paper values are the mean of Table I's six datasets; the harness runs one synthetic workload per "
             "model. Absolute tokens/s depend on the cost model's calibration; compare the ratios to "
             "KTransformers. Numbers: " + common.seeds_text(both) + ". Checks (the paper's ordering; "
             + common.margin_text() + "): "
             + common.checks_text(checks) + f".\n\nPaper: {pv['source']}.")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for ax, model in zip(axes, PARTS):
        t = table[table["model"] == model]
        x = range(len(t))
        ax.bar([i - 0.2 for i in x], t["harness vs KTrans"], 0.4, label="harness", color="#4878a8")
        ax.bar([i + 0.2 for i in x], t["paper vs KTrans"], 0.4, label="paper", color="#d9a441")
        ax.set_xticks(list(x), t["system"], rotation=15)
        ax.axhline(1.0, color="grey", lw=0.5)
        ax.set_title(f"{model}: decode tok/s over KTransformers")
    axes[0].legend(fontsize=8)
    fig.suptitle(TITLE, fontsize=9)
    return common.write_result(out, "smoe-table1", TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": "; ".join(sorted(set(runs))),
                                "headline": "SMoE vs KTrans: " + ", ".join(
                                    f"{m} {table[(table['model'] == m) & (table['system'] == 'smoe')]['harness vs KTrans'].iloc[0]:.2f}x "
                                    f"(paper {table[(table['model'] == m) & (table['system'] == 'smoe')]['paper vs KTrans'].iloc[0]:.2f}x)"
                                    for m in PARTS),
                                "paper": "SMoE Table I"}, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
