"""Expert Deferral against expert skipping on moebench's small trained
models (issue 15): the shape of KTransformers Fig. 13 (and the question of
its Table 2) on byte-level models trained here. Reads
results/tiny/<family>.accuracy-<offset>.csv (`make tiny-traces`, which runs
`moebench model accuracy` on three disjoint stretches of held-out text,
the seeds of the checks): per model and number n of affected experts,
the relative change of the perplexity per byte and the share of next-byte
argmaxes equal to the unmodified model's, deferring n against skipping n.

Checks (each per model and n, on every text stretch; margin: a perplexity
difference counts when it exceeds analysis/common.py's 2%): deferring n costs less perplexity
than skipping n (KTransformers: "under the same number of affected experts,
Expert Deferral outperforms Expert Skipping in most cases"), and the cost
grows with n for both. The paper's values (DS-3 on LiveBench, 6 affected
experts: 0.5% against 13.3% accuracy drop) are shown beside, labelled; only
the ordering compares, the models are not alike.

    python3 analysis/tiny_accuracy.py --results results --out results/report"""

from __future__ import annotations

import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import common  # noqa: E402

TITLE = "Expert Deferral vs expert skipping on small trained models (KTransformers Fig. 13 shape)"


def run(results: str, out):
    files = sorted((pathlib.Path(results) / "tiny").glob("*.accuracy-*.csv"))
    if not files:
        return None
    t = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    rows = []
    for (model, offset), g in t.groupby(["model", "offset"], sort=False):
        base = g[g["mode"] == "baseline"].iloc[0]
        for _, r in g[g["mode"] != "baseline"].iterrows():
            rows.append({"model": model, "text offset": int(offset), "mode": r["mode"],
                         "experts affected": int(r["experts"]), "top-k": int(r["top_k"]),
                         "perplexity": r["perplexity"], "baseline perplexity": base["perplexity"],
                         "perplexity change %": 100 * (r["perplexity"] / base["perplexity"] - 1),
                         "argmax agreement": r["agreement"], "KL nats": r["kl_nats"]})
    full = pd.DataFrame(rows)

    def measure(d: pd.DataFrame) -> dict:
        eff = {}
        for model, g in d.groupby("model", sort=False):
            base = float(g["baseline perplexity"].iloc[0])
            for n in sorted(set(g["experts affected"])):
                dp = g[(g["mode"] == "defer") & (g["experts affected"] == n)]["perplexity"]
                sp = g[(g["mode"] == "skip") & (g["experts affected"] == n)]["perplexity"]
                if len(dp) and len(sp):
                    eff[f"{model}: defer {n} costs less than skip {n}"] = common.more(float(sp.iloc[0]),
                                                                                     float(dp.iloc[0]))
            for mode in ("defer", "skip"):
                ppl = [base] + list(g[g["mode"] == mode].sort_values("experts affected")["perplexity"])
                if len(ppl) > 2:
                    eff[f"{model}: {mode} cost grows with n"] = common.every(
                        [common.more(b, a) for a, b in zip(ppl, ppl[1:])])
        return eff

    checks = common.evaluate_seeds({o: g for o, g in full.groupby("text offset")}, measure)
    mean_cols = ["perplexity change %", "argmax agreement", "KL nats"]
    rows = (full.groupby(["model", "mode", "experts affected", "top-k"], sort=False)[mean_cols].mean()
            .reset_index().to_dict("records"))
    table = pd.DataFrame(rows)
    pv = common.paper_values("ktransformers").get("fig13", {})
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for model, g in table.groupby("model", sort=False):
        for mode, style in (("defer", "-o"), ("skip", "--s")):
            m = g[g["mode"] == mode].sort_values("experts affected")
            axes[0].plot(m["experts affected"], m["perplexity change %"], style, label=f"{model} {mode}")
            axes[1].plot(m["experts affected"], m["argmax agreement"], style, label=f"{model} {mode}")
    axes[0].set_ylabel("perplexity per byte, change %")
    axes[1].set_ylabel("next-byte argmax equal to the unmodified model's")
    for ax in axes:
        ax.set_xlabel("experts deferred or skipped")
        ax.legend(fontsize=7)
    fig.suptitle(TITLE, fontsize=10)
    paper = (f"Paper (KTransformers Fig. 13, DS-3 on LiveBench, 6 affected experts): average accuracy drop "
             f"{pv.get('deferral_drop_pct.6', 'n/a')}% with deferral, {pv.get('skipping_drop_pct.6', 'n/a')}% with "
             "skipping. " if pv else "")
    verdict = common.figure_verdict(checks)
    notes = (paper + f"Means over {full['text offset'].nunique()} disjoint stretches of held-out text (the "
             "checks' seeds). Here: byte-level models of about 2.8M parameters trained by moebench "
             "(docs/TINY_MODELS.md), perplexity per byte on held-out KJV text; only the ordering compares.\n\n"
             + common.checks_text(checks) + "\n\nInputs: " + ", ".join(f"`{f}`" for f in files) + "\n")
    summary = {"run": str(files[0].parent), "headline": "; ".join(
        f"{r['model']} {r['mode']} {r['experts affected']}: {r['perplexity change %']:+.1f}%"
        for r in rows) + " (perplexity per byte, mean of the text stretches)", "verdict": verdict}
    return common.write_result(out, "tiny_accuracy", TITLE, table, fig, summary, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
