# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Serving (docs/SERVING.md): every strategy under requests that arrive (Poisson at a swept rate,
continuous batching), per testbed: p99 time to first token and p99 time per output token against the request
rate (the knee is the capacity), and goodput under the SLO (suites/serving.toml). No paper measures this; the
page states no paper's claim. A ranking between two strategies is given only where one's goodput is above the
other's beyond the tolerance in every workload seed.

    python3 analysis/serving.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common
import matplotlib.pyplot as plt

FIGURE = {"paper": "Serving", "figure": "Latency against load and goodput per strategy",
          "suite": "suites/serving.toml", "page": "comparison"}


PART = "serving"
ID = "serving"
TITLE = "Serving: p99 TTFT and TPOT against the request rate, and goodput, per strategy and testbed"
COLUMNS = {"serve_ttft_p99_ms": "p99 TTFT (ms)", "serve_tpot_p99_ms": "p99 TPOT (ms)",
           "serve_goodput_rps": "goodput (req/s)", "serve_throughput_rps": "throughput (req/s)",
           "serve_slo_attained_frac": "within SLO", "serve_queue_mean_ms": "mean queueing (ms)"}


def capacity(rows: pd.DataFrame) -> float:
    """The highest rate at which the p99 bounds hold in every seed (MLPerf's server test), NaN when none."""
    ok = rows.groupby("workload.rate")["serve_slo_p99_met"].min()
    ok = ok[ok >= 1]
    return float(ok.index.max()) if len(ok) else float("nan")


def ranking(rows: pd.DataFrame, rate: float) -> list:
    """Pairs (a, b) where a's goodput at `rate` is above b's beyond the tolerance in every seed."""
    at = rows[rows["workload.rate"] == rate]
    g = at.pivot_table(index="workload.seed", columns="strategy", values="serve_goodput_rps")
    out = []
    for a in g.columns:
        for b in g.columns:
            if a != b and all(above(g.loc[s, a], g.loc[s, b]) for s in g.index):
                out.append((a, b))
    return out


def curves(ax, d: pd.DataFrame, strategies: list, x: str, col: str, xlabel: str, ylabel: str) -> None:
    """One line per strategy: the seed mean of `col` against `x` (log2 axis)."""
    for s in strategies:
        m = d[d["strategy"] == s].groupby(x)[col].mean()
        line, = ax.plot(m.index, m.values, marker="o", ms=3, label=s)
        loose = [r for r in not_bounds(d[d["strategy"] == s]) if r in m.index]
        if loose:  # an oracle's points that are not bounds: hollow
            ax.plot(loose, m.loc[loose].values, ls="none", marker="o", ms=6, mfc="white",
                    mec=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def above(a: float, b: float) -> bool:
    """a's goodput above b's beyond the relative tolerance (any goodput is above none)."""
    if b <= 0:
        return a > 0
    return common.more(a, b).outcome() == common.REPRODUCED


def not_bounds(rows: pd.DataFrame) -> list:
    """The rates at which an oracle's case is not a bound in some seed: its repeated runs did not reach its
    own schedule (the case's warnings say so; docs/SERVING.md, "Oracles")."""
    warn = rows["warnings"].fillna("").astype(str) if "warnings" in rows else pd.Series("", index=rows.index)
    hit = rows[warn.str.contains("this case is not a bound", regex=False)]
    return sorted(set(float(r) for r in hit["workload.rate"]))


def oracle_text(d: pd.DataFrame, strategies: list) -> str:
    """Where the oracle's curve is a bound and where it is not (empty without an oracle)."""
    oracles = [s for s in strategies if s.startswith("oracle")]
    parts = []
    for s in oracles:
        rates = not_bounds(d[d["strategy"] == s])
        parts.append(f" {s} is a bound at every rate (its schedule repeated in every seed)." if not rates else
                     f" {s} is not a bound at {', '.join(f'{r:g}' for r in rates)} req/s (its schedule still "
                     "changed after 8 runs in some seed; drawn hollow there) and is one at the other rates.")
    return "".join(parts)


def order_text(pairs: list, strategies: list) -> str:
    """The strategies by how many others each is separated above, with the pairs that are not separated."""
    above = {s: sum(1 for a, _ in pairs if a == s) for s in strategies}
    ranked = sorted(strategies, key=lambda s: -above[s])
    return " > ".join(f"{s} ({above[s]})" for s in ranked)


def run(results: str, out):
    run_dir, rows = common.find_part(results, PART, suites=(), all_seeds=True)
    if rows is None:
        return None
    rows = rows.copy()
    rows["workload.rate"] = rows["workload.rate"].astype(float)
    strategies = list(dict.fromkeys(rows["strategy"]))
    settings = list(dict.fromkeys(zip(rows["hardware"], rows["model"])))
    means = rows.groupby(["hardware", "model", "strategy", "workload.rate"], sort=False)[list(COLUMNS)].mean()
    table = means.reset_index().rename(columns=COLUMNS)
    fig, axes = plt.subplots(len(settings), 3, squeeze=False, figsize=(13, 3.6 * len(settings)))
    notes, heads = [], []
    for i, (hw, model) in enumerate(settings):
        d = rows[(rows["hardware"] == hw) & (rows["model"] == model)]
        slo = (d["serve_slo"].iloc[0], float(d["serve_slo_ttft_ms"].iloc[0]), float(d["serve_slo_tpot_ms"].iloc[0]))
        for j, (col, bound) in enumerate((("serve_ttft_p99_ms", slo[1]), ("serve_tpot_p99_ms", slo[2]),
                                          ("serve_goodput_rps", None))):
            ax = axes[i][j]
            curves(ax, d, strategies, "workload.rate", col, "request rate (req/s)", COLUMNS[col])
            if bound is not None:
                ax.axhline(bound, color="k", ls="--", lw=0.8)
                ax.set_yscale("log")
            ax.set_title(f"{model}, {hw}", fontsize=8)
        axes[i][0].legend(fontsize=6)
        caps = {s: capacity(d[d["strategy"] == s]) for s in strategies}
        top = float(d["workload.rate"].max())
        pairs = ranking(d, top)
        heads.append(f"{model}/{hw}: " + ", ".join(f"{s} {c:g}" for s, c in caps.items() if c == c))
        notes.append(f"**{model} on {hw}** (SLO {slo[0]}: p99 TTFT {slo[1]:g} ms, p99 TPOT {slo[2]:g} ms). "
                     "Capacity, the highest rate whose p99 TTFT and TPOT are within the SLO in every seed: "
                     + ", ".join(f"{s} {c:g} req/s" if c == c else f"{s} none" for s, c in caps.items())
                     + f". Goodput at {top:g} req/s, strategies by how many others each is above beyond the "
                     f"tolerance in every seed: {order_text(pairs, strategies)}."
                     + oracle_text(d, strategies))
    fig.suptitle(TITLE, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    text = ("\n\n".join(notes) + "\n\nEvery request arrives by a Poisson process at the rate shown and is served "
            "by the continuous scheduler (docs/SERVING.md); dashed lines are the SLO's bounds. Each strategy's "
            "decisions on one implementation (the mechanism comparison); " + common.seeds_text(rows) + "; "
            + common.margin_text() + ".")
    return common.write_result(out, ID, TITLE, table, fig,
                               {"verdict": common.NO_CLAIM, "run": str(run_dir),
                                "headline": "capacity (req/s): " + "; ".join(heads),
                                "paper": "none (serving page)"}, text)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
