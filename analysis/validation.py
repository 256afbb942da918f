# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Simulator validation (docs/BACKENDS.md): every case of
suites/validation.toml ran on the real backend (the expert tasks executed on
this machine) and on the simulated backend with the profile `moebench
calibrate` measured here (the local-cpu-calibrated preset: under results/ when
`make calibrate` or `make validation` wrote it, docs/BACKENDS.md). Per
case: the relative error of the simulated value against the real one for
the expert time per MoE layer, the CPU lane's busy time, TBT and TTFT, and
the spread of the real repetitions (measurement noise, which bounds how
close the two can agree).

Attention, norms, router and lm head are timed by the same cost model on
both backends (the real executor runs only the experts), so TBT and TTFT
errors are the expert errors diluted by that shared part.

    python3 analysis/validation.py --results results --out results/report"""

from __future__ import annotations

import json
import pathlib
import sys

import pandas as pd

import common
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

SUITE = "validation"
TITLE = "Simulator validation: simulated (calibrated profile) vs real backend, CPU-only"
# The target; Vidur reports under 9%, LLMServingSim about 2%.
TARGET = 0.05
# the composition's error against the wall clock, of TBT.
COMPOSITION_TARGET = 0.02
QUANTITIES = [("expert_ms_per_moe_layer", "expert ms/layer"), ("cpu_busy_s", "CPU busy s"),
              ("tbt_mean_ms", "TBT ms"), ("ttft_mean_ms", "TTFT ms")]
KEYS = ["model.name", "model.expert_dtype", "strategy", "workload.batch_size"]


def noise_floor(t: pd.DataFrame) -> list[float]:
    """(max - min) / median of the real expert time per layer of each model, dtype and batch whose strategies ran
    identical work: on a CPU-only machine the three strategies do (their simulated values agree), so the spread of
    their real values is this machine's variation between runs minutes apart, the floor under any agreement. The
    simulated values are compared to 1e-9 relative: Expert Deferral sums the same task times in another order, so
    its total can differ in the last bits (seen: 16.001768633641337 and 16.00176863364213 ms)."""
    floor = []
    for _, g in t.groupby(["model", "dtype", "batch"]):
        sim = g["expert ms/layer sim"]
        if len(g) > 1 and (sim.max() - sim.min()) <= 1e-9 * abs(sim.median()):
            xs = g["expert ms/layer real"]
            floor.append(float((xs.max() - xs.min()) / xs.median()))
    return floor


def validation_verdict(within: int, cases: int, floor: list[float], median_error: float) -> str:
    """Met when every case is within the target. A miss counts only where the machine can resolve the target: when
    the noise floor (median over the model, dtype and batch groups) is above it, identical work measured minutes
    apart already differs by more than the target allows, and the run is inconclusive, unless the median |error| is
    above twice that floor (an error compares two measurements, the calibration and the case, each of which varies
    by the floor): then the simulation misses by more than the machine's noise explains."""
    if within == cases:
        return f"target met (all {cases} within {100 * TARGET:.0f}%)"
    fl = float(pd.Series(floor).median()) if floor else 0.0
    if fl > TARGET and median_error <= 2 * fl:
        return (f"inconclusive ({within} of {cases} within {100 * TARGET:.0f}%, but this machine's noise floor, "
                f"{100 * fl:.1f}% median, is above the target)")
    return f"target missed ({within} of {cases} within {100 * TARGET:.0f}%)"


# Two-sided 95% quantiles of Student's t by degrees of freedom (rounds - 1), for the confidence interval of a
# case's mean error over a series' rounds; beyond 30 the normal quantile is close enough.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048,
        29: 2.045, 30: 2.042}


def t975(df: int) -> float:
    return T975.get(df, 1.96) if df >= 1 else float("inf")


