# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""CPU expert kernels on this machine: KTransformers Fig. 3 and
Fig. 7 regenerated with this CPU's kernels, from the Google Benchmark JSON
that `make bench-kernels` writes (results/bench/bench_expert.json).

Per kernel and dtype: time, weight GB/s and TFLOP/s of one DeepSeek-V3
expert by tokens per expert, and their ratios to this machine's read
bandwidth and dot-product peak measured in the same run (AVX-512 BF16 or
VNNI, and the AMX bf16 tile peak where the CPU has AMX). The paper's values
(analysis/paper_values/ktransformers.toml) are on a 36-core Xeon with AMX;
only ratios compare, never absolute numbers.

A benchmark JSON measured elsewhere (docs/measurements/*/bench/) renders
the same way: --results points at the folder that holds bench/.

The real backend's kernel targets, stated met or not: decode shapes (1-4 tokens) at least
80% of the measured bandwidth; prefill shapes (256 tokens and more) at least
40% of the peak; own kernels at least as fast as oneDNN on every shape.

    python3 analysis/kernels.py --results results --out results/report
    python3 analysis/kernels.py --results docs/measurements/xeon-amx-16t-b --out results/report/xeon-amx"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pandas as pd

import common
import matplotlib.pyplot as plt

TITLE = "CPU expert kernels: DeepSeek-V3 expert by tokens per expert (KTransformers Fig. 3 and 7 on this CPU)"
BW_TARGET, PEAK_TARGET = 0.80, 0.40
DECODE, PREFILL = (1, 2, 4), 256


def load(path: pathlib.Path):
    d = json.loads(path.read_text())
    rows = []
    # The prefill target is a share of the AMX bf16 peak: every
    # kernel is measured against it (older runs' JSON gave amx-quant's rows an
    # amx_frac against the int8 peak; not read). amx-int8 computes on int8
    # tiles (TDPBSUD, twice the bf16 rate): its share of the AMX int8 peak is
    # stated beside.
    amx_peak = float(d["context"].get("probe_amx_bf16_gflops", 0) or 0)
    amx_int8_peak = float(d["context"].get("probe_amx_int8_gops", 0) or 0)
    for b in d["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        if not b["name"].startswith("BM_ExpertFfn/"):
            continue  # BM_QuantiseActivations: a step of the VNNI kernels, timed alone
        _, kernel, dtype, tokens = b["name"].split("/")[:4]
        rows.append({"kernel": kernel, "dtype": dtype, "tokens": int(tokens.split("/")[0]),
                     "ms": float(b["real_time"]) * {"ms": 1, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]],
                     "weight GB/s": float(b["weight_GBps"]), "TFLOP/s": float(b["TFLOPs"]),
                     # Since 2026-11-26 bw_frac is against the STREAM-like ceiling and bw_frac_probe against the
                     # one-stream probe; runs before that have only bw_frac, against the probe.
                     "bw frac": float(b.get("bw_frac", float("nan"))),
                     "bw frac probe": float(b.get("bw_frac_probe", b.get("bw_frac", float("nan")))),
                     "peak frac": float(b.get("peak_frac", float("nan"))),
                     "AMX peak frac": float(b["TFLOPs"]) * 1e3 / amx_peak if amx_peak > 0 else float("nan"),
                     "AMX int8 peak frac": (float(b["TFLOPs"]) * 1e3 / amx_int8_peak
                                            if kernel == "amx-int8" and amx_int8_peak > 0 else float("nan"))})
    return pd.DataFrame(rows), d["context"]


AUTO_TOLERANCE = 0.05  # a pick within 5% of the fastest is level (run-to-run noise of a kernel time here)


def kernel_table(ctx) -> dict:
    """The CPU expert kernel table (kernels/cpu/kernel_registry.cc, the one list of kernels): the copy bench_expert
    wrote into its run's context, or, for a benchmark file from before it did, what `moebench kernels --json`
    prints now (MOEBENCH_BIN, else build/bin/moebench)."""
    if "kernel_table" in ctx:
        return json.loads(ctx["kernel_table"])
    binary = os.environ.get("MOEBENCH_BIN") or str(common.repo_root() / "build" / "bin" / "moebench")
    try:
        r = subprocess.run([binary, "kernels", "--json"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"kernels: expected the kernel table from the benchmark's context or from "
                         f"`{binary} kernels --json`, found neither ({e})")
    return json.loads(r.stdout)


def candidates(table: dict) -> dict[str, list[str]]:
    """"auto"'s candidates per dtype (the table's auto_candidate rows: the own kernels that read the packed
    weights; kernels/cpu/kernel_choice.h)."""
    return {dt: [k["name"] for k in table["kernels"] if k["auto_candidate"] and dt in k["dtypes"]]
            for dt in ("bf16", "int8", "int4")}


def fixed_pick(name: str, tokens: int, table: dict) -> str:
    """The kernel the fixed rule (auto without a calibrated profile) runs at `tokens` per expert: a switching
    row's `few` kernel up to its switch point (or N of "name:N"), its `many` kernel above."""
    base, _, n = name.partition(":")
    row = next((k for k in table["kernels"] if k["name"] == base), None)
    if row is None or not row["takes_switch_point"]:
        return name
    return row["few"] if tokens <= (int(n) if n else int(row["switch_tokens"])) else row["many"]


def auto_lines(t: pd.DataFrame, ctx) -> list[str]:
    """Per dtype: where the fixed rule's pick is slower than the fastest candidate measured. A calibrated
    profile's "auto" picks the fastest per count by construction; this says what it fixes on this machine."""
    out = []
    table = kernel_table(ctx)
    for dt, cands in candidates(table).items():
        name = ctx.get(f"auto_{dt}", "")
        g = t[(t["dtype"] == dt) & t["kernel"].isin(cands)]
        if g.empty or not name or name.startswith("none"):
            continue
        slower = []
        for tok, h in g.groupby("tokens"):
            ms = h.set_index("kernel")["ms"]
            pick = fixed_pick(name, int(tok), table)
            if pick in ms and ms[pick] > (1 + AUTO_TOLERANCE) * ms.min():
                slower.append((int(tok), pick, ms.idxmin(), ms[pick] / ms.min()))
        if len(g["kernel"].unique()) < 2:
            out.append(f"auto {dt}: one candidate here ({g['kernel'].iloc[0]}): nothing to choose")
        elif not slower:
            out.append(f"auto {dt}: the fixed rule ({name}) runs the fastest candidate (within "
                       f"{100 * AUTO_TOLERANCE:.0f}%) at every token count measured")
        else:
            out.append(f"auto {dt}: the fixed rule ({name}) is slower than the fastest candidate at "
                       + ", ".join(f"{tok} tokens ({pick} {r:.2f}x {best})" for tok, pick, best, r in slower)
                       + "; a profile from `moebench calibrate` makes auto run the fastest measured at each count")
    return out


def run(results: str, out):
    path = pathlib.Path(results) / "bench" / "bench_expert.json"
    if not path.is_file():
        return None
    t, ctx = load(path)
    pv = common.paper_values("ktransformers")
    f3, f7 = pv["fig3"], pv["fig7"]
    lines = []
    # Decode: bandwidth share at 1-4 tokens, best kernel per dtype.
    dec = t[t["tokens"].isin(DECODE)]
    ceiling = ctx.get("probe_ceiling_bw_gbps")
    for dt, g in dec.groupby("dtype"):
        best = g.groupby("tokens")["bw frac"].max()
        probe = g.groupby("tokens")["bw frac probe"].max()
        what = (f"the STREAM-like ceiling ({ceiling} GB/s)" if ceiling else
                "the one-stream probe's bandwidth (a run before the STREAM-like ceiling)")
        lines.append(f"decode {dt}: best kernel reads at {100 * best.min():.0f}-{100 * best.max():.0f}% of {what} "
                     f"(target {100 * BW_TARGET:.0f}%: {'met' if best.min() >= BW_TARGET else 'missed'}); by token "
                     "count " + ", ".join(f"{t}: {100 * v:.0f}%" for t, v in best.items())
                     + (f"; against the one-stream probe {100 * probe.min():.0f}-{100 * probe.max():.0f}%"
                        if ceiling else ""))
    pre = t[t["tokens"] >= PREFILL]
    amx = ctx.get("amx") == "yes"
    for dt, g in pre.groupby("dtype"):
        tiles = g[g["kernel"].str.startswith("amx-")]
        if amx and not tiles.empty:
            best = g.groupby("tokens")["AMX peak frac"].max()
            lines.append(f"prefill {dt}: best kernel at {100 * best.min():.0f}-{100 * best.max():.0f}% of the measured "
                         f"AMX bf16 tile peak ({ctx.get('probe_amx_bf16_gflops')} GFLOP/s; target "
                         f"{100 * PEAK_TARGET:.0f}%: {'met' if best.min() >= PEAK_TARGET else 'missed'})"
                         + (f"; amx-int8 at {100 * i8.min():.0f}-{100 * i8.max():.0f}% of the AMX int8 tile peak "
                            f"({ctx.get('probe_amx_int8_gops')} GOP/s)"
                            if not (i8 := g[g["kernel"] == "amx-int8"]["AMX int8 peak frac"].dropna()).empty else ""))
            continue
        best = g.groupby("tokens")["peak frac"].max()
        lines.append(f"prefill {dt}: best kernel at {100 * best.min():.0f}-{100 * best.max():.0f}% of the measured "
                     f"dot-product peak (target {100 * PEAK_TARGET:.0f}% of the AMX peak; "
                     + ("no AMX here: " if not amx else "no tile kernel for this dtype: ")
                     + f"{'met' if best.min() >= PEAK_TARGET else 'missed'} against the kernel's own "
                     "dot-product peak: AVX-512 BF16 or VNNI; for avx2-gemm, fp32 FMA or vpmaddubsw)")
    # The own bf16 kernels (avx512-bf16*, amx-bf16): the faster of them at each token count.
    own_rows = t[t["kernel"].str.contains("bf16") & (t["kernel"] != "onednn") & (t["dtype"] == "bf16")]
    own = own_rows.groupby("tokens")["ms"].min()
    dnn = t[(t["kernel"] == "onednn") & (t["dtype"] == "bf16")].set_index("tokens")["ms"]
    ratio = (dnn / own).dropna()
    crossover = None
    if dnn.empty:
        lines.append("oneDNN: not run (Debian's oneDNN 2.6 has no bf16 matmul on a CPU without AVX-512), so the "
                     "own-vs-oneDNN target cannot be checked here")
    if not ratio.empty:
        slower = ratio[ratio < 1.0]
        crossover = int(slower.index.min()) if not slower.empty else None
        lines.append(f"own bf16 kernels (the faster at each count) vs oneDNN: {ratio.min():.2f}x-{ratio.max():.2f}x "
                     "(oneDNN time / own time); "
                     + (f"slower from {crossover} tokens per expert: the target (as fast on every shape) is missed"
                        if crossover else "as fast or faster on every shape: target met")
                     + f". Paper: KTransformers' AMX kernel {f3['ktrans_over_onednn.max']}x over oneDNN at most; "
                     f"its AVX-512 kernel wins up to {f7['avx512_wins_up_to_tokens']} tokens per expert")
    lines += auto_lines(t, ctx)
    # Every decode line (one per dtype: met or missed) and the oneDNN comparison.
    headline = "; ".join([x for x in lines if x.startswith("decode")] + lines[-1:]) if lines else "no kernels"
    notes = (f"Machine (measured in the same run): {ctx.get('threads')} threads, read bandwidth "
             f"{ctx.get('probe_read_bw_gbps')} GB/s with one stream per thread"
             + (f", STREAM-like ceiling {ceiling} GB/s (four streams per thread {ctx.get('probe_read4_bw_gbps')}, "
                f"triad {ctx.get('probe_triad_bw_gbps')} by STREAM's counting; the decode fractions' denominator)"
                if ceiling else "") + f", bf16 dot-product peak {ctx.get('probe_bf16_gflops')} GFLOP/s, "
             f"int8 {ctx.get('probe_int8_gops')} GOP/s"
             + (f", AVX2: fp32 FMA {ctx.get('probe_fp32_gflops')} GFLOP/s, vpmaddubsw "
                f"{ctx.get('probe_int8_avx2_gops')} GOP/s" if float(ctx.get('probe_int8_avx2_gops', 0) or 0) > 0 else "")
             + f"; AMX: {ctx.get('amx')}. 'auto' (the real backend's choice): "
             f"bf16 {ctx.get('auto_bf16')}, int8 {ctx.get('auto_int8')}, int4 {ctx.get('auto_int4')}.\n\n" +
             "\n\n".join(lines) + "\n\n"
             f"Paper (KTransformers, 36-core Xeon 8452Y socket, 220 GB/s, AMX peak {f3['amx_peak_tflops']} TFLOP/s): "
             f"PyTorch AMX up to {f3['pytorch_amx_tflops.max']} TFLOP/s ({100 * f3['pytorch_amx_peak_frac']:.0f}% of "
             f"peak), PyTorch AVX-512 {f3['pytorch_avx512_tflops.max']}, KTransformers AMX {f3['ktrans_amx_tflops.max']} "
             f"({100 * f3['ktrans_amx_tflops.max'] / f3['amx_peak_tflops']:.0f}% of peak). "
             + ("The AMX tile kernels (amx-bf16; amx-int8 and amx-quant for int8 and int4) ran on this CPU; "
                "'avx512-amx-bf16' and 'avx512-amx-int8' switch to them above a few tokens per expert "
                "(docs/KERNELS.md).\n" if amx else
                "This CPU has no usable AMX: the AMX tile kernels (amx-bf16, amx-int8, amx-quant) are built but "
                "cannot run here.\n"))

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for (k, dt), g in t.groupby(["kernel", "dtype"]):
        g = g.sort_values("tokens")
        axes[0].plot(g["tokens"], g["TFLOP/s"], marker="o", label=f"{k} {dt}")
        axes[1].plot(g["tokens"], g["ms"], marker="o", label=f"{k} {dt}")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("tokens per expert")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("TFLOP/s (Fig. 3: throughput)")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("ms per expert (Fig. 7: latency)")
    fig.suptitle(TITLE, fontsize=10)
    summary = {"run": str(path), "headline": headline, "verdict": "measured", "crossover_tokens": crossover}
    return common.write_result(out, "kernels", TITLE, t.sort_values(["dtype", "kernel", "tokens"]), fig, summary,
                               notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
