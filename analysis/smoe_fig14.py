"""SMoE Fig. 14: decode throughput and hit rate against the number of
prefetched experts per layer, layer-wise vs token-wise vs Flex (DeepSeek-V3,
8 cached experts per layer); the paper states trends.

    python3 analysis/smoe_fig14.py --results results --out results/report"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import common  # noqa: E402

PART = "smoe-fig14"
TITLE = "SMoE Fig. 14: prefetch count vs throughput and hit rate (DeepSeek-V3, 8 slots/layer)"
AXIS = {"token-wise": "strategy.prefetcher.params.n", "flex": "strategy.prefetcher.params.n",
        "layer-wise": "strategy.prefetcher.params.max_prefetch"}


def run(results: str, out):
    run_dir, df = common.find_part(results, PART)
    if df is None:
        return None
    pv = common.paper_values("smoe")["fig14"]
    init = df[df["strategy"] == "initial-cache"].iloc[0]
    recs = [{"method": m, "prefetch": -1, "decode tok/s": float(init["decode_tokens_per_s"]),
             "hit rate": float(init["decode_hit_rate_token_frac"]),
             "wait cache (ms/token)": float(init["bd_wait_cache_ms_per_token"])} for m in AXIS]
    for m, col in AXIS.items():
        for _, r in df[df["strategy"] == m].iterrows():
            recs.append({"method": m, "prefetch": int(r[col]), "decode tok/s": float(r["decode_tokens_per_s"]),
                         "hit rate": float(r["decode_hit_rate_token_frac"]),
                         "wait cache (ms/token)": float(r["bd_wait_cache_ms_per_token"])})
    table = pd.DataFrame(recs).sort_values(["method", "prefetch"]).reset_index(drop=True)

    def series(m, c):
        return table[table["method"] == m].set_index("prefetch")[c]

    tw_tps, tw_hit = series("token-wise", "decode tok/s"), series("token-wise", "hit rate")
    lw_tps, lw_hit = series("layer-wise", "decode tok/s"), series("layer-wise", "hit rate")
    checks = {
        "token-wise: hit rate and throughput rise at 1-2": bool(max(tw_tps.get(1, 0), tw_tps.get(2, 0)) > tw_tps[0]
                                                               and max(tw_hit.get(1, 0), tw_hit.get(2, 0)) > tw_hit[-1]),
        "layer-wise: hit rate rises with the count": bool(lw_hit.get(4, 0) > lw_hit[-1] + 0.01),
        "layer-wise: throughput falls with the count": bool(lw_tps.get(4, 0) < lw_tps.get(1, 0)),
        "token-wise beats layer-wise at its best count": bool(tw_tps.max() > lw_tps.max()),
    }
    reproduced = all(checks.values())
    notes = ("-1: only the initial cache (no predictor); 0: prediction without prefetch. Paper trends: "
             f"{pv['trend_layerwise']}; {pv['trend_tokenwise']}; {pv['trend_flex']}. Checks: "
             + common.checks_text(checks)
             + f".\n\nPaper: {pv['source']}; {pv['setting']}.")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for m in AXIS:
        axes[0].plot(series(m, "decode tok/s").index, series(m, "decode tok/s").values, "o-", label=m)
        axes[1].plot(series(m, "hit rate").index, series(m, "hit rate").values, "o-", label=m)
    axes[0].set_title("decode tokens/s")
    axes[1].set_title("decode hit rate")
    for ax in axes:
        ax.set_xlabel("prefetched experts per layer")
    axes[0].legend(fontsize=8)
    fig.suptitle(TITLE + " (harness; the paper gives trends)", fontsize=9)
    return common.write_result(out, PART, TITLE, table, fig,
                               {"trend_reproduced": reproduced, "run": str(run_dir), "paper": "SMoE Fig. 14",
                                "headline": common.checks_text(checks)},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
