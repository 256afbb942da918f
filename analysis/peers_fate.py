# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Fate (arXiv 2502.12224), its abstract's claims on one implementation: faster than load on demand and
than an expert-activation-path method (MoE-Infinity here) in prefill and decode, expert hit rate up to 99%;
Fate's decisions alone (`fate`, every copy at the suite's precision) and with its code's INT2 copies
(`fate-int2`), the code's INT4 re-copy after computing (`fate-int2-code`) shown beside them.

    python3 analysis/peers_fate.py --results results --out results/report"""

from __future__ import annotations

import sys

import common
import matplotlib.pyplot as plt
import peers_common as pc

FIGURE = {"paper": "Fate", "figure": "Abstract (speedups over load on demand and EAP; hit rate)",
          "suite": "suites/peers.toml"}


TITLE = "Fate against load on demand and MoE-Infinity (batch 1, 25% GPU budget, RTX A6000 and RTX 3090)"
ID = "peers-fate"
SHOWN = ["gpu-ondemand", "moe-infinity", "fate", "fate-uniform", "fate-int2", "fate-int2-code"]


def lead_text(seeded) -> str:
    """One expert copy against one decode layer's GPU work, measured on the first model's load-on-demand rows."""
    d = seeded[(seeded["strategy"] == "gpu-ondemand") & (seeded["hardware"] == "hybrimoe-a6000")]
    if d.empty:
        return ""
    r = d.iloc[0]
    copies = float(r["demand_loads"]) + float(r["prefetch_loads"])
    layers = float(r["model.num_layers"]) - float(r["model.first_dense_layers"])
    copy_ms = (float(r["h2d_bytes"]) / copies / (float(r["hardware.link.h2d_gbps"]) * 1e9) * 1e3
               + float(r["hardware.link.latency_us"]) / 1e3) if copies else float("nan")
    layer_ms = (float(r["bd_attention_ms_per_token"]) + float(r["bd_gpu_compute_ms_per_token"])) / layers
    return (f"on {pc.label((r['hardware'], r['model']))} one expert copy takes {copy_ms:.2f} ms and a decode "
            f"layer's GPU work (attention and experts) {layer_ms:.2f} ms,")


def run(results: str, out):
    run_dir, seeded = pc.rows(results)
    if seeded is None:
        return None
    pv = common.paper_values("peers")["fate"]

    def measure(d):
        ms = pc.settings(d)
        v = lambda m, s, c: pc.value(d, m, s, c)  # noqa: E731
        out = {}
        # "Up to" speedups are maxima over the paper's settings: the direction is judged on every model and
        # testbed, the
        # magnitude is not (the harness's models, budget and testbed are not the paper's).
        out["Fate decodes faster than load on demand (every model and testbed)"] = common.every_claim(
            common.speedup(v(m, "fate", "decode_tokens_per_s"), v(m, "gpu-ondemand", "decode_tokens_per_s"))
            for m in ms)
        out["Fate prefills faster than load on demand (every model and testbed)"] = common.every_claim(
            common.faster(v(m, "gpu-ondemand", "ttft_mean_ms"), v(m, "fate", "ttft_mean_ms")) for m in ms)
        out["Fate decodes faster than MoE-Infinity, an activation-path method (every model and testbed)"] = common.every_claim(
            common.speedup(v(m, "fate", "decode_tokens_per_s"), v(m, "moe-infinity", "decode_tokens_per_s"))
            for m in ms)
        out["Fate prefills faster than MoE-Infinity (every model and testbed)"] = common.every_claim(
            common.faster(v(m, "moe-infinity", "ttft_mean_ms"), v(m, "fate", "ttft_mean_ms")) for m in ms)
        # The abstract's Fate includes its "tailored quantization" for IO efficiency: the same two claims with
        # the code's INT2 copies (fate-int2; load on demand copies the suite's int4, as Fate's cache holds).
        out["Fate with its INT2 copies decodes faster than load on demand (every model and testbed)"] = \
            common.every_claim(common.speedup(v(m, "fate-int2", "decode_tokens_per_s"),
                                              v(m, "gpu-ondemand", "decode_tokens_per_s")) for m in ms)
        out["Fate with its INT2 copies prefills faster than load on demand (every model and testbed)"] = \
            common.every_claim(common.faster(v(m, "gpu-ondemand", "ttft_mean_ms"), v(m, "fate-int2", "ttft_mean_ms"))
                               for m in ms)
        # A hit rate near 1 is judged by its complement: 99% means one miss in a hundred, and 86% (within 25% of
        # 0.99) is fourteen times as many.
        best = max(v(m, "fate", "decode_hit_rate_token_frac") for m in ms)
        out["Fate's decode miss rate is the paper's 1% (best model and testbed)"] = common.within(1.0 - best,
                                                                                    1.0 - pv["hit_rate"])
        return out

    checks = common.evaluate(seeded, measure)
    table = pc.per_model_table(seeded, SHOWN, {
        "decode_tokens_per_s": "decode tokens/s", "ttft_mean_ms": "TTFT (ms)",
        "decode_hit_rate_token_frac": "decode hit rate", "prefill_hit_rate_token_frac": "prefill hit rate",
        "prefetch_precision_frac": "prefetch precision", "prefetch_dropped_late": "prefetches dropped late",
        "reduced_copies": "INT2 copies", "recopies": "INT4 re-copies"})
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, col, label in ((axes[0], "decode tokens/s", "decode tokens/s"), (axes[1], "decode hit rate",
                                                                            "decode hit rate")):
        piv = table.pivot(index="setting", columns="strategy", values=col)[SHOWN]
        piv.plot.bar(ax=ax, rot=20, width=0.8, fontsize=7)
        ax.set_ylabel(label)
        ax.set_xlabel("")
        ax.legend(fontsize=7)
    axes[1].axhline(pv["hit_rate"], color="#a44", ls="--", lw=1, label="paper: 99%")
    fig.suptitle(TITLE, fontsize=9)
    fate = table[table["strategy"] == "fate"].set_index("setting")
    lod = table[table["strategy"] == "gpu-ondemand"].set_index("setting")
    sp = (fate["decode tokens/s"] / lod["decode tokens/s"])
    int2 = table[table["strategy"] == "fate-int2"].set_index("setting")
    sp2 = (int2["decode tokens/s"] / lod["decode tokens/s"])
    code = table[table["strategy"] == "fate-int2-code"].set_index("setting")
    sp3 = (code["decode tokens/s"] / lod["decode tokens/s"])
    notes = (
        "Fate as its code runs (configs/strategies/fate.toml: cross-layer gate prefetch of each token's top k + 1 "
        "into a buffer beside the cache, per-layer ARC admitting every used expert, the first four MoE layers' "
        "experts all cached and an equal share for the rest); `fate-uniform` is the same with the budget split "
        "evenly, to show what the shallow-favoring split does here. Load on demand is `gpu-ondemand` (LRU). "
        "The paper's numbers are 'up to' maxima over its settings (Qwen1.5-MoE, DeepSeekMoE on edge GPUs): "
        f"decode {pv['decode_speedup_vs_load_on_demand.max']}x and prefill "
        f"{pv['prefill_speedup_vs_load_on_demand.max']}x over load on demand, {pv['decode_speedup_vs_eap.max']}x "
        f"and {pv['prefill_speedup_vs_eap.max']}x over the activation-path method, hit rate 99%; the harness "
        "judges the direction on every model and testbed and the best one's miss rate against 1%. Why Fate can lose here: "
        + lead_text(seeded) + " so the one-layer lead of cross-layer prefetch covers few of the k + 1 copies a "
        "layer asks for (most are dropped as late, see the table), and at a 25% budget the shallow split leaves "
        "the deeper layers fewer slots than the even split (`fate-uniform`; Mixtral: 1 of 8 per layer). "
        "`fate-int2` adds the code's INT2 copies (configs/strategies/fate-int2.toml: every on-demand copy and "
        "the prefetches of the least-predicted experts whose votes add up to at most 30% of the layer's move "
        "0.8 of the INT4 bytes, the code's formats' ratio); the quality they cost is not measured here. "
        "`fate-int2-code` adds what the code does after an expert computes: it dequantised the expert in "
        "place, so one that stays cached has its INT4 weights copied again from host memory (every MoE layer "
        "but the first), and cannot run again before that copy lands; shown, not judged (the paper's design "
        "need not pay it). "
        "Decode speedup over load on demand, Fate's decisions alone: "
        + ", ".join(f"{m} {sp[m]:.2f}x" for m in sp.index) + "; with the INT2 copies: "
        + ", ".join(f"{m} {sp2[m]:.2f}x" for m in sp2.index) + "; with the code's re-copy too: "
        + ", ".join(f"{m} {sp3[m]:.2f}x" for m in sp3.index) + ". Numbers: " + common.seeds_text(seeded)
        + ". Checks (" + common.margin_text() + "): " + common.checks_text(checks)
        + f"\n\nPaper: {pv['source']}; {pv['setting']}.")
    return common.write_result(out, ID, TITLE, table, fig,
                               {"verdict": common.figure_verdict(checks), "run": str(run_dir),
                                "headline": "decode speedup over load on demand "
                                + ", ".join(f"{m} {sp[m]:.2f}x" for m in sp.index)
                                + "; with its INT2 copies "
                                + ", ".join(f"{m} {sp2[m]:.2f}x" for m in sp2.index)
                                + f" (paper up to {pv['decode_speedup_vs_load_on_demand.max']}x); best hit rate "
                                f"{fate['decode hit rate'].max():.2f} (paper 0.99)",
                                "paper": "Fate, arXiv 2502.12224"}, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
