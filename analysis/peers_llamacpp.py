# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""llama.cpp's prompt-processing offload threshold (ggml-cuda offload_op, 32 tokens) against ik_llama.cpp's
(PR 520: 32 x experts / top-k): where copying a CPU layer's used experts to the GPU starts to pay, over prompt
lengths, on one implementation.

    python3 analysis/peers_llamacpp.py --results results --out results/report"""

from __future__ import annotations

import sys

import common
import matplotlib.pyplot as plt
import peers_common as pc

FIGURE = {"paper": "llama.cpp", "figure": "Prompt offload threshold (mainline 32, ik_llama.cpp 32 x E/k)",
          "suite": "suites/peers-llamacpp.toml"}


TITLE = "llama.cpp: TTFT with and without the prompt offload, over prompt lengths (RTX A6000, 25% GPU budget)"
ID = "peers-llamacpp"


def ik_threshold(row) -> float:
    return 32.0 * float(row["model.routed_experts"]) / float(row["model.top_k"])


def run(results: str, out):
    run_dir, seeded = pc.rows(results, pc.LLAMACPP_PART)
    if seeded is None:
        return None
    pv = common.paper_values("peers")["llamacpp"]
    thr = {m: ik_threshold(g.iloc[0]) for m, g in seeded.groupby("model")}

    def ttft(d, m, p, s):
        r = d[(d["model"] == m) & (d["workload.prompt_len"].astype(int) == p) & (d["strategy"] == s)]
        if r.empty:
            raise RuntimeError(f"expected strategy '{s}' at prompt {p} on '{m}' in the peers-llamacpp run")
        return float(r["ttft_mean_ms"].iloc[0])

    def measure(d):
        cells = [(m, int(p)) for m, g in d.groupby("model") for p in sorted(g["workload.prompt_len"].unique())]
        above = [(m, p) for m, p in cells if p >= thr[m]]
        below = [(m, p) for m, p in cells if pv["offload_min_batch"] <= p < thr[m]]
        return {
            "mainline: the offload is faster from 32 prompt tokens (every model and prompt)": common.every(
                common.more(ttft(d, m, p, "llamacpp"), ttft(d, m, p, "llamacpp-offload")) for m, p in cells),
            "ik_llama.cpp: the offload is faster from 32 x E/k prompt tokens (every model and prompt above)":
                common.every(common.more(ttft(d, m, p, "llamacpp"), ttft(d, m, p, "llamacpp-offload"))
                             for m, p in above),
            "ik_llama.cpp: below 32 x E/k (from 32) not offloading is faster (every model and prompt)":
                common.every(common.more(ttft(d, m, p, "llamacpp-offload"), ttft(d, m, p, "llamacpp"))
                             for m, p in below),
        }

    checks = common.evaluate(seeded, measure)
    mean = common.seed_mean(seeded)
    piv = mean.pivot_table(index=["model", "workload.prompt_len"], columns="strategy", values="ttft_mean_ms")
    table = piv.reset_index().rename(columns={"workload.prompt_len": "prompt tokens", "llamacpp": "TTFT no offload (ms)",
                                              "llamacpp-offload": "TTFT offload from 32 (ms)",
                                              "llamacpp-offload-ik": "TTFT offload from 32 E/k (ms)"})
    table["model"] = table["model"].map(lambda m: pc.SHORT.get(m, m))
    table["offload / no offload"] = table["TTFT offload from 32 (ms)"] / table["TTFT no offload (ms)"]
    models = list(piv.index.get_level_values(0).unique())
    fig, axes = plt.subplots(1, len(models), figsize=(4 * len(models), 3.4))
    axes = axes if len(models) > 1 else [axes]
    cross = {}
    for ax, m in zip(axes, models):
        g = piv.loc[m]
        for s, c in (("llamacpp", "#4878a8"), ("llamacpp-offload", "#d9a441")):
            ax.plot(g.index, g[s], "o-", color=c, label=s)
        ax.axvline(thr[m], color="#a44", ls="--", lw=1, label=f"32 E/k = {thr[m]:.0f}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("prompt tokens")
        ax.set_ylabel("TTFT (ms)")
        ax.set_title(pc.SHORT.get(m, m), fontsize=9)
        ax.legend(fontsize=7)
        faster = [p for p in g.index if g.loc[p, "llamacpp-offload"] < g.loc[p, "llamacpp"]]
        cross[pc.SHORT.get(m, m)] = (min(faster) if faster else None, thr[m])
    fig.suptitle(TITLE, fontsize=9)
    notes = (
        "`llamacpp` keeps the last layers' experts on the GPU (25% of the experts) and runs the rest on the CPU; "
        "`llamacpp-offload` copies a CPU layer's used experts to the GPU for a step of 32 or more tokens (mainline "
        "ggml-cuda), `llamacpp-offload-ik` from 32 x experts / top-k (ik_llama.cpp PR 520); copies are not kept. "
        "Two sequences prefilled one at a time, 3 workload seeds. Shortest prompt where the offload was faster, "
        "against ik_llama.cpp's threshold: "
        + ", ".join(f"{m} {c[0]} ({c[1]:.0f})" for m, c in cross.items())
        + ". No paper: the thresholds are the two projects' code (read, not copied), judged on the direction of "
        "the TTFT difference. Numbers: " + common.seeds_text(seeded) + ". Checks (" + common.margin_text() + "): "
        + common.checks_text(checks) + f"\n\nSource: {pv['source']}; {pv['setting']}.")
    return common.write_result(out, ID, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": str(run_dir),
                                "headline": "offload pays from " + ", ".join(
                                    f"{m} {c[0]} tokens (ik threshold {c[1]:.0f})" for m, c in cross.items()),
                                "paper": "llama.cpp / ik_llama.cpp code"}, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
