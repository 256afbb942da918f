# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Compares one strategy with every other strategy of a suite (by default
suites/compare.toml): decode tokens/s, TTFT and decode hit rate per model,
each as a ratio to the strategy under study, and a figure.

    python3 analysis/compare.py --strategy example-fifo [--results results] [--suite compare]
writes results/<suite>/<run>/figures/compare.{png,md,csv} and prints the table."""

from __future__ import annotations

import argparse
import sys

import pandas as pd

import common
import matplotlib.pyplot as plt
from matplotlib.patches import Patch


HIGHLIGHT, OTHER = "#d9a441", "#4878a8"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--results", default="results")
    ap.add_argument("--suite", default="compare")
    ap.add_argument("--strategy", required=True, help="the strategy under study")
    a = ap.parse_args(argv)
    run = common.latest_run(a.results, a.suite)
    if run is None:
        print(f"compare.py: error: expected a complete run in {a.results}/{a.suite}/, found none "
              f"(run build/bin/run_suite suites/{a.suite}.toml first)", file=sys.stderr)
        return 2
    df = common.load_runs(run)
    df = df[df["status"] == "ok"].drop_duplicates("case_id")
    if a.strategy not in set(df["strategy"]):
        print(f"compare.py: error: expected strategy '{a.strategy}' in {run}, found {sorted(set(df['strategy']))}",
              file=sys.stderr)
        return 2
    rows = []

    def implementation(r) -> str:
        """The implementation whose costs the strategy carries on this testbed (docs/COST_MODEL.md,
        "Implementations"): its stack and CPU kernel family, each with the profile entry applied and
        its evidence ("fitted" marks a constant fitted on a baseline's measured time)."""
        def part(kind):
            name, entry = r.get(f"implementation.{kind}", ""), r.get(f"implementation.{kind}_entry", "")
            ev = r.get(f"implementation.{kind}_evidence", "")
            return f"{name}" + (f" [{ev}]" if isinstance(ev, str) and ev else
                                " [profile default]" if entry == "profile default" else "")
        return f"stack {part('stack')}, CPU kernel {part('cpu_kernel')}"

    for model, g in df.groupby("model", sort=False):
        me = g[g["strategy"] == a.strategy].iloc[0]
        for _, r in g.iterrows():
            rows.append({"model": model, "strategy": r["strategy"],
                         "decode tok/s": r["decode_tokens_per_s"],
                         "vs " + a.strategy: r["decode_tokens_per_s"] / me["decode_tokens_per_s"],
                         "TTFT ms": r["ttft_mean_ms"],
                         "decode hit rate": r["decode_hit_rate_token_frac"],
                         "GPU token share": r["gpu_expert_token_frac"],
                         "layer overhead us": r.get("implementation.layer_overhead_us", float("nan")),
                         "implementation (costs carried)": implementation(r)})
    table = pd.DataFrame(rows)
    mixed = table["implementation (costs carried)"].nunique() > 1
    note = ("\nThe strategies run on different implementations (last column): each carries its own stack's and "
            "CPU kernel's costs on this testbed, fitted ones marked [fitted] (docs/TESTBEDS.md), so a speed ratio "
            "between two strategies on different implementations mixes their decisions with their "
            "implementations' costs; compare decisions between strategies on the same implementation.\n"
            if mixed else "")
    modes = sorted(set(df["run.comparison.mode"].dropna())) if "run.comparison.mode" in df else []
    what = {"mechanism": "every strategy on one implementation, so the table compares decisions",
            "as-published": "each system with the costs its paper or its testbed fit implies"}
    header = ("Comparison: " + (", ".join(f"{m} ({what.get(m, m)})" for m in modes) if modes else
                                "not recorded (results from an older build)")
              + "; docs/COST_MODEL.md, \"Two comparisons\".\n\n")
    print(header + common.markdown_table(table) + note)
    models = list(dict.fromkeys(table["model"]))
    # One panel per model, each with its own x scale (speeds differ by model),
    # strategies top to bottom in the suite's order, room for long names.
    longest = max(len(s) for s in table["strategy"])
    fig, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models) + 0.09 * longest, 0.32 * len(df["strategy"].unique()) + 1.8),
                             sharex=False, sharey=True, constrained_layout=True)
    axes = list(axes) if len(models) > 1 else [axes]
    for ax, model in zip(axes, models):
        t = table[table["model"] == model]
        colors = [HIGHLIGHT if s == a.strategy else OTHER for s in t["strategy"]]
        ax.barh(t["strategy"], t["decode tok/s"], color=colors)
        ax.set_title(model, fontsize=9)
        ax.set_xlabel("decode tokens/s")
        ax.tick_params(axis="y", labelsize=8)
    axes[0].invert_yaxis()  # the y axis is shared: this orders every panel
    axes[-1].legend(handles=[Patch(color=HIGHLIGHT, label=a.strategy), Patch(color=OTHER, label="baselines")],
                    fontsize=8, loc="upper right")
    fig.suptitle(f"{a.strategy} against the baselines ({run.name}, simulated)", fontsize=9)
    out = run / "figures"
    common.save_figure(fig, out / "compare.png")
    common.write_text_atomic(out / "compare.csv", table.to_csv(index=False))
    common.write_text_atomic(out / "compare.md", f"# {a.strategy} against the baselines\n\n" + header
                             + common.markdown_table(table) + note + f"\nrun: `{run}`\n")
    print(f"wrote {out / 'compare.png'} and {out / 'compare.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
