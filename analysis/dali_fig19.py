"""DALI Fig. 19: breakdown of the gains (naive -> +greedy -> +prefetch ->
+cache) on Mixtral and Qwen3-30B-A3B, decode speed, harness beside the
paper's stated factors (averaged over the two models in its text).

    python3 analysis/dali_fig19.py --results results --out results/report"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import common  # noqa: E402

PARTS = {"mixtral": "dali-fig19-mixtral", "qwen": "dali-fig19-qwen"}
TITLE = "DALI Fig. 19: breakdown of gains (decode speed, 25% cache)"
STEPS = [("ktransformers", "naive"), ("+greedy", "+greedy"), ("+prefetch", "+prefetch"), ("+cache", "+cache")]


def run(results: str, out):
    pv = common.paper_values("dali")["fig19"]
    recs, runs = [], []
    for model, part in PARTS.items():
        run_dir, df = common.find_part(results, part)
        if df is None:
            return None
        runs.append(str(run_dir))
        prev = None
        naive = None
        for strat, label in STEPS:
            r = common.strategy_rows(df, run_dir, part, strat)
            tps = float(r["decode_tokens_per_s"].iloc[0])
            naive = naive or tps
            step = tps / prev if prev else None
            paper = pv.get(label) if label != "naive" else None
            recs.append({"model": model, "step": label, "decode tok/s": tps, "over naive (x)": tps / naive,
                         "over previous (x)": step if step else float("nan"),
                         "paper over previous (x)": paper if paper else float("nan"),
                         "ratio harness/paper": common.ratio(step, paper) or float("nan"),
                         "decode hit rate": float(r["decode_hit_rate_token_frac"].iloc[0])})
            prev = tps
    table = pd.DataFrame(recs)
    steps = table[table["step"] != "naive"]
    helps = steps.groupby("step")["over previous (x)"].mean()
    reproduced = bool((helps > 1.0).all())
    notes = ("Decode tokens/s per model; each step over the one before it. The paper states the factors for "
             "both models together (greedy 4.1x over naive, prefetch +9%, cache +38%). Trend checked: each "
             "step improves on the one before it (mean over the two models): "
             + ", ".join(f"{k} {v:.2f}x" for k, v in helps.items())
             + f".\n\nPaper: {pv['source']}; {pv['setting']}.")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, model in zip(axes, PARTS):
        t = table[table["model"] == model]
        ax.bar(t["step"], t["over naive (x)"], color="#4878a8", label="harness")
        paper_cum, c = [], 1.0
        for s in t["step"]:
            c = c * (pv.get(s, 1.0) if s != "naive" else 1.0)
            paper_cum.append(c)
        ax.plot(list(t["step"]), paper_cum, "o--", color="#d9a441", label="paper (cumulative)")
        ax.set_title(f"{model}: speedup over naive")
    axes[0].legend(fontsize=8)
    fig.suptitle(TITLE, fontsize=9)
    return common.write_result(out, "dali-fig19", TITLE, table, fig,
                               {"trend_reproduced": reproduced, "run": "; ".join(sorted(set(runs))),
                                "headline": "step factors (mean of 2 models) " + ", ".join(
                                    f"{k} {v:.2f}x (paper {pv.get(k)}x)" for k, v in helps.items()),
                                "paper": "DALI Fig. 19"}, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
