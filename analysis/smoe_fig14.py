# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""SMoE Fig. 14: decode throughput and hit rate against the number of
prefetched experts per layer, layer-wise vs token-wise vs Flex (DeepSeek-V3,
8 cached experts per layer); the paper states trends.

    python3 analysis/smoe_fig14.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common
import matplotlib.pyplot as plt

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "SMoE", "figure": "Fig. 14",
          "suite": "suites/ablation.toml (part smoe-fig14)"}


PART = "smoe-fig14"
TITLE = "SMoE Fig. 14: prefetch count vs throughput and hit rate (DeepSeek-V3, 8 slots/layer)"
AXIS = {"token-wise": "strategy.prefetcher.params.n", "flex": "strategy.prefetcher.params.n",
        "layer-wise": "strategy.prefetcher.params.max_prefetch",
        # Oracle bound (not in the paper): the layer-wise prefetcher with a perfect predictor; reported, not checked.
        "layer-wise-oracle": "strategy.prefetcher.params.max_prefetch"}


def run(results: str, out):
    run_dir, seeded = common.find_part(results, PART, all_seeds=True)
    if seeded is None:
        return None
    pv = common.paper_values("smoe")["fig14"]

    def tabulate(df):
        init = df[df["strategy"] == "initial-cache"].iloc[0]
        recs = [{"method": m, "prefetch": -1, "decode tok/s": float(init["decode_tokens_per_s"]),
                 "hit rate": float(init["decode_hit_rate_token_frac"]),
                 "wait cache (ms/token)": float(init["bd_wait_cache_ms_per_token"])} for m in AXIS]
        for m, col in AXIS.items():
            for _, r in df[df["strategy"] == m].iterrows():
                # Every method has its own point at 0 (prediction, no prefetch): the
                # oracle's once was left out, leaving a gap in its line.
                recs.append({"method": m, "prefetch": int(r[col]), "decode tok/s": float(r["decode_tokens_per_s"]),
                             "hit rate": float(r["decode_hit_rate_token_frac"]),
                             "wait cache (ms/token)": float(r["bd_wait_cache_ms_per_token"])})
        return pd.DataFrame(recs).sort_values(["method", "prefetch"]).reset_index(drop=True)

    def series_of(t, m, c):
        return t[t["method"] == m].set_index("prefetch")[c]

    def measure(df):
        t = tabulate(df)
        tw_tps, tw_hit = series_of(t, "token-wise", "decode tok/s"), series_of(t, "token-wise", "hit rate")
        lw_tps, lw_hit = series_of(t, "layer-wise", "decode tok/s"), series_of(t, "layer-wise", "hit rate")
        nan = float("nan")
        return {
            "token-wise: throughput rises at 1-2 (over prediction without prefetch)": common.more(
                max(tw_tps.get(1, nan), tw_tps.get(2, nan)), tw_tps[0]),
            "token-wise: hit rate rises at 1-2 (over the initial cache)": common.more_abs(
                max(tw_hit.get(1, nan), tw_hit.get(2, nan)), tw_hit[-1]),
            "layer-wise: hit rate rises with the count (4 over the initial cache)": common.more_abs(
                lw_hit.get(4, nan), lw_hit[-1]),
            "layer-wise: throughput falls with the count (4 below 1)": common.more(lw_tps.get(1, nan),
                                                                                   lw_tps.get(4, nan)),
            "token-wise beats layer-wise at its best count": common.more(tw_tps.max(), lw_tps.max()),
        }

    checks = common.evaluate(seeded, measure)
    table = tabulate(common.seed_mean(seeded))

    def series(m, c):
        return series_of(table, m, c)

    bound = ""
    if (table["method"] == "layer-wise-oracle").any():
        oracle, lw = series_of(table, "layer-wise-oracle", "hit rate"), series_of(table, "layer-wise", "hit rate")
        lo, hi = oracle.index.min(), oracle.index.max()
        bound = (f" Layer-wise with a perfect predictor (oracle bound, not checked): hit rate {oracle[lo]:.3f} at {lo} "
                 f"to {oracle[hi]:.3f} at {hi}, against {lw.get(lo, float('nan')):.3f} to {lw.get(hi, float('nan')):.3f} "
                 "with gate reuse (docs/STRATEGIES.md, SMoE Fig. 14's layer-wise curve).")
    notes = ("-1: only the initial cache (no predictor); 0: prediction without prefetch. Paper trends: "
             f"{pv['trend_layerwise']}; {pv['trend_tokenwise']}; {pv['trend_flex']}." + bound + " Numbers: "
             + common.seeds_text(seeded) + ". Checks (" + common.margin_text() + "): "
             + common.checks_text(checks)
             + f".\n\nPaper: {pv['source']}; {pv['setting']}.")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.9))
    for m in AXIS:
        axes[0].plot(series(m, "decode tok/s").index, series(m, "decode tok/s").values, "o-", label=m)
        axes[1].plot(series(m, "hit rate").index, series(m, "hit rate").values, "o-", label=m)
    axes[0].set_title("decode tokens/s")
    axes[1].set_title("decode hit rate")
    # The two points left of 1 are not counts: say what they are on the axis.
    counts = sorted(int(x) for x in table["prefetch"].unique())
    labels = ["initial\ncache only" if x == -1 else "0: predict,\nno prefetch" if x == 0 else str(x) for x in counts]
    for ax in axes:
        ax.set_xticks(counts)
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_xlabel("prefetched experts per layer")
    axes[0].legend(fontsize=8)
    fig.suptitle(TITLE + " (harness; the paper gives trends)", fontsize=9)
    return common.write_result(out, PART, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": str(run_dir), "paper": "SMoE Fig. 14",
                                "headline": common.checks_text(checks)},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
