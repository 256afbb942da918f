# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Expert Deferral against expert skipping on moebench's small trained
models: the shape of KTransformers Fig. 13 and Table 2 on
byte-level models trained here. Reads, from `make tiny-traces` (three
disjoint stretches of held-out text, the seeds of the checks):

- results/tiny/<family>.accuracy-<offset>.csv (`moebench model accuracy`):
  the perplexity per byte of each sequence's continuation; in decode scope
  (the paper's: the prompt runs unmodified, deferral or skipping acts on
  the decode tokens) or, in files written before the scope existed or with
  `--scope all`, on every token;
- results/tiny/<family>.cloze-<offset>.csv (`moebench model cloze`): the
  share of next words the model generates right, greedy, byte by byte in
  decode after an unmodified prompt (the closest to Table 2's downstream
  accuracy these models allow), and the share equal to the unmodified
  model's word.

Checks (each per model, scope and n, on every text stretch): deferring n
costs less perplexity than skipping n (margin: analysis/common.py's 2%
relative; KTransformers: "under the same number of affected experts,
Expert Deferral outperforms Expert Skipping in most cases"), the cost grows
with n for both, and deferring n keeps more next words right and more
equal to the unmodified model's than skipping n (margin: 1 point). The
paper's values (DS-3 on LiveBench, 6 affected experts: 0.5% against 13.3%
accuracy drop) are shown beside, labelled; only the ordering compares, the
models are not alike.

    python3 analysis/tiny_accuracy.py --results results --out results/report"""

from __future__ import annotations

import pathlib
import sys

import pandas as pd

import common
import matplotlib.pyplot as plt

TITLE = "Expert Deferral vs expert skipping on small trained models (KTransformers Fig. 13 / Table 2 shape)"


def read(files, key_cols):
    """The CSVs as one frame (None when there are none)."""
    if not files:
        return None
    frames = []
    for f in files:
        t = pd.read_csv(f)
        for col, default in key_cols.items():
            if col not in t.columns:
                t[col] = default
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


def perplexity_rows(t):
    rows = []
    for (model, scope, offset), g in t.groupby(["model", "scope", "offset"], sort=False):
        base = g[g["mode"] == "baseline"].iloc[0]
        for _, r in g[g["mode"] != "baseline"].iterrows():
            rows.append({"model": model, "scope": scope, "text offset": int(offset), "mode": r["mode"],
                         "experts affected": int(r["experts"]), "top-k": int(r["top_k"]),
                         "perplexity": r["perplexity"], "baseline perplexity": base["perplexity"],
                         "perplexity change %": 100 * (r["perplexity"] / base["perplexity"] - 1),
                         "argmax agreement": r["agreement"], "KL nats": r["kl_nats"]})
    return pd.DataFrame(rows)


def cloze_rows(t):
    rows = []
    for (model, offset), g in t.groupby(["model", "offset"], sort=False):
        base = g[g["mode"] == "baseline"].iloc[0]
        for _, r in g[g["mode"] != "baseline"].iterrows():
            rows.append({"model": model, "text offset": int(offset), "mode": r["mode"],
                         "experts affected": int(r["experts"]), "top-k": int(r["top_k"]),
                         "items": int(r["items"]), "baseline next-word accuracy": base["accuracy"],
                         "next-word accuracy": r["accuracy"],
                         "accuracy change (points)": 100 * (r["accuracy"] - base["accuracy"]),
                         "word agreement": r["agreement"]})
    return pd.DataFrame(rows)


def run(results: str, out):
    tiny = pathlib.Path(results) / "tiny"
    acc_files = sorted(tiny.glob("*.accuracy-*.csv"))
    cloze_files = sorted(tiny.glob("*.cloze-*.csv"))
    acc = read(acc_files, {"scope": "all"})
    if acc is None:
        return None
    ppl = perplexity_rows(acc)
    words = cloze_rows(read(cloze_files, {})) if cloze_files else pd.DataFrame()

    def pairs(g, value):
        """(n, defer value, skip value) for every n both modes have."""
        for n in sorted(set(g["experts affected"])):
            d = g[(g["mode"] == "defer") & (g["experts affected"] == n)][value]
            k = g[(g["mode"] == "skip") & (g["experts affected"] == n)][value]
            if len(d) and len(k):
                yield n, float(d.iloc[0]), float(k.iloc[0])

    def measure(parts) -> dict:
        p, w = parts
        eff = {}
        for (model, scope), g in p.groupby(["model", "scope"], sort=False):
            label = f"{model} ({scope} scope)"
            base = float(g["baseline perplexity"].iloc[0])
            for n, d, k in pairs(g, "perplexity"):
                eff[f"{label}: defer {n} costs less perplexity than skip {n}"] = common.more(k, d)
            for mode in ("defer", "skip"):
                seq = [base] + list(g[g["mode"] == mode].sort_values("experts affected")["perplexity"])
                if len(seq) > 2:
                    eff[f"{label}: {mode} cost grows with n"] = common.every(
                        [common.more(b, a) for a, b in zip(seq, seq[1:])])
        for model, g in (w.groupby("model", sort=False) if len(w) else []):
            for n, d, k in pairs(g, "next-word accuracy"):
                eff[f"{model}: defer {n} keeps more next words right than skip {n}"] = common.more_abs(d, k)
            for n, d, k in pairs(g, "word agreement"):
                eff[f"{model}: defer {n} changes fewer generated words than skip {n}"] = common.more_abs(d, k)
        return eff

    offsets = sorted(set(ppl["text offset"]) | (set(words["text offset"]) if len(words) else set()))
    per_seed = {o: (ppl[ppl["text offset"] == o],
                    words[words["text offset"] == o] if len(words) else words) for o in offsets}
    checks = common.evaluate_seeds(per_seed, measure)
    mean_cols = ["perplexity change %", "argmax agreement", "KL nats"]
    table = (ppl.groupby(["model", "scope", "mode", "experts affected", "top-k"], sort=False)[mean_cols]
             .mean().reset_index())
    if len(words):
        wt = (words.groupby(["model", "mode", "experts affected"], sort=False)
              [["baseline next-word accuracy", "next-word accuracy", "accuracy change (points)",
                "word agreement"]].mean().reset_index())
        table = table.merge(wt, on=["model", "mode", "experts affected"], how="left")
    pv = common.paper_values("ktransformers").get("fig13", {})
    fig, axes = plt.subplots(1, 3 if len(words) else 2, figsize=(15 if len(words) else 10, 4))
    for (model, scope), g in table.groupby(["model", "scope"], sort=False):
        for mode, style in (("defer", "-o"), ("skip", "--s")):
            m = g[g["mode"] == mode].sort_values("experts affected")
            lab = f"{model} {scope} {mode}"
            axes[0].plot(m["experts affected"], m["perplexity change %"], style, label=lab)
            axes[1].plot(m["experts affected"], m["argmax agreement"], style, label=lab)
    axes[0].set_ylabel("perplexity per byte, change %")
    axes[1].set_ylabel("next-byte argmax equal to the unmodified model's")
    if len(words):
        wm = words.groupby(["model", "mode", "experts affected"], sort=False)["accuracy change (points)"].mean()
        for model in words["model"].unique():
            for mode, style in (("defer", "-o"), ("skip", "--s")):
                m = wm[model][mode].sort_index()
                axes[2].plot(m.index, m.values, style, label=f"{model} {mode}")
        axes[2].set_ylabel("next-word accuracy, change (points)")
    for ax in axes:
        ax.set_xlabel("experts deferred or skipped")
        ax.legend(fontsize=7)
    fig.suptitle(TITLE, fontsize=10)
    paper = (f"Paper (KTransformers Fig. 13, DS-3 on LiveBench, 6 affected experts): average accuracy drop "
             f"{pv.get('deferral_drop_pct.6', 'n/a')}% with deferral, {pv.get('skipping_drop_pct.6', 'n/a')}% with "
             "skipping. " if pv else "")
    verdict = common.figure_verdict(checks)
    scopes = ", ".join(sorted(set(ppl["scope"])))
    notes = (paper + f"Means over {len(offsets)} disjoint stretches of held-out text (the checks' seeds); "
             f"perplexity scope: {scopes} (decode: deferral or skipping on the decode tokens after an "
             "unmodified prompt, as KTransformers applies it; all: on every token). Here: byte-level models of "
             "about 2.8M parameters trained by moebench (docs/TINY_MODELS.md), perplexity per byte and greedy "
             "next-word generation on held-out KJV text, not the paper's benchmarks; only the ordering "
             "compares.\n\n" + common.checks_text(checks) + "\n\nInputs: "
             + ", ".join(f"`{f}`" for f in acc_files + cloze_files) + "\n")
    head = [f"{r['model']} {r['scope']} {r['mode']} {r['experts affected']}: {r['perplexity change %']:+.1f}%"
            for r in table.to_dict("records")]
    summary = {"run": str(acc_files[0].parent), "headline": "; ".join(head)
               + " (perplexity per byte, mean of the text stretches)", "verdict": verdict}
    return common.write_result(out, "tiny_accuracy", TITLE, table, fig, summary, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
