# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Expert Deferral's decode gain against the GPU's decode-kernel memory
efficiency (suites/deferral-sensitivity.toml). Not a paper
figure: prints, per model and hbm_efficiency, the GPU share of the step
without deferral and the deferral gain, seed means (docs/STRATEGIES.md,
"Expert Deferral against the paper").

    python3 analysis/deferral_sensitivity.py --results results"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

import common


def table(results: str):
    run = common.latest_run(results, "deferral-sensitivity")
    if run is None:
        raise SystemExit(f"deferral_sensitivity: expected a complete run of suite deferral-sensitivity "
                         f"under {results}/, found none (run build/bin/run_suite "
                         f"suites/deferral-sensitivity.toml first)")
    df = common.load_runs(run)
    eff = "hardware.gpu.hbm_efficiency"
    g = df.groupby(["model", eff, "strategy"])[["decode_tokens_per_s", "gpu_util_frac",
                                                  "cpu_util_frac"]].mean()
    rows = []
    for (model, e), sub in g.groupby(level=[0, 1]):
        base = sub.loc[(model, e, "ktransformers")]
        dfr = sub.loc[(model, e, "ktransformers-deferral")]
        rows.append({"model": model, "hbm_efficiency": e,
                     "GPU share (no deferral)": round(base["gpu_util_frac"], 3),
                     "CPU share (no deferral)": round(base["cpu_util_frac"], 3),
                     "deferral gain %": round(100 * (dfr["decode_tokens_per_s"] /
                                                     base["decode_tokens_per_s"] - 1), 1)})
    return run, pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="results")
    a = ap.parse_args(argv)
    run, t = table(a.results)
    print(f"# Expert Deferral gain vs GPU efficiency ({run})\n")
    print(common.markdown_table(t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
