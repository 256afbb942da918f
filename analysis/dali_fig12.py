"""DALI Fig. 12: decoding speed of llama.cpp, KTransformers (layer-wise),
HybriMoE and DALI over batch sizes on DeepSeek-V2-Lite, Qwen3-30B-A3B and
Mixtral (50% cache, RTX 3090), with the paper's average speedups beside the
harness's.

    python3 analysis/dali_fig12.py --results results --out results/report"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import common  # noqa: E402

# The comparison this paper claim is judged in (common.py, "the two comparisons"): systems against each other.
JUDGED_IN = common.AS_PUBLISHED

FIG = "dali-fig12"
PARTS = ["dali-fig12-deepseek", "dali-fig12-qwen", "dali-fig12-mixtral"]
TITLE = "DALI Fig. 12: decode speed vs batch size (50% cache, RTX 3090)"
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
    """One seed's effects: DALI faster than each baseline on every model (its mean over the batch sizes; the
    figure shows each model) by the paper's average speedup over that baseline (the text's number: the mean
    over models and batch sizes), and the paper's order of the speedups (over llama.cpp > over KTransformers
    > over HybriMoE), each by more than REL_TOL."""
    sp = common.speedups(d, by, metric, "dali", BASELINES)
    m = {b: float(sp[f"dali / {b}"].mean()) for b in BASELINES}
    per_model = (sp.groupby("model")[[f"dali / {b}" for b in BASELINES]].mean() if "model" in sp.columns
                 else sp[[f"dali / {b}" for b in BASELINES]].mean().to_frame().T)
    out = {f"DALI faster than {b} (on every model; magnitude: the average)": common.Claim(
               common.every(common.more(x, 1.0) for x in per_model[f"dali / {b}"]), common.within(m[b], pv[b]))
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


def run(results: str, out):
    runs, df = common.find_parts(results, PARTS, suites=("dali",), all_seeds=True)
    if df is None:
        return None
    pv = common.paper_values("dali")["fig12"]
    checks = common.evaluate(df, lambda d: speed_checks(d, "decode_tokens_per_s", ["model", "workload.batch_size"], pv))
    verdict = common.figure_verdict(checks)
    # Tables and figures show the mean over the workload seeds.
    dm = df.groupby(["model", "workload.batch_size", "strategy"], as_index=False)["decode_tokens_per_s"].mean()
    sp, summary = speedup_summary(dm, "decode_tokens_per_s", ["model", "workload.batch_size"], pv)
    sp["model"] = sp["model"].map(lambda m: SHORT.get(m, m))
    mean = dict(zip(summary["DALI over"], summary["harness mean speedup"]))
    table = with_summary_rows(sp.rename(columns={"workload.batch_size": "batch"}), summary)
    notes = ("Decode speed: generated tokens per second of simulated decode time (analysis/METRICS.md), mean over "
             "workload seeds " + ", ".join(str(x) for x in common.seeds(df)) + "; batch "
             "sizes 8-64 (our choice; the figure's axis values are not in the text). MoE-Lightning (paper 1.48x) is not implemented. Checks (an effect counts above "
             f"{100 * common.REL_TOL:.0f}% in every seed): "
             + common.checks_text(checks) + f".\n\nPaper: {pv['source']}.")
    fig = speed_figure(dm, "decode_tokens_per_s", "decode tokens/s (seed mean)", TITLE)
    return common.write_result(out, FIG, TITLE, table, fig,
                               {"verdict": verdict, "run": "; ".join(runs),
                                "paper": "DALI Fig. 12",
                                "headline": "DALI mean decode speedup: " + ", ".join(
                                    f"{b} {mean[b]:.2f}x (paper {pv[b]:.2f}x)" for b in BASELINES)},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
