# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Real learned routing against synthetic routing of the same shape: do the strategies rank the same way?
Reads the latest runs of suites/tiny-<family>-routing-trace.toml (every strategy on two traces
recorded from moebench's small trained model, from disjoint held-out text)
and suites/tiny-<family>-routing.toml (the same on the synthetic
generator's workload for the same model, three seeds), and reports per
model each strategy's decode hit rate and TBT under both, and the Spearman
rank correlation of the strategies between every recorded trace and every
synthetic seed.

Verdict (decode hit rate, the routing-sensitive metric): the rankings agree
when every recorded-vs-synthetic correlation is at least 0.8, disagree when
every one is below 0.5, and are inconclusive otherwise; the correlations
between two synthetic seeds and between the two recorded traces are shown
beside them as the noise of each side. TBT is reported too, but on models
this small each strategy's fixed implementation costs on the testbed
dominate it, so its ranking says little about routing. The models are
small byte-level LMs trained here, not stand-ins for Mixtral or DeepSeek.

    python3 analysis/tiny_routing.py --results results --out results/report"""

from __future__ import annotations

import itertools
import sys

import pandas as pd

import common
import matplotlib.pyplot as plt

TITLE = "Strategies on real (recorded) vs synthetic routing of the same shape, small trained models"
METRICS = {"decode_hit_rate_token_frac": "decode hit rate", "tbt_mean_ms": "TBT ms"}
VERDICT_METRIC = "decode hit rate"
AGREE, DISAGREE = 0.8, 0.5
# A pair of strategies the recorded routing separates beyond its own noise:
# the same order on every recorded trace, by more than this (relative) on each.
SEPARATION = 0.05
FAMILIES = ("mixtral", "deepseek")


def spearman(a: pd.Series, b: pd.Series) -> float:
    """Rank correlation with average ranks for ties (no scipy needed)."""
    ra, rb = a.rank(), b.rank()
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(ra.corr(rb))


def axis(axes, key: str) -> str:
    """One axis value from a row's axes ("k=v,k=v", or a dict)."""
    if isinstance(axes, dict):
        return str(axes.get(key, ""))
    for part in str(axes or "").split(","):
        k, _, v = part.partition("=")
        if k.strip() == key:
            return v.strip()
    return ""


def variants(df: pd.DataFrame, key: str, col: str) -> dict:
    """{variant label: Series strategy -> value} for one metric column."""
    out = {}
    for v, g in df.groupby(df["axes"].map(lambda a: axis(a, key))):
        out[v.split("/")[-1] or "default"] = g.groupby("strategy")[col].mean()
    return out


def rhos(a: dict, b: dict, same: bool = False) -> list:
    pairs = itertools.combinations(a, 2) if same else itertools.product(a, b)
    out = []
    for x, y in pairs:
        sa, sb = (a[x], a[y]) if same else (a[x], b[y])
        common_idx = sa.index.intersection(sb.index)
        out.append(spearman(sa[common_idx], sb[common_idx]))
    return [r for r in out if r == r]


def separated_agreement(ref: dict, other: dict) -> tuple:
    """(pairs ref separates, of them ordered alike by other's mean): a pair
    counts when its order is the same in every variant of ref by more than
    SEPARATION (relative), the rule the GPU replay judges a ranking by."""
    idx = None
    for v in list(ref.values()) + list(other.values()):
        idx = v.index if idx is None else idx.intersection(v.index)
    mean = pd.concat([other[k][idx] for k in other], axis=1).mean(axis=1)
    n = same = 0
    for a, b in itertools.combinations(list(idx), 2):
        signs = set()
        for v in ref.values():
            x, y = float(v[a]), float(v[b])
            lo = min(abs(x), abs(y))
            signs.add(0 if abs(x - y) <= SEPARATION * lo else (1 if x > y else -1))
        if len(signs) != 1 or 0 in signs:
            continue
        n += 1
        same += (1 if mean[a] > mean[b] else -1 if mean[a] < mean[b] else 0) == signs.pop()
    return n, same


def rng(v: list) -> str:
    if not v:
        return "n/a"
    lo, hi = f"{min(v):.2f}", f"{max(v):.2f}"
    return lo if lo == hi else f"{lo} to {hi}"


def run(results: str, out):
    tables, lines, panels, runs = [], [], [], []
    for fam in FAMILIES:
        dt, ds = common.latest_run(results, f"tiny-{fam}-routing-trace"), common.latest_run(results, f"tiny-{fam}-routing")
        if dt is None or ds is None:
            continue
        runs += [str(dt), str(ds)]
        rec = common.load_runs(dt)
        syn = common.load_runs(ds)
        rec, syn = rec[rec["status"] == "ok"], syn[syn["status"] == "ok"]
        model = rec["model"].iloc[0]
        for col, name in METRICS.items():
            r = variants(rec, "workload.trace", col)
            s = variants(syn, "workload.seed", col)
            cross, within_s, within_r = rhos(r, s), rhos(s, s, True), rhos(r, r, True)
            if name == VERDICT_METRIC:
                verdict = ("agree" if cross and min(cross) >= AGREE else
                           "disagree" if cross and max(cross) < DISAGREE else "inconclusive")
            else:
                verdict = "not judged (fixed implementation costs dominate)"
            n, same = separated_agreement(r, s)
            lines.append(f"{model} {name}: recorded vs synthetic rho {rng(cross)} ({len(cross)} pairs); "
                         f"synthetic seed vs seed {rng(within_s)}; recorded trace vs trace {rng(within_r)}: {verdict}; "
                         f"of the {n} strategy pairs the recorded routing separates (the same order on every trace, "
                         f"by more than {SEPARATION:.0%}), the synthetic routing orders {same} alike")
            t = pd.DataFrame({"recorded (mean of traces)": pd.concat(r, axis=1).mean(axis=1),
                              "synthetic (mean of seeds)": pd.concat(s, axis=1).mean(axis=1)}).reset_index()
            t = t.rename(columns={"index": "strategy"})
            t.insert(0, "metric", name)
            t.insert(0, "model", model)
            tables.append(t)
            panels.append((model, name, t, rng(cross)))
    if not tables:
        return None
    table = pd.concat(tables, ignore_index=True)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4), squeeze=False)
    for ax, (model, name, t, rho) in zip(axes[0], panels):
        ax.scatter(t["synthetic (mean of seeds)"], t["recorded (mean of traces)"])
        for _, row in t.iterrows():
            ax.annotate(row["strategy"], (row["synthetic (mean of seeds)"], row["recorded (mean of traces)"]),
                        fontsize=6)
        ax.set_xlabel(f"{name}, synthetic routing")
        ax.set_ylabel(f"{name}, recorded routing")
        ax.set_title(f"{model}: rho {rho}", fontsize=9)
    fig.suptitle(TITLE, fontsize=10)
    notes = ("\n\n".join(lines) + f"\n\nVerdict on the decode hit rate: agree when every recorded-vs-synthetic rank "
             f"correlation is >= {AGREE}, disagree when every one is < {DISAGREE}, inconclusive otherwise. TBT is "
             "not judged: on models this small each strategy's fixed implementation costs on the testbed dominate "
             "it. The models are small byte-level LMs trained here (docs/TINY_MODELS.md), not stand-ins for the "
             "papers' models.\n\nRuns: " + ", ".join(f"`{r}`" for r in runs) + "\n")
    summary = {"run": runs[0], "headline": "; ".join(x for x in lines if VERDICT_METRIC in x), "verdict": "measured"}
    return common.write_result(out, "tiny_routing", TITLE, table, fig, summary, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
