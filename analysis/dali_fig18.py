"""DALI Fig. 18(a)-(d): decode speed on Mixtral by prefetch size (a) and by
cached experts per layer (b); window-cache hit rate on DeepSeek by
(w_size, u_size) (c); Mixtral's hit rate per layer and group of 8 generated
tokens (d). The paper gives no numbers; its text states the trends.

    python3 analysis/dali_fig18.py --results results --out results/report"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import common  # noqa: E402

FIG = "dali-fig18"
TITLE = "DALI Fig. 18(a)-(d): prefetch size, cached experts, (w_size, u_size), hit rate over generation"


def run(results: str, out):
    run_a, mix = common.find_part(results, "dali-fig18-mixtral", suites=("dali",))
    run_c, ds = common.find_part(results, "dali-fig18c", suites=("dali",))
    run_d, gen = common.find_part(results, "dali-fig18d", suites=("dali",))
    if mix is None and ds is None and gen is None:
        return None
    pv = common.paper_values("dali")["fig18"]
    rows, checks = [], {}
    if mix is not None:
        a = mix[mix["strategy"].isin(["prefetch-size", "no-prefetch"])].copy()
        a["ps"] = a["strategy.prefetcher.params.size"].where(a["strategy"] == "prefetch-size", 0).astype(float)
        a = a.sort_values("ps")
        for _, r in a.iterrows():
            rows.append({"panel": "a", "setting": f"PS={int(r['ps'])}", "decode tok/s": float(r["decode_tokens_per_s"]),
                         "decode hit rate": float(r["decode_hit_rate_token_frac"])})
        with_pf = a[a["ps"] > 0]
        checks["(a) PS=1 fastest"] = bool(with_pf.iloc[0]["decode_tokens_per_s"] >= with_pf["decode_tokens_per_s"].max())
        b = mix[mix["strategy"] == "cached-experts"].copy()
        b["slots"] = b["strategy.residency.slots_per_layer"].astype(int)
        b = b.sort_values("slots")
        for _, r in b.iterrows():
            rows.append({"panel": "b", "setting": f"{r['slots']} cached/layer",
                         "decode tok/s": float(r["decode_tokens_per_s"]),
                         "decode hit rate": float(r["decode_hit_rate_token_frac"])})
        checks["(b) speed rises with cached experts"] = bool(b["decode_tokens_per_s"].is_monotonic_increasing)
    if ds is not None:
        c = ds.copy()
        c["w"] = c["strategy.cache.params.w_size"].astype(int)
        c["u"] = c["strategy.cache.params.u_size"].astype(int)
        piv = c.pivot_table(index="w", columns="u", values="decode_hit_rate_token_frac")
        for w, r in piv.iterrows():
            for u, h in r.items():
                rows.append({"panel": "c", "setting": f"w={w}, u={u}", "decode hit rate": float(h)})
        checks["(c) smaller w_size, higher hit rate (every u_size)"] = bool(
            (piv.diff(axis=0).dropna() <= 1e-12).all().all())
        checks["(c) larger u_size, higher hit rate (every w_size)"] = bool(
            (piv.diff(axis=1).dropna(axis=1) >= -1e-12).all().all())
    grid = None
    if gen is not None:
        r = gen.iloc[0]
        if "decode_hit_rate_by_step_group_frac" not in r or not isinstance(r["decode_hit_rate_by_step_group_frac"], list):
            raise RuntimeError(f"{run_d}: no decode_hit_rate_by_step_group_frac (results from an older build; "
                               "re-run part dali-fig18d)")
        grid = np.array([[np.nan if v is None else v for v in g] for g in r["decode_hit_rate_by_step_group_frac"]])
        means = np.nanmean(grid, axis=1)
        for i, m in enumerate(means):
            rows.append({"panel": "d", "setting": f"tokens {8 * i}-{8 * i + 7}", "decode hit rate": float(m),
                         "best layer": float(np.nanmax(grid[i]))})
        checks["(d) hit rate rises over generation (last group above the first)"] = bool(means[-1] > means[0])
        checks["(d) some layer reaches 100% in some group"] = bool(np.nanmax(grid) >= 0.999)
    table = pd.DataFrame(rows)
    notes = ("Checks: " + common.checks_text(checks)
             + f".\n\nPaper: {pv['source']}. Stated trends: (a) {pv['trend_a']}; (b) {pv['trend_b']}; "
             f"(c) {pv['trend_c']}; (d) {pv['trend_d']}. (d) rows are the mean over layers of each 8-token group's "
             "hit rate (8 batches of 4 averaged; the paper shows one run), with the best layer beside it.")
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.3))
    if grid is not None:
        im = axes[3].imshow(grid.T, aspect="auto", origin="lower", vmin=0, vmax=1, cmap="viridis")
        axes[3].set_xlabel("8-token group")
        axes[3].set_ylabel("MoE layer")
        axes[3].set_title("(d) hit rate by layer over generation", fontsize=8)
        fig.colorbar(im, ax=axes[3])
    for ax, panel, col in zip(axes, "abc", ["decode tok/s", "decode tok/s", "decode hit rate"]):
        t = table[table["panel"] == panel]
        if not t.empty:
            ax.bar(t["setting"], t[col])
            ax.tick_params(axis="x", labelrotation=60, labelsize=6)
            ax.set_title(f"({panel})", fontsize=8)
            ax.set_ylabel(col)
    fig.suptitle(TITLE, fontsize=9)
    runs = "; ".join(str(r) for r in (run_a, run_c, run_d) if r is not None)
    return common.write_result(out, FIG, TITLE, table, fig,
                               {"trend_reproduced": all(checks.values()), "run": runs, "paper": "DALI Fig. 18",
                                "headline": common.checks_text(checks)},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
