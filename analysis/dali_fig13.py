# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""DALI Fig. 13: prefill speed on DeepSeek-V2-Lite over batch sizes
(64-token prompts), read from the Fig. 12 DeepSeek runs, with the paper's
average speedups beside the harness's.

    python3 analysis/dali_fig13.py --results results --out results/report"""

from __future__ import annotations

import sys


import common

# Registers this script with the report (common.figure_scripts): the paper, its figure or table, and
# what produces the rows it reads.
FIGURE = {"paper": "DALI", "figure": "Fig. 13",
          "suite": "suites/dali.toml (part dali-fig12-deepseek)"}

from dali_common import BASELINES, speed_checks, speed_figure, speedup_summary, with_summary_rows

FIG = "dali-fig13"
PART = "dali-fig12-deepseek"
TITLE = "DALI Fig. 13: prefill speed vs batch size, DeepSeek-V2-Lite (50% cache, RTX 3090)"


def run(results: str, out):
    run_dir, rows = common.find_part(results, PART, suites=("dali",), all_seeds=True)
    if rows is None:
        return None
    pv = common.paper_values("dali")["fig13"]
    checks = common.evaluate(rows, lambda d: speed_checks(d, "prefill_tokens_per_s", ["workload.batch_size"], pv))
    df = common.seed_mean(rows)
    sp, summary = speedup_summary(df, "prefill_tokens_per_s", ["workload.batch_size"], pv)
    mean = dict(zip(summary["DALI over"], summary["harness mean speedup"]))
    table = with_summary_rows(sp.rename(columns={"workload.batch_size": "batch"}), summary)
    notes = ("Prefill speed: prompt tokens per second of simulated prefill time, 64-token prompts, " + common.seeds_text(rows) + ". "
             "MoE-Lightning (paper 2.45x) is "
             "not compared: DALI ran it with as many MoE layers stored and executed on the GPU as matched DALI's "
             "memory use (DALI's Baselines paragraph), a split the paper does not give; the harness's "
             "moe-lightning preset is MoE-Lightning's own batch-throughput policy (docs/STRATEGIES.md). Checks (" + common.margin_text() + "): "
             + common.checks_text(checks) + f".\n\nPaper: {pv['source']}.")
    fig = speed_figure(df, "prefill_tokens_per_s", "prefill tokens/s", TITLE)
    return common.write_result(out, FIG, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": str(run_dir),
                                "paper": "DALI Fig. 13",
                                "headline": "DALI mean prefill speedup: " + ", ".join(
                                    f"{b} {mean[b]:.2f}x (paper {pv[b]:.2f}x)" for b in BASELINES)},
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
