# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Where the simulator validation's error comes from, task by task (
docs/BACKENDS.md, "Where the error comes from"). `make validation` writes a
timeline of every case on both backends: the real one holds each expert
task's measured time and token count, the simulated one the calibrated
table's time for the same task (the strategies are CPU-only, so both run
the same tasks in the same order; checked task by task here).

Per model and dtype, routed and shared experts apart, the simulation's
error over all tasks of the group's cases (first measured repetition) splits
exactly into
  - tasks at token counts the calibration measured: the run's mean time at
    that count against the table's entry (the machine's state between the
    calibration and the cases, and the table's statistic), and
  - tasks at other counts: the run's mean against the table's linear
    interpolation (a kernel whose time is a staircase in the token count),
    or its last entry beyond the table (the cost model clamps there).
When the run calibrated each group again right after its real cases
(tools/validate_interleaved.py does, unless --no-bracket), the error is also
set against that second table: the two bracket how far the machine moved
while the cases ran. Beside it, the run's own mean over its median (how far
a table of medians falls below a sum of tasks on this machine) and the
run's time at one token against the table's (the count that dominates
decode).

    python3 analysis/validation_tasks.py --results results --out results/report"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pandas as pd

import common
import matplotlib.pyplot as plt
import validation

TITLE = "Simulator validation, task by task: where the error comes from"
KEYS = ["model.name", "model.expert_dtype", "strategy", "workload.batch_size"]
# Timeline categories of the tasks the real executor measures.
KINDS = {"cpu-expert": "routed", "deferred-expert": "routed", "shared-experts": "shared",
         # the rest of the step, executed on the real backend since then; compared where the profile
         # has their tables (a dense block's attention has no router: its own kind, set against the same table).
         "attention": "attention", "dense-ffn": "dense FFN", "lm-head": "lm head"}
TABLE_OF = {"routed": "cpu-expert", "shared": "cpu-shared", "attention": "cpu-attention", "dense FFN": "cpu-dense-ffn",
            "lm head": "cpu-lm-head"}
# Kinds compared only when the validation's profile has their table (runs before 2026-11-25, when the whole step became real, have none).
OPTIONAL = {"attention", "dense FFN", "lm head"}


def latest_index(results: str):
    """The newest index of tools/validate_interleaved.py whose runs kept timelines, or None."""
    root = pathlib.Path(results) / "validation-interleaved"
    if not root.is_dir():
        return None
    for path in sorted(root.glob("*Z.json"), reverse=True):
        try:
            idx = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise RuntimeError(f"{path}: expected a validation index (JSON), found: {e}") from e
        if "profile_copy" in idx:  # written since the runs keep timelines
            return path, idx
    return None


