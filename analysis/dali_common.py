# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""What the DALI figure scripts share (a library, not a figure): the models' short names and the decode-speed
comparison of DALI against its baselines (Fig. 12 and Fig. 13)."""

from __future__ import annotations

import pandas as pd

import common
import matplotlib.pyplot as plt

SHORT = {"deepseek-v2-lite": "deepseek", "qwen3-30b-a3b": "qwen", "mixtral-8x7b": "mixtral"}
BASELINES = ["llamacpp", "ktransformers", "hybrimoe"]


def speed_figure(df, metric, ylabel, title):
    models = [m for m in SHORT if (df["model"] == m).any()]
    fig, axes = plt.subplots(1, len(models), figsize=(4 * len(models), 3.3), squeeze=False)
    for ax, m in zip(axes[0], models):
        t = df[df["model"] == m]
        for s in BASELINES + ["dali"]:
            r = t[t["strategy"] == s].sort_values("workload.batch_size")
            ax.plot(r["workload.batch_size"], r[metric], "o-", label=s)
        ax.set_xscale("log", base=2)
        ax.set_title(SHORT[m])
        ax.set_xlabel("batch size")
    axes[0][0].set_ylabel(ylabel)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    return fig


def speedup_summary(df, metric, by, pv):
    sp = common.speedups(df, by, metric, "dali", BASELINES)
    rows = []
    for b in BASELINES:
        h = float(sp[f"dali / {b}"].mean())
        p = pv.get(b)
        rows.append({"DALI over": b, "harness mean speedup": h, "paper mean speedup": p,
                     "harness / paper": common.ratio(h, p)})
    return sp, pd.DataFrame(rows)


def speed_checks(d, metric, by, pv):
    """One seed's effects: DALI faster than each baseline at every point the figure shows (each model and batch
    size: the direction is not judged on a mean, which can hide a contrary point) by the paper's average speedup
    over that baseline (the text's number is an average over models and batch sizes, "DALI achieves average
    speedups of ...", so its magnitude is the harness's average, the effect within the band of the paper's),
    and the paper's order of the speedups (over llama.cpp > over KTransformers > over HybriMoE), each by more
    than REL_TOL."""
    sp = common.speedups(d, by, metric, "dali", BASELINES)
    m = {b: float(sp[f"dali / {b}"].mean()) for b in BASELINES}
    out = {f"DALI faster than {b} (at every model and batch size; magnitude: the average)": common.Claim(
               common.every(common.more(x, 1.0) for x in sp[f"dali / {b}"]), common.within_effect(m[b], pv[b]))
           for b in BASELINES}
    out["speedup over llama.cpp > over KTransformers"] = common.more(m["llamacpp"], m["ktransformers"])
    out["speedup over KTransformers > over HybriMoE"] = common.more(m["ktransformers"], m["hybrimoe"])
    return out


def with_summary_rows(sp, summary):
    """Per-case speedups, then a 'mean' row and a 'paper' row (the paper's averages)."""
    mean = {f"dali / {b}": v for b, v in zip(summary["DALI over"], summary["harness mean speedup"])}
    paper = {f"dali / {b}": v for b, v in zip(summary["DALI over"], summary["paper mean speedup"])}
    first = sp.columns[0]
    return pd.concat([sp, pd.DataFrame([{first: "mean", **mean}, {first: "paper", **paper}])], ignore_index=True)
