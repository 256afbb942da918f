# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""DALI Fig. 12: decoding speed of llama.cpp, KTransformers (layer-wise),
HybriMoE and DALI over batch sizes on DeepSeek-V2-Lite, Qwen3-30B-A3B and
Mixtral (50% cache, RTX 3090), with the paper's average speedups beside the
harness's.

    python3 analysis/dali_fig12.py --results results --out results/report"""

from __future__ import annotations

import sys

import pandas as pd

import common
import matplotlib.pyplot as plt
from dali_common import BASELINES, SHORT, speed_checks, speed_figure, speedup_summary, with_summary_rows

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "DALI", "figure": "Fig. 12",
          "suite": "suites/dali.toml (parts dali-fig12-*)"}


FIG = "dali-fig12"
PARTS = ["dali-fig12-deepseek", "dali-fig12-qwen", "dali-fig12-mixtral"]
TITLE = "DALI Fig. 12: decode speed vs batch size (50% cache, RTX 3090)"
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
             "sizes 8-64 (our choice; the figure's axis values are not in the text). MoE-Lightning (paper 1.48x) is "
             "not compared: DALI ran it with as many MoE layers stored and executed on the GPU as matched DALI's "
             "memory use (DALI's Baselines paragraph), a split the paper does not give; the harness's "
             "moe-lightning preset is MoE-Lightning's own batch-throughput policy (docs/STRATEGIES.md). Checks (an effect counts above "
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