def expert_tasks(path: pathlib.Path) -> list[tuple]:
    """(kind, layer, expert, tokens, us) of every expert task of a timeline, in its order."""
    try:
        events = json.loads(path.read_text())["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        raise RuntimeError(f"{path}: expected a Chrome-trace timeline, found: {e}") from e
    out = []
    for e in events:
        # Process 0: the lanes (a real run's timeline also holds its measured tasks as process 1, the same tasks).
        if e.get("ph") == "X" and e.get("cat") in KINDS and e.get("pid", 0) == 0:
            a = e.get("args", {})
            if "tokens" not in a and KINDS[e["cat"]] in OPTIONAL:
                continue  # timelines written before these tasks carried their tokens
            if "tokens" not in a:
                raise RuntimeError(f"{path}: expected args.tokens on every expert task (timelines written since "
                                   f"the timeline records tokens), found an event without: {e.get('name')}")
            out.append((KINDS[e["cat"]], a.get("layer"), a.get("expert", -1), int(a["tokens"]), float(e["dur"])))
    return out


def paired_tasks(results: pathlib.Path, idx: dict) -> pd.DataFrame:
    """One row per expert task: group, kind, tokens, real us, simulated us."""
    sim_dir = results / idx["sim_run"]
    sim = common.load_runs(sim_dir)
    rows = []
    for part in idx["real_runs"]:
        real_dir = results / part
        real = common.load_runs(real_dir)
        real = real[real["status"] == "ok"]
        for case_id, g in real.groupby("case_id"):
            first = g.iloc[0]
            s = sim[sim["status"] == "ok"]
            for k in KEYS:
                s = s[s[k] == first[k]]
            if s.empty:
                raise RuntimeError(f"{real_dir}: no simulated case in {sim_dir} for the real case {case_id}")
            rt = expert_tasks(real_dir / "timelines" / f"{case_id}.json")
            st = expert_tasks(sim_dir / "timelines" / f"{s.iloc[0]['case_id']}.json")
            if len(rt) != len(st) or any(a[:4] != b[:4] for a, b in zip(rt, st)):
                raise RuntimeError(f"{real_dir} case {case_id}: expected the same expert tasks as simulated case "
                                   f"{s.iloc[0]['case_id']}, found {len(rt)} and {len(st)} tasks that differ")
            for a, b in zip(rt, st):
                rows.append((first["model.name"], first["model.expert_dtype"], a[0], a[3], a[4], b[4]))
    return pd.DataFrame(rows, columns=["model", "dtype", "kind", "tokens", "real_us", "sim_us"])


def table_us(profile: dict, lane: str, model: str, dtype: str, tokens) -> np.ndarray | None:
    """The profile's table at these token counts as the cost model reads it (linear between entries,
    the end entries beyond them), or None when the profile has no such table."""
    for t in profile.get("table", []):
        if (t["lane"], t["model"], t["dtype"]) == (lane, model, dtype):
            return np.interp(np.asarray(tokens, dtype=float), t["tokens"], t["time_us"])
    return None


def decompose(tasks: pd.DataFrame, profile: dict, after: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The table of terms per (model, dtype, kind) and the per-count ratios for the figure. `after`: per
    "model dtype", the profile calibrated again right after the group's real cases (the bracket)."""
    tables = {(t["lane"], t["model"], t["dtype"]): set(float(x) for x in t["tokens"])
              for t in profile.get("table", [])}
    recs, counts = [], []
    for (m, d, kind), g in tasks.groupby(["model", "dtype", "kind"], sort=True):
        measured = tables.get((TABLE_OF[kind], m, d))
        if measured is None and kind in OPTIONAL:
            continue
        if measured is None:
            raise RuntimeError(f"the validation's profile: expected a {TABLE_OF[kind]} table for {m} {d}, found none")
        real, sim = g["real_us"].sum(), g["sim_us"].sum()
        at_table = at_interp = 0.0
        for t, c in g.groupby("tokens"):
            term = c["real_us"].sum() - c["sim_us"].sum()
            if float(t) in measured:
                at_table += term
            else:
                at_interp += term
            counts.append({"model": m, "dtype": d, "kind": kind, "tokens": int(t), "tasks": len(c),
                           "calibrated": float(t) in measured,
                           "real mean / sim": c["real_us"].mean() / c["sim_us"].mean()})
        one = g[g["tokens"] == 1]
        bracket = {}
        if after and f"{m} {d}" in after:
            later = table_us(after[f"{m} {d}"], TABLE_OF[kind], m, d, g["tokens"])
            if later is None:
                raise RuntimeError(f"the profile calibrated after {m} {d}'s cases: expected a {TABLE_OF[kind]} "
                                   "table, found none")
            bracket = {"sim s, table after": later.sum() / 1e6,
                       "drift during the cases %": 100 * (later.sum() / sim - 1),
                       "error against the table after %": 100 * (later.sum() - real) / real}
        recs.append({
            "model": m, "dtype": d, "expert": kind, "tasks": len(g),
            "real s": real / 1e6, "sim s": sim / 1e6,
            "error %": 100 * (sim - real) / real,
            # Sign as the error's: what each part adds to (sim - real) / real.
            "at calibrated counts %": -100 * at_table / real,
            "at other counts %": -100 * at_interp / real,
            "run mean / median - 1 %": 100 * _mean_over_median(g),
            "1 token: real mean / table": one["real_us"].mean() / one["sim_us"].mean() if len(one) else float("nan"),
            **bracket,
        })
    return pd.DataFrame(recs), pd.DataFrame(counts)


def _mean_over_median(g: pd.DataFrame) -> float:
    """Task-weighted mean over median of each count's real times, minus 1 (counts with at least 5 tasks)."""
    num = den = 0.0
    for _, c in g.groupby("tokens"):
        if len(c) >= 5:
            num += c["real_us"].sum()
            den += c["real_us"].median() * len(c)
    return num / den - 1 if den else float("nan")


def decompose_index(root: pathlib.Path, path: pathlib.Path, idx: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """decompose() for the round of one index: its tasks, the profile its simulated cases read, its brackets."""
    try:
        profile = common.load_toml(root / idx["profile_copy"])
    except (OSError, ValueError, KeyError) as e:
        raise RuntimeError(f"{path}: expected the profile copy named by profile_copy, found: {e}") from e
    tasks = paired_tasks(root, idx)
    if tasks.empty:
        raise RuntimeError(f"{path}: expected expert tasks in the runs' timelines, found none")
    after = {}
    for group, rel in idx.get("after_profiles", {}).items():
        try:
            after[group] = common.load_toml(root / rel)
        except (OSError, ValueError) as e:
            raise RuntimeError(f"{path}: expected the profile {rel} ({group} calibrated after its cases), "
                               f"found: {e}") from e
    return decompose(tasks, profile, after)


def brackets_of(t: pd.DataFrame) -> dict:
    """Per group whose cases were bracketed: the table after against the one before over the same tasks, the
    error had the simulation read the table after, and whether the real time lay between the two."""
    out = {}
    t = t[t["expert"].isin(["routed", "shared"])]
    for (m, d), g in t.groupby(["model", "dtype"]):
        if "sim s, table after" in g and g["sim s, table after"].notna().all():
            real, sim, later = float(g["real s"].sum()), float(g["sim s"].sum()), float(g["sim s, table after"].sum())
            out[f"{m} {d}"] = {"drift": later / sim - 1, "error_after": (later - real) / real,
                               "inside": bool(min(sim, later) <= real <= max(sim, later))}
    return out


def run(results: str, out):
    found = latest_index(results)
    if found is None:
        return None
    path, idx = found
    root = pathlib.Path(results)
    t, counts = decompose_index(root, path, idx)

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, kind in zip(axes, ["routed", "shared"]):
        c = counts[(counts["kind"] == kind) & (counts["tasks"] >= 5)]
        for (m, d), g in c.groupby(["model", "dtype"]):
            line, = ax.plot(g["tokens"], g["real mean / sim"], "-", lw=0.8, label=f"{m} {d}")
            cal = g[g["calibrated"]]
            ax.plot(cal["tokens"], cal["real mean / sim"], "o", ms=3, color=line.get_color())
            ax.plot(g[~g["calibrated"]]["tokens"], g[~g["calibrated"]]["real mean / sim"], "x", ms=4,
                    color=line.get_color())
        ax.axhspan(0.95, 1.05, color="0.9")
        ax.axhline(1.0, color="k", lw=0.6)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("tokens per expert (o: calibrated, x: interpolated or clamped)")
        ax.set_title(f"{kind} experts", fontsize=9)
    axes[0].set_ylabel("real mean time / simulated time, per token count")
    axes[0].legend(fontsize=7)
    fig.suptitle(TITLE, fontsize=10)

    # The group sums are the experts' (what the calibration's cpu-expert/cpu-shared tables predict); the rest of
    # the step's kinds are rows of the table, each against its own table.
    full = t
    t = t[t["expert"].isin(["routed", "shared"])]
    total = t.groupby(["model", "dtype"])[["real s", "sim s"]].sum()
    parts = t.groupby(["model", "dtype"])
    lines = []
    for (m, d), g in parts:
        real = total.loc[(m, d), "real s"]
        sim = total.loc[(m, d), "sim s"]
        err = 100 * (sim - real) / real
        cal = float((g["at calibrated counts %"] * g["real s"]).sum() / real)
        itp = float((g["at other counts %"] * g["real s"]).sum() / real)
        lines.append((m, d, err, cal, itp))
    brackets = brackets_of(t)
    # The other rounds of a series (make validation ROUNDS=N): their brackets, how far the machine moved.
    series = []
    for other in validation.series_indexes(path):
        if other == path:
            series.append((other, brackets))
            continue
        try:
            oidx = json.loads(other.read_text())
        except (OSError, ValueError) as e:
            raise RuntimeError(f"{other}: expected a validation index (JSON), found: {e}") from e
        series.append((other, brackets_of(decompose_index(root, other, oidx)[0])))
    dominant = sum(1 for *_, cal, itp in lines if abs(cal) >= abs(itp))
    headline = ("expert tasks' error by group " + ", ".join(f"{m} {d} {e:+.1f}%" for m, d, e, _, _ in lines) +
                f"; at calibrated token counts the larger part in {dominant} of {len(lines)} groups")
    if brackets:
        headline += ("; the same calibration after the cases moved by " +
                     ", ".join(f"{100 * b['drift']:+.1f}%" for b in brackets.values()) +
                     f" (real time inside the bracket in {sum(b['inside'] for b in brackets.values())} of "
                     f"{len(brackets)})")
    notes = (
        "Error = (simulated - real) / real over every expert task of a group's cases (the first measured "
        "repetition, whose timeline the run kept). 'at calibrated counts' + 'at other counts' = error: "
        "the first compares the run's mean time at a token count the calibration measured with the table's "
        "entry (the machine between the calibration and the cases, and the table's statistic); the second "
        "the run's mean with the linear interpolation between measured counts (a kernel's time is a "
        "staircase in the token count), or the last entry for counts beyond the table (clamped). 'run mean "
        "/ median - 1' is how far the run's tasks' mean exceeds their median (per count, task-weighted): "
        "what a table of medians loses on a sum of tasks here. "
        "'1 token: real mean / table': the count that dominates decode. 'drift during the cases': the "
        "group calibrated again right after its real cases (not read by the simulation), its table over the "
        "same tasks against the one before; 'error against the table after': the error had the simulation "
        "read that one. A real time between the two (inside the bracket) cannot be told from the machine's "
        "move while the cases ran.\n\n"
        "By group (routed and shared together): " +
        "; ".join(f"{m} {d}: error {e:+.2f}% = {c:+.2f}% at calibrated counts {i:+.2f}% at other counts"
                  for m, d, e, c, i in lines) + ".\n\n" +
        ("Bracket (routed and shared together): " +
         "; ".join(f"{k}: table after {100 * b['drift']:+.2f}% against the one before, error against it "
                   f"{100 * b['error_after']:+.2f}%, real time {'inside' if b['inside'] else 'outside'} the bracket"
                   for k, b in brackets.items()) + ".\n\n" if brackets else
         "No bracket: the run did not calibrate again after each group's cases (--no-bracket).\n\n") +
        f"Index: `{path}`; profile the simulated cases read: `{idx['profile_copy']}`.\n")
    every = [b for _, bs in series for b in bs.values()]
    if len(series) > 1 and every:
        drifts = [b["drift"] for b in every]
        notes += (f"\nBrackets of all {len(series)} rounds of the series (the table after against the one before, "
                  "per group): " + "; ".join(
                      f"{p.stem}: " + ", ".join(f"{k} {100 * b['drift']:+.1f}%{'' if b['inside'] else ' (outside)'}"
                                                for k, b in bs.items()) for p, bs in series) +
                  f". Over the series: {100 * min(drifts):+.1f}% to {100 * max(drifts):+.1f}%, the real time "
                  f"inside the bracket in {sum(b['inside'] for b in every)} of {len(every)} groups.\n")
        headline += (f"; over the series' {len(series)} rounds the bracket moved {100 * min(drifts):+.1f}% to "
                     f"{100 * max(drifts):+.1f}% (inside in {sum(b['inside'] for b in every)} of {len(every)})")
    summary = {"run": str(path), "headline": headline, "verdict": "measured (a breakdown, no target)",
               "groups": {f"{m} {d}": {"error": e / 100, "at_calibrated": c / 100, "at_other": i / 100,
                                       **brackets.get(f"{m} {d}", {})}
                          for m, d, e, c, i in lines}}
    if len(series) > 1 and every:
        summary["series_brackets"] = {"rounds": len(series), "drift_min": min(drifts), "drift_max": max(drifts),
                                      "inside": sum(b["inside"] for b in every), "groups": len(every)}
    return common.write_result(out, "validation_tasks", TITLE, full, fig, summary, notes)


if __name__ == "__main__":
    sys.exit(common.figure_main(run))
