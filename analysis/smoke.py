# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Figures of the default suite (suites/smoke.toml): decode TBT, TTFT and
decode hit rate per strategy, from the latest complete run in results/smoke.

    python3 analysis/smoke.py --results results
writes results/smoke/<run>/figures/smoke.png and smoke.md."""

from __future__ import annotations

import argparse
import sys

import common
import matplotlib.pyplot as plt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--results", default="results")
    ap.add_argument("--suite", default="smoke")
    a = ap.parse_args(argv)
    run = common.latest_run(a.results, a.suite)
    if run is None:
        print(f"smoke.py: error: expected a complete run in {a.results}/{a.suite}/, found none "
              f"(run build/bin/run_suite suites/smoke.toml first)", file=sys.stderr)
        return 2
    try:
        df = common.load_runs(run)  # checked: complete, finite, unique rows of this run's cases
    except common.RunsError as e:
        print(f"smoke.py: error: {e}", file=sys.stderr)
        return 2
    df = df[df["status"] == "ok"].drop_duplicates("case_id")
    if df.empty:
        print(f"smoke.py: error: expected successful cases in {run}, found none", file=sys.stderr)
        return 2
    cols = ["strategy", "ttft_mean_ms", "tbt_mean_ms", "decode_tokens_per_s", "decode_hit_rate_token_frac",
            "gpu_expert_token_frac", "h2d_bytes"]
    table = df[cols].copy()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4), sharey=True)
    for ax, (col, title) in zip(axes, [("tbt_mean_ms", "decode: time between tokens (ms)"),
                                       ("ttft_mean_ms", "prefill: time to first token (ms)"),
                                       ("decode_hit_rate_token_frac", "decode: expert hit rate")]):
        ax.barh(table["strategy"], table[col].fillna(0), color="#4878a8")
        for y, v in enumerate(table[col]):  # a metric the case does not have is labelled, not a 0-length bar
            if v != v:
                ax.text(0, y, " n/a", va="center", fontsize=8)
        ax.set_title(title)
    axes[0].invert_yaxis()
    m = common.manifest(run)
    fig.suptitle(f"{m['suite']['description']} (simulated, {m['provenance']['git_commit'][:10]})", fontsize=9)
    out = run / "figures"
    common.save_figure(fig, out / "smoke.png")
    common.write_text_atomic(out / "smoke.md", f"# {m['suite']['name']}: {m['suite']['description']}\n\n"
                             + common.markdown_table(table) + f"\nrun: `{run}`\n")
    print(f"wrote {out / 'smoke.png'} and {out / 'smoke.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
