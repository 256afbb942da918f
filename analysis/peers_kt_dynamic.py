# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""KTransformers' dynamic expert update against its frequency placement over GPU expert ratios, the claim of its
CPU-GPU expert scheduling documentation, on one implementation.

    python3 analysis/peers_kt_dynamic.py --results results --out results/report"""

from __future__ import annotations

import sys

import common
import matplotlib.pyplot as plt
import peers_common as pc

FIGURE = {"paper": "KTransformers", "figure": "Documentation: dynamic expert update vs frequency placement",
          "suite": "suites/peers-kt-dynamic.toml"}


PART = "peers-kt-dynamic"
TITLE = "KTransformers: dynamic expert update vs frequency placement (Qwen3-30B-A3B int4, RTX 4090, 1,024-token prompts)"
ID = "peers-kt-dynamic"
RATIO = "strategy.residency.cache_ratio"


def run(results: str, out):
    run_dir, seeded = pc.rows(results, PART)
    if seeded is None:
        return None
    pv = common.paper_values("peers")["kt_dynamic"]
    ratios = sorted(float(r) for r in seeded[RATIO].unique())

    def speed(d, s, r):
        x = d[(d["strategy"] == s) & (d[RATIO].astype(float) == r)]
        if x.empty:
            raise RuntimeError(f"expected strategy '{s}' at GPU expert ratio {r} in the {PART} run")
        return float(x["decode_tokens_per_s"].iloc[0])

    def measure(d):
        out = {}
        for r in ratios:
            paper = pv.get(f"dynamic.{r:g}", float("nan")) / pv.get(f"frequency.{r:g}", float("nan"))
            out[f"the dynamic update decodes faster than frequency placement at {100 * r:.0f}% GPU experts"] = \
                common.speedup(speed(d, "ktransformers-dynamic", r), speed(d, "ktransformers-prefill-gpu", r),
                               paper if paper == paper else None)
        return out

    checks = common.evaluate(seeded, measure)
    m = common.seed_mean(seeded)
    piv = m.pivot_table(index=RATIO, columns="strategy", values="decode_tokens_per_s")
    hit = m.pivot_table(index=RATIO, columns="strategy", values="decode_hit_rate_token_frac")
    table = piv.reset_index().rename(columns={RATIO: "GPU expert ratio"})
    table["harness dynamic / frequency"] = piv["ktransformers-dynamic"].values / piv["ktransformers-prefill-gpu"].values
    table["paper dynamic / frequency"] = [pv.get(f"dynamic.{r:g}", float("nan")) / pv.get(f"frequency.{r:g}",
                                                                                         float("nan"))
                                          for r in piv.index]
    table["decode hit rate, frequency"] = hit["ktransformers-prefill-gpu"].values
    table["decode hit rate, dynamic"] = hit["ktransformers-dynamic"].values
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    x = [100 * r for r in piv.index]
    for s, c in (("ktransformers-prefill-gpu", "#4878a8"), ("ktransformers-dynamic", "#d9a441")):
        axes[0].plot(x, piv[s], "o-", color=c, label=f"harness: {s}")
    axes[0].set_xlabel("GPU expert ratio (%)")
    axes[0].set_ylabel("decode tokens/s")
    axes[0].legend(fontsize=7)
    axes[1].plot(x, table["harness dynamic / frequency"], "o-", color="#4878a8", label="harness")
    axes[1].plot(x, table["paper dynamic / frequency"], "s", color="#a44", label="documentation")
    axes[1].set_xlabel("GPU expert ratio (%)")
    axes[1].set_ylabel("dynamic / frequency")
    axes[1].legend(fontsize=7)
    fig.suptitle(TITLE, fontsize=9)
    hs = table["harness dynamic / frequency"]
    notes = (
        "`ktransformers-prefill-gpu` is the frequency placement (each layer's most activated experts of a "
        "calibration workload) with the full-GPU fallback for steps of 512 tokens or more; "
        "`ktransformers-dynamic` adds the update: after such a step each layer's GPU experts become that step's "
        "most activated ones, copied inside GPU memory (`device_swaps`; the copy's time is not charged). "
        "`ktransformers-frequency` (no fallback) is shown in the CSV for the prefill. The documentation's table "
        "is serving throughput on ShareGPT with Qwen3-Next-80B (512 experts, top-10) on 4 x RTX 4090; its "
        "frequency placement ranks all layers' experts together, the harness's per layer; the harness measures "
        "decode tokens/s of 4 requests of 1,024 + 128 tokens at batch 1 on one RTX 4090. On the synthetic "
        "workload a request's prompt and its decode share a topic (docs/WORKLOADS.md), so a prompt's top "
        "experts are the decode's: the decode hit rate rises from "
        + ", ".join(f"{a:.2f} to {b:.2f}" for a, b in zip(table["decode hit rate, frequency"],
                                                           table["decode hit rate, dynamic"]))
        + ". Harness dynamic over frequency: " + ", ".join(f"{100 * r:.0f}% {v:.2f}x" for r, v in zip(piv.index, hs))
        + ". Numbers: " + common.seeds_text(seeded) + ". Checks (" + common.margin_text() + "): "
        + common.checks_text(checks) + f"\n\nSource: {pv['source']}; {pv['setting']}.")
    return common.write_result(out, ID, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": str(run_dir),
                                "headline": "dynamic / frequency " + ", ".join(
                                    f"{100 * r:.0f}% {v:.2f}x (doc {p:.2f}x)" for r, v, p in
                                    zip(piv.index, hs, table["paper dynamic / frequency"])),
                                "paper": "KTransformers documentation"}, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