def mean_ci(xs) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval (Student's t; infinite for one value)."""
    xs = pd.Series(xs, dtype=float).dropna()
    n = len(xs)
    if n == 0:
        return float("nan"), float("inf")
    if n == 1:
        return float(xs.iloc[0]), float("inf")
    return float(xs.mean()), t975(n - 1) * float(xs.std(ddof=1)) / n ** 0.5


def case_verdict(mean: float, half: float, target: float = TARGET) -> str:
    """A case's verdict from its mean error over rounds: met when the whole 95% interval lies within the target,
    missed when the whole interval lies beyond it, otherwise inconclusive."""
    if abs(mean) + half <= target:
        return "met"
    if abs(mean) - half > target:
        return "missed"
    return "inconclusive"


def pooled(tables: list[pd.DataFrame], col: str = "expert ms/layer err",
           target: float = TARGET) -> tuple[pd.DataFrame, dict]:
    """The rounds of a series pooled: one row per case with its signed error of the expert time per MoE layer in
    every round, their mean, the 95% interval and the case's verdict; and the simulation's systematic error over
    all cases, from the mean error of each (round, model, dtype) group: a group's cases share one calibration, so
    the groups, not the cases, are the independent draws of the machine's drift."""
    keys = ["model", "dtype", "strategy", "batch"]
    long = pd.concat([t.assign(round=i + 1) for i, t in enumerate(tables)], ignore_index=True)
    recs = []
    for key, g in long.groupby(keys, sort=True):
        errs = g.sort_values("round")[col].astype(float)
        mean, half = mean_ci(errs)
        recs.append({**dict(zip(keys, key)), "rounds": len(errs),
                     "err per round": " ".join(f"{100 * e:+.1f}" for e in errs),
                     "mean err": mean, "ci95 half": half, "verdict": case_verdict(mean, half, target)})
    cases = pd.DataFrame(recs)
    groups = long.groupby(["round", "model", "dtype"])[col].mean()
    mean, half = mean_ci(groups)
    # The same per model and dtype: one group mean per round.
    by = {f"{m} {d}": mean_ci(g) for (m, d), g in groups.groupby(level=["model", "dtype"])}
    return cases, {"mean": mean, "ci95_half": half, "groups": len(groups), "by_group": by}


def series_verdict(cases: pd.DataFrame) -> str:
    """Met when every case is met, missed when any case is missed (its whole interval beyond the target),
    otherwise inconclusive."""
    n = {v: int((cases["verdict"] == v).sum()) for v in ("met", "missed", "inconclusive")}
    counts = f"{n['met']} met, {n['missed']} missed, {n['inconclusive']} inconclusive of {len(cases)} cases"
    if n["missed"]:
        return f"target missed ({counts})"
    if n["met"] == len(cases):
        return f"target met ({counts})"
    return f"inconclusive ({counts})"


def pair(df: pd.DataFrame) -> pd.DataFrame:
    """One row per case: the real repetitions' median and spread, the simulated value, the error."""
    ok = df[df["status"] == "ok"]
    real = ok[ok["run.backend"] == "real"]
    sim = ok[ok["run.backend"] == "sim"]
    if real.empty or sim.empty:
        raise RuntimeError("validation: expected rows of both backends (run the whole suites/validation.toml), "
                           f"found {len(real)} real and {len(sim)} simulated rows")
    recs = []
    for key, r in real.groupby(KEYS, sort=True):
        s = sim
        for k, v in zip(KEYS, key):
            s = s[s[k] == v]
        if s.empty:
            raise RuntimeError(f"validation: no simulated case for the real case {dict(zip(KEYS, key))}")
        rec = {"model": key[0], "dtype": key[1], "strategy": key[2], "batch": int(key[3]),
               "reps": len(r)}
        for col, label in QUANTITIES:
            rv = float(r[col].astype(float).median())
            sv = float(s.iloc[0][col])
            rec[f"{label} real"] = rv
            rec[f"{label} sim"] = sv
            rec[f"{label} err"] = (sv - rv) / rv if rv else float("nan")
        xs = r["expert_ms_per_moe_layer"].astype(float)
        rec["real spread"] = float((xs.max() - xs.min()) / xs.median()) if len(xs) > 1 else float("nan")
        # the real step's wall clock (TBT/TTFT above: end to end) split into the composition's error
        # (the lanes' composition of the real run's own measured task durations against its wall clock: no
        # table, no drift) and the tables' error (the simulation against that composition).
        for what, wall in (("TBT", "tbt_mean_ms"), ("TTFT", "ttft_mean_ms")):
            col = f"composed_{wall}"
            comp = (float(r[col].astype(float).median()) if col in r and r[col].notna().all() else float("nan"))
            rv, sv = rec[f"{what} ms real"], rec[f"{what} ms sim"]
            rec[f"{what} composed"] = comp
            rec[f"{what} composition err"] = (comp - rv) / rv if rv else float("nan")
            rec[f"{what} table err"] = (sv - comp) / comp if comp else float("nan")
        recs.append(rec)
    return pd.DataFrame(recs)


def load_index(results: str, path: pathlib.Path) -> tuple[dict, pd.DataFrame]:
    """An index of tools/validate_interleaved.py and the rows of every run it names (all must be complete)."""
    try:
        idx = json.loads(path.read_text())
        parts = [pathlib.Path(results) / p for p in [*idx["real_runs"], idx["sim_run"]]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RuntimeError(f"{path}: expected an index with real_runs and sim_run, found: {e}") from e
    frames = []
    for d in parts:
        if not (d / "manifest.json").is_file() or common.manifest(d).get("status") != "complete":
            raise RuntimeError(f"{path}: expected the complete run {d}, found it missing or unfinished")
        frames.append(common.load_runs(d).assign(_dir=str(d)))
    return idx, pd.concat(frames, ignore_index=True)


def series_indexes(path: pathlib.Path) -> list[pathlib.Path]:
    """The indexes of every finished round of the series the index at `path` belongs to (`--rounds`), in round
    order; just `path` where it names no series. A round whose index was never written (interrupted) is not there."""
    def series_of(p: pathlib.Path) -> dict:
        try:
            s = json.loads(p.read_text()).get("series") or {}
        except (OSError, ValueError, AttributeError) as e:
            raise RuntimeError(f"{p}: expected a validation index (JSON object), found: {e}") from e
        if not isinstance(s, dict):
            return {}
        try:
            return {**s, "rounds": int(s.get("rounds", 1)), "round": int(s.get("round", 0))}
        except (TypeError, ValueError) as e:
            raise RuntimeError(f"{p}: expected series.rounds and series.round as whole numbers, found "
                               f"{s.get('rounds')!r} and {s.get('round')!r}") from e

    series = series_of(path)
    if series.get("rounds", 1) <= 1 or "id" not in series:
        return [path]
    found = []
    for other in sorted(path.parent.glob("*Z.json")):
        s = series_of(other)
        if s.get("id") == series["id"]:
            found.append((s["round"], other))
    return [p for _, p in sorted(found)]


def latest(results: str):
    """The newest validation: a run of suites/validation.toml (calibrated once, then every case) or an index
    written by tools/validate_interleaved.py (each group calibrated just before its real cases), whichever
    started later. Returns (rows, where, protocol) or None."""
    single = common.latest_run(results, SUITE)
    inter_root = pathlib.Path(results) / "validation-interleaved"
    indexes = sorted(inter_root.glob("*.json")) if inter_root.is_dir() else []
    inter = indexes[-1] if indexes else None
    # Both names start with the UTC start time, YYYYMMDDTHHMMSSZ.
    if inter is not None and (single is None or inter.name[:16] >= single.name[:16]):
        protocol = ("Protocol: interleaved (tools/validate_interleaved.py): each model and dtype calibrated, then "
                    "its real cases at once, so a table and the cases it predicts are measured seconds apart; the "
                    "simulated cases use the profile those calibrations built.")
        return load_index(results, inter)[1], inter, protocol
    if single is None:
        return None
    protocol = ("Protocol: calibrated once (make calibrate), then suites/validation.toml: a table and the real cases "
                "it predicts are measured minutes apart.")
    return common.load_runs(single).assign(_dir=str(single)), single, protocol


def layer_tasks(path: pathlib.Path, pid: int, step: int, layer: int) -> list[tuple[str, float, float]]:
    """(kind, start us, end us) of the tasks of one MoE layer of one step in a timeline's process `pid` (0: the
    lanes; 1: a real run's measured tasks), times relative to the layer's first task."""
    ev = [e for e in json.loads(path.read_text())["traceEvents"]
          if e.get("ph") == "X" and e.get("pid", 0) == pid and e["args"].get("step") == step
          and e["args"].get("layer") == layer]
    if not ev:
        return []
    t0 = min(e["ts"] for e in ev)
    return [(e["cat"], e["ts"] - t0, e["ts"] + e["dur"] - t0) for e in sorted(ev, key=lambda e: e["ts"])]


def side_by_side(rows: pd.DataFrame, step: int = 3, layer: int = 1):
    """One MoE layer of one decode step, real (measured) and simulated, from the timelines of the first case of
    ktransformers at batch 1 that has both: (title, {"real": tasks, "simulated": tasks}) or None."""
    ok = rows[(rows["status"] == "ok") & (rows["strategy"] == "ktransformers")]
    if "_dir" not in ok or "workload.batch_size" not in ok:
        return None
    ok = ok[ok["workload.batch_size"].astype(int) == 1]
    for _, r in ok[ok["run.backend"] == "real"].iterrows():
        s = ok[(ok["run.backend"] == "sim") & (ok["model.name"] == r["model.name"]) &
               (ok["model.expert_dtype"] == r["model.expert_dtype"])]
        if s.empty:
            continue
        rp = pathlib.Path(r["_dir"]) / "timelines" / f"{r['case_id']}.json"
        sp = pathlib.Path(s.iloc[0]["_dir"]) / "timelines" / f"{s.iloc[0]['case_id']}.json"
        if not (rp.is_file() and sp.is_file()):
            continue
        real, sim = layer_tasks(rp, 1, step, layer), layer_tasks(sp, 0, step, layer)
        if real and sim:
            return (f"{r['model.name']} {r['model.expert_dtype']} ktransformers b1, step {step}, MoE layer {layer}",
                    {"real (measured)": real, "simulated": sim})
    return None


def run(results: str, out):
    found = latest(results)
    if found is None:
        return None
    rows, run_dir, protocol = found
    t = pair(rows)
    series = series_of(results, run_dir, rows)
    err, within, floor, headline, notes = headline_and_notes(t, protocol)
    text, summary_deferral = deferral_notes(t)
    notes += text + series_notes(series, out)
    fig, text = plot(rows, t, series)
    notes += text
    cols = ["model", "dtype", "strategy", "batch", "reps"]
    for _, label in QUANTITIES:
        cols += [f"{label} real", f"{label} sim", f"{label} err"]
    cols.append("real spread")
    cols += ["TBT composed", "TBT composition err", "TBT table err", "TTFT composed", "TTFT composition err",
             "TTFT table err"]
    verdict = validation_verdict(within, len(t), floor, float(err.median()))
    round_verdict = verdict
    if series is not None:
        # The series decides: the latest round alone is one draw of the machine's drift.
        sy = series["systematic"]
        verdict = series_verdict(series["cases"]) + f" over {series['rounds']} rounds"
        headline = (f"{series['rounds']} rounds pooled: systematic error {100 * sy['mean']:+.1f}% +- "
                    f"{100 * sy['ci95_half']:.1f}% (95%); latest round: " + headline)
    summary = {"run": str(run_dir), "headline": headline, "verdict": verdict, "target": TARGET, "within": within,
               "cases": len(t),
               "median_abs_error": float(err.median()), "max_abs_error": float(err.max()),
               "deferral_tbt_ratio": summary_deferral,
               "noise_floor": float(pd.Series(floor).median()) if floor else None,
               "composition_error_tbt_max": (float(t["TBT composition err"].abs().max())
                                             if t["TBT composition err"].notna().all() else None),
               "end_to_end_error_tbt_median": float(t["TBT ms err"].abs().median()),
               "round_verdict": round_verdict}
    if series is not None:
        summary["series"] = {"rounds": series["rounds"], "asked": series["asked"], "indexes": series["indexes"],
                             "systematic_error": series["systematic"]["mean"],
                             "systematic_ci95_half": series["systematic"]["ci95_half"],
                             "systematic_by_group": {k: {"mean": m, "ci95_half": h}
                                                     for k, (m, h) in series["systematic"]["by_group"].items()},
                             **({"end_to_end_tbt": {
                                 "verdict": series_verdict(series["systematic"]["levels"]["end_to_end"][0]),
                                 "systematic": series["systematic"]["levels"]["end_to_end"][1]["mean"],
                                 "ci95_half": series["systematic"]["levels"]["end_to_end"][1]["ci95_half"]},
                                 "composition_tbt": {
                                 "verdict": series_verdict(series["systematic"]["levels"]["composition"][0]),
                                 "max_abs_mean": float(series["systematic"]["levels"]["composition"][0]["mean err"]
                                                       .abs().max())}}
                                if "levels" in series["systematic"] else {}),
                             "cases": {v: int((series["cases"]["verdict"] == v).sum())
                                       for v in ("met", "missed", "inconclusive")}}
    return common.write_result(out, "validation", TITLE, t[cols], fig, summary, notes)


def series_of(results: str, run_dir: pathlib.Path, rows: pd.DataFrame):
    """Every finished round of the latest index's series pooled (None for a single round)."""
    rounds = []
    if run_dir.suffix == ".json":
        # Every finished round of the latest index's series; the latest round's rows are already loaded.
        rounds = [(p, rows if p == run_dir else load_index(results, p)[1]) for p in series_indexes(run_dir)]
    series = None
    if len(rounds) > 1:
        paired = [pair(r) for _, r in rounds]
        cases, systematic = pooled(paired)
        # the end-to-end TBT error and the composition's, pooled the same way, where every round has
        # the composed columns.
        if all(p["TBT composition err"].notna().all() for p in paired):
            e2e, e2e_sys = pooled(paired, "TBT ms err")
            comp, comp_sys = pooled(paired, "TBT composition err", COMPOSITION_TARGET)
            systematic["levels"] = {"end_to_end": (e2e, e2e_sys), "composition": (comp, comp_sys)}
        series = {"rounds": len(rounds), "cases": cases, "systematic": systematic,
                  "asked": json.loads(run_dir.read_text())["series"].get("rounds", len(rounds)),
                  "indexes": [str(p) for p, _ in rounds]}
    return series


def headline_and_notes(t: pd.DataFrame, protocol: str) -> tuple:
    """(|error| per case, cases within the target, the noise floor, the headline, the notes) of the latest round."""
    err = t["expert ms/layer err"].abs()
    within = int((err <= TARGET).sum())
    worst = t.loc[err.idxmax()]
    spread = t["real spread"].median()
    by = {}
    for name, g in t.groupby(["model", "dtype"]):
        by[f"{name[0]} {name[1]}"] = g["expert ms/layer err"].abs().median()
    headline = (f"expert time per MoE layer: median |error| {100 * err.median():.1f}%, max {100 * err.max():.1f}% "
                f"({worst['model']} {worst['dtype']} {worst['strategy']} batch {worst['batch']}); {within} of "
                f"{len(t)} cases within the {100 * TARGET:.0f}% target; real repetitions spread "
                f"{100 * spread:.1f}% (median)")
    floor = noise_floor(t)
    floor_text = (f"; the same work measured as different strategies minutes apart differs by "
                  f"{100 * pd.Series(floor).median():.1f}% (median, max {100 * max(floor):.1f}%)" if floor else "")
    headline += floor_text
    errs = {label: t[f"{label} err"].abs() for _, label in QUANTITIES}
    levels = ""
    if t["TBT composition err"].notna().all():
        ce, te, ee = (t["TBT composition err"].abs(), t["TBT table err"].abs(), t["TBT ms err"].abs())
        cf, tf, ef = (t["TTFT composition err"].abs(), t["TTFT table err"].abs(), t["TTFT ms err"].abs())
        levels = (f"End to end (simulated against the real steps' wall clock): TBT median |error| "
                  f"{100 * ee.median():.1f}% (max {100 * ee.max():.1f}%, {int((ee <= TARGET).sum())} of {len(t)} "
                  f"within {100 * TARGET:.0f}%), TTFT {100 * ef.median():.1f}% (max {100 * ef.max():.1f}%). "
                  f"Composition (the lanes' composition of the real run's own measured tasks against its wall "
                  f"clock): TBT median |error| {100 * ce.median():.2f}% (max {100 * ce.max():.2f}%; target "
                  f"{100 * COMPOSITION_TARGET:.0f}%: {'met' if ce.max() <= COMPOSITION_TARGET else 'missed'}), "
                  f"TTFT {100 * cf.median():.2f}% (max {100 * cf.max():.2f}%). Tables (simulated against that "
                  f"composition): TBT {100 * te.median():.1f}% (max {100 * te.max():.1f}%), TTFT "
                  f"{100 * tf.median():.1f}% (max {100 * tf.max():.1f}%).")
        headline += "; " + levels
    notes = ("Error = (simulated - real) / real. 'real spread' = (max - min) / median of the real repetitions' "
             "expert time per layer: the measurement noise of this machine.\n\n"
             "Median |error| per quantity: " +
             ", ".join(f"{label} {100 * e.median():.1f}% (max {100 * e.max():.1f}%)" for label, e in errs.items()) +
             ".\n\nMedian |error| of the expert time per layer by model and dtype: " +
             ", ".join(f"{k} {100 * v:.1f}%" for k, v in by.items()) + ".\n\n"
             "Noise floor: on a CPU-only machine all-cpu, ktransformers and ktransformers-deferral run the same "
             "expert work (their simulated values agree up to rounding), so the spread of their real values, measured "
             "one after another" + (f", {100 * pd.Series(floor).median():.1f}% (median; max {100 * max(floor):.1f}%)"
                                if floor else "") +
             ", is the machine's own variation between runs; the real repetitions of one case, seconds apart, "
             "vary less ('real spread'). Errors below that floor cannot be told from noise.\n\n"
             + protocol + "\n\n"
             "What the simulated side misses by construction: the calibrated table times one expert task at a "
             "time (the mean of its rounds; profiles written before 2026-11-23 kept the median), while a real "
             "step runs a layer's experts back to back, so cache and prefetcher effects between consecutive "
             "tasks and interpolation between the table's token counts are not in the simulation; "
             "validation_tasks.md splits the error task by task. Since 2026-11-25 the real backend executes every "
             "task of the step (attention with norms and router, dense FFN, lm head too) and its TTFT and TBT are "
             "the steps' measured wall clock; the simulated side times those tasks with the cpu-attention, "
             "cpu-dense-ffn and cpu-lm-head tables the same calibration measured (runs before that have no "
             "composed columns and no split below).\n\n"
             "Three levels: end to end = (simulated - real wall clock) / real wall clock (the TBT and "
             "TTFT columns); composition = (the real run's tasks composed on the lanes - its wall clock) / wall "
             "clock, independent of the tables and of the machine's drift; tables = (simulated - that "
             "composition) / composition. " + (levels or "This run has no composed columns.") + "\n")
    return err, within, floor, headline, notes


def deferral_notes(t: pd.DataFrame) -> tuple:
    """Expert Deferral on the real backend: the notes' paragraph and the ratio per model, dtype and batch."""
    notes = ""
    # Expert Deferral on the real backend: decode time with and
    # without it, measured. On a CPU-only machine there is no GPU work to
    # overlap, so no gain is expected; the measurement checks that.
    d = t.set_index(["model", "dtype", "batch", "strategy"])["TBT ms real"]
    gains = []
    for (m, dt, b), g in t.groupby(["model", "dtype", "batch"]):
        if {"ktransformers", "ktransformers-deferral"} <= set(g["strategy"]):
            gains.append((f"{m} {dt} b{b}", d[(m, dt, b, "ktransformers")] / d[(m, dt, b, "ktransformers-deferral")]))
    if gains:
        notes += ("\nExpert Deferral on the real backend, measured: decode TBT of ktransformers / "
                  "ktransformers-deferral = " + ", ".join(f"{k} {v:.3f}x" for k, v in gains) +
                  " (1 = no change; a CPU-only machine has no GPU work for deferred experts to overlap).\n")
        summary_deferral = {k: v for k, v in gains}
    else:
        summary_deferral = {}
    return notes, summary_deferral


def series_notes(series, out) -> str:
    """The series' section of the notes (and its rounds table written beside the figure); empty for one round."""
    notes = ""
    if series is not None:
        c, sy = series["cases"], series["systematic"]
        notes += (f"\n## Rounds: {series['rounds']} of the series pooled\n\n"
                  f"The tables above are the latest round. The series ({series['rounds']} finished rounds of "
                  f"{series['asked']} asked for, `make validation ROUNDS=N`) ran the whole protocol one round after "
                  "another, each round calibrated afresh. Per case: the signed error of the expert time per MoE "
                  "layer in every round (%), their mean and the half-width of its 95% confidence interval "
                  "(Student's t over rounds). A case is met when its whole interval lies within "
                  f"+-{100 * TARGET:.0f}%, missed when it lies wholly beyond, otherwise inconclusive. Series verdict: "
                  f"{series_verdict(c)}. Systematic error of the simulation over all cases (mean of the "
                  f"{sy['groups']} (round, model, dtype) groups' mean errors, each group one calibration): "
                  f"{100 * sy['mean']:+.1f}% +- {100 * sy['ci95_half']:.1f}% (95%); by model and dtype (one group "
                  "mean per round): " + ", ".join(f"{k} {100 * m:+.1f}% +- {100 * h:.1f}%"
                                                  for k, (m, h) in sy["by_group"].items()) + ".\n\n")
        if "levels" in sy:
            (e2e, e2e_sys), (comp, comp_sys) = sy["levels"]["end_to_end"], sy["levels"]["composition"]
            notes += (f"End to end, TBT, pooled over the {series['rounds']} rounds the same way (target "
                      f"{100 * TARGET:.0f}%): {series_verdict(e2e)}; systematic error {100 * e2e_sys['mean']:+.1f}% +- "
                      f"{100 * e2e_sys['ci95_half']:.1f}% (95%). Composition of TBT (target "
                      f"{100 * COMPOSITION_TARGET:.0f}%): {series_verdict(comp)}; per case the mean over rounds lies "
                      f"between {100 * comp['mean err'].min():+.2f}% and {100 * comp['mean err'].max():+.2f}%, the "
                      f"widest 95% half-width {100 * comp['ci95 half'].max():.2f}%.\n\n")
        shown = c.assign(**{"mean err": [f"{100 * x:+.1f}" for x in c["mean err"]],
                            "ci95 half": [f"{100 * x:.1f}" for x in c["ci95 half"]]})
        notes += common.markdown_table(shown.rename(columns={"err per round": "err per round %",
                                                              "mean err": "mean err %",
                                                              "ci95 half": "ci95 half %"})) + "\n"
        pathlib.Path(out).mkdir(parents=True, exist_ok=True)
        common.write_text_atomic(pathlib.Path(out) / "validation_rounds.csv", c.to_csv(index=False))
    return notes


def plot(rows: pd.DataFrame, t: pd.DataFrame, series) -> tuple:
    """The figure, and the notes' sentence on the layer drawn side by side (empty when no timeline has one)."""
    notes = ""
    layer = side_by_side(rows)
    ncols = 2 + (series is not None) + (layer is not None)
    fig, axes = plt.subplots(1, ncols, figsize=(6 * ncols, 4.5))
    if layer is not None:
        # one real and one simulated layer side by side (the timelines hold every task of both).
        ax = axes[-1]
        colors = {}
        for y, (who, tasks) in enumerate(layer[1].items()):
            for cat, a, b in tasks:
                c = colors.setdefault(cat, f"C{len(colors)}")
                ax.barh(y, (b - a) / 1e3, left=a / 1e3, color=c, edgecolor="k", lw=0.3)
        ax.legend(handles=[Patch(color=c, label=cat) for cat, c in colors.items()], fontsize=7)
        ax.set_yticks(range(len(layer[1])))
        ax.set_yticklabels([who.split(" ")[0] for who in layer[1]])
        ax.set_xlabel("ms from the layer's first task")
        ax.set_title(layer[0] + "\n(real: measured on the host clock; simulated: the calibrated tables)", fontsize=8)
        notes += (f"\nOne layer side by side ({layer[0]}; last panel): "
                  + "; ".join(f"{who}: {sum(b - a for _, a, b in t) / 1e3:.2f} ms of tasks over "
                              f"{max(b for _, _, b in t) / 1e3:.2f} ms" for who, t in layer[1].items()) + ".\n")
    ax = axes[0]
    for (m, d), g in t.groupby(["model", "dtype"]):
        ax.scatter(g["expert ms/layer real"], g["expert ms/layer sim"], label=f"{m} {d}", s=24)
    lo = min(t["expert ms/layer real"].min(), t["expert ms/layer sim"].min()) * 0.9
    hi = max(t["expert ms/layer real"].max(), t["expert ms/layer sim"].max()) * 1.1
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.fill_between([lo, hi], [lo * (1 - TARGET), hi * (1 - TARGET)], [lo * (1 + TARGET), hi * (1 + TARGET)],
                    color="0.85", label=f"+-{100 * TARGET:.0f}%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("real backend: expert time per MoE layer (ms)")
    ax.set_ylabel("simulated (calibrated): expert time per MoE layer (ms)")
    ax.legend(fontsize=8)
    ax = axes[1]
    labels = [f"{r.model.split('-')[0]} {r.dtype} {r.strategy} b{r.batch}" for r in t.itertuples()]
    x = range(len(t))
    w = 0.2
    for i, (_, label) in enumerate(QUANTITIES):
        ax.bar([xi + (i - 1.5) * w for xi in x], 100 * t[f"{label} err"], w, label=label)
    ax.axhspan(-100 * TARGET, 100 * TARGET, color="0.9")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=90, fontsize=6)
    ax.set_ylabel("error of the simulation (%)")
    ax.legend(fontsize=8)
    if series is not None:
        ax = axes[2]
        c = series["cases"]
        xs = list(range(len(c)))
        colors = {"met": "tab:green", "missed": "tab:red", "inconclusive": "tab:gray"}
        for v, g in c.groupby("verdict"):
            ax.errorbar([xs[i] for i in g.index], 100 * g["mean err"], yerr=100 * g["ci95 half"].clip(upper=1.0),
                        fmt="o", ms=4, capsize=2, color=colors[v], label=v)
        ax.axhspan(-100 * TARGET, 100 * TARGET, color="0.9")
        ax.axhline(0, color="k", lw=0.6)
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{r.model.split('-')[0]} {r.dtype} {r.strategy} b{r.batch}" for r in c.itertuples()],
                           rotation=90, fontsize=6)
        ax.set_ylabel(f"mean error over {series['rounds']} rounds, 95% CI (%)")
        ax.legend(fontsize=8)
    fig.suptitle(TITLE, fontsize=10)
    return fig, notes


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
