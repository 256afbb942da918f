# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""What a task costs inside a run of every lane (docs/GPU.md, "Contention"):
the committed H200 replays give, per case and task kind, the simulated busy
time (the idle machine's tables), the real one and the number of tasks
(`replay-run*.log`). Per task kind this fits two named terms, a factor on
the table's time and a fixed cost per task,

    real busy = factor * simulated busy + per_task_us * tasks,

on half the cases of the three base repeats (least squares on the relative
error; a negative per-task cost is set to 0 and the factor refitted), and
checks them out of sample: on the other half of the cases (all three
repeats), and on the replay of the cases simulated on the H200's own tables
(`replay-calibrated.csv`). It prints, per kind, the median |real / predicted
- 1| without the terms (factor 1, no per-task cost) and with them.

    python3 analysis/gpu_contention.py [--toml] [--check RUN_WITHOUT RUN_WITH [RUN ...]] [--handoff RUN]

--check: two runs of suites/gpu-replay.toml with timelines, on
h100-host-calibrated and on h100-host-contention (the same with the terms):
the held-out cases end to end against the three base repeats' median real
time, per strategy, and the ranking rule of analysis/gpu_replay.py; runs
after the first two (other terms, e.g. a hand-off at several values) are
judged on the fit half and the held-out half. --handoff: a hand-off per
wait across lanes fitted as a correction of the composition alone.

Plain Python: no pandas needed."""

from __future__ import annotations

import argparse
import itertools
import pathlib
import re
import statistics
import sys

import inputs

ROOT = pathlib.Path(__file__).resolve().parent.parent
H200 = ROOT / "docs" / "measurements" / "gpu-h200-2026-11-27"
LOGS = ["replay-run1.log", "replay-run2.log", "replay-run3.log"]
BASE = ["replay-base-1.csv", "replay-base-2.csv", "replay-base-3.csv"]
CALIBRATED = "replay-calibrated.csv"
# The cost model's terms (hardware [[contention]] term names) and the replay's
# task kinds each is fitted over.
TERMS = {
    "gpu-expert": ("gpu-expert",),
    "cpu-expert": ("cpu-expert (cpu)", "deferred-expert"),
    "expert-copy": ("demand-load", "prefetch", "swap-load"),
    "act-to-cpu": ("act-to-cpu",),
    "act-to-gpu": ("act-to-gpu",),
    "gpu-layer": ("attention", "shared-experts", "dense-ffn", "lm-head", "predict"),
}

BLOCK = re.compile(r"^(\S+) \((.*)\):$")
STEPS = re.compile(r"^steps: simulated ([\d.]+) us, composed ([\d.]+) us, real ([\d.]+) us")
KIND = re.compile(r"^\s+(\S+(?: \(cpu\))?)\s+(\d+) tasks (?:real|placeholder)\s+busy sim\s+([\d.]+) us "
                  r"real\s+([\d.]+) us")


def parse_logs(paths: list[pathlib.Path]) -> list[dict]:
    """Every case block of the replay logs: strategy, axes, simulated /
    composed / real step times (us) and, per task kind, (tasks, simulated
    busy us, real busy us)."""
    out = []
    for path in paths:
        cur = None
        text = inputs.read_text(path, "a replay log (moebench replay's output)").splitlines()
        for no, line in enumerate(text, start=1):
            if m := BLOCK.match(line):
                cur = {"where": f"{path.name}:{no}", "strategy": m.group(1), "axes": m.group(2), "kinds": {}}
                out.append(cur)
            elif cur is not None and (m := STEPS.match(line)):
                cur["sim"], cur["comp"], cur["real"] = map(float, m.groups())
            elif cur is not None and (m := KIND.match(line)):
                cur["kinds"][m.group(1)] = (int(m.group(2)), float(m.group(3)), float(m.group(4)))
    return [b for b in out if "real" in b]


def cases_of(csv_path: pathlib.Path, blocks: list[dict]) -> list[dict]:
    """The log blocks of one replay file's cases, in its order: a case is
    matched by strategy, axes and its real time (us, to 0.2)."""
    out = []
    for line, r in inputs.read_csv(csv_path, "a replay CSV", ("case_id", "strategy", "axes", "real_us")):
        real = inputs.number(r["real_us"], f"{csv_path}:{line}", "real_us", above=0)
        hit = [b for b in blocks if b["strategy"] == r["strategy"] and b["axes"] == r["axes"]
               and abs(b["real"] - real) < 0.2]
        if len(hit) != 1:
            raise inputs.InputError(f"{csv_path}:{line}: expected one block of the replay logs for case "
                                    f"{r['case_id']} ({r['strategy']}, real {real} us), found {len(hit)}")
        out.append(dict(hit[0], case=r["case_id"]))
    return out


def samples(cases: list[dict], kinds: tuple) -> list[tuple]:
    """(tasks, simulated busy, real busy) of `kinds` per case, the kinds summed."""
    out = []
    for c in cases:
        got = [c["kinds"][k] for k in kinds if k in c["kinds"]]
        if got:
            out.append((sum(g[0] for g in got), sum(g[1] for g in got), sum(g[2] for g in got)))
    return out


def fit(points: list[tuple]) -> tuple[float, float]:
    """(factor, per-task us) minimising the squared relative error of
    factor * sim + per_task * tasks against real; per-task >= 0."""
    xs = [(s / r, n / r) for n, s, r in points if r > 0]
    a11 = sum(x * x for x, _ in xs)
    a12 = sum(x * y for x, y in xs)
    a22 = sum(y * y for _, y in xs)
    b1 = sum(x for x, _ in xs)
    b2 = sum(y for _, y in xs)
    det = a11 * a22 - a12 * a12
    if det > 1e-12 * max(1.0, a11 * a22):
        factor, per_task = (b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det
        if per_task >= 0:
            return factor, per_task
    return b1 / a11, 0.0


def error(points: list[tuple], factor: float, per_task: float) -> float:
    """Median |real / predicted - 1| over the cases."""
    return statistics.median(abs(r / (factor * s + per_task * n) - 1) for n, s, r in points)


def analyse(fit_cases: list[dict], held: dict[str, list[dict]]) -> tuple[list[str], dict]:
    lines = [f"{'term':<16}{'factor':>8}{'per task us':>13}   " +
             "   ".join(f"{name}: without -> with" for name in held)]
    terms = {}
    for term, kinds in TERMS.items():
        pts = samples(fit_cases, kinds)
        if len(pts) < 2:
            continue
        factor, per_task = fit(pts)
        terms[term] = {"factor": factor, "per_task_us": per_task, "fitted_on": len(pts), "held_out": {}}
        cells = []
        for name, cases in held.items():
            hp = samples(cases, kinds)
            before, after = error(hp, 1.0, 0.0), error(hp, factor, per_task)
            terms[term]["held_out"][name] = (before, after, len(hp))
            cells.append(f"{before:.3f} -> {after:.3f} ({len(hp)} cases)")
        lines.append(f"{term:<16}{factor:>8.3f}{per_task:>13.2f}   " + "   ".join(cells))
    return lines, terms


def span_us(timeline: pathlib.Path, first: int = 0, last: int = 6) -> float:
    """A simulated case's steps first..last as the replay counts them: from
    the first task's start to the last task's end (us)."""
    lo, hi = float("inf"), float("-inf")
    for e in timeline_events(timeline):
        step = e.get("args", {}).get("step")
        if step is None or not first <= step <= last:
            continue
        lo, hi = min(lo, e["ts"]), max(hi, e["ts"] + e["dur"])
    if lo > hi:
        raise inputs.InputError(f"{timeline}: expected tasks of steps {first}-{last} (a timeline of "
                                f"suites/gpu-replay.toml), found none")
    return hi - lo


def timeline_events(timeline: pathlib.Path) -> list[dict]:
    """The complete ("X") events of a Chrome-trace timeline, each with finite ts and dur >= 0."""
    doc = inputs.read_json(timeline, "a case's timeline (run_suite --timeline)")
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise inputs.InputError(f"{timeline}: expected a Chrome-trace timeline (an object with traceEvents), "
                                f"found {type(doc).__name__}")
    out = []
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        where = f"{timeline}: traceEvents[{i}]"
        e["ts"] = inputs.number(e.get("ts"), where, "ts")
        e["dur"] = inputs.number(e.get("dur"), where, "dur", low=0)
        if not isinstance(e.get("args", {}), dict):
            raise inputs.InputError(f"{where}: key 'args': expected an object, found {e.get('args')!r}")
        out.append(e)
    return out


def timelines(run_dir: pathlib.Path) -> dict:
    """{(strategy, axes): timeline path} of a run of suites/gpu-replay.toml with timelines."""
    if not run_dir.is_dir():
        raise inputs.InputError(f"{run_dir}: expected a run folder of suites/gpu-replay.toml with timelines, "
                                f"found {inputs.kind(run_dir)}")
    out = {}
    for line, r in inputs.read_jsonl(run_dir / "runs.jsonl", "a run's rows"):
        if not all(isinstance(r.get(k), str) for k in ("strategy", "axes", "case_id")):
            raise inputs.InputError(f"{run_dir / 'runs.jsonl'}:{line}: expected a row with strategy, axes and "
                                    "case_id, found one without")
        out[(r["strategy"], r["axes"])] = run_dir / "timelines" / f"{r['case_id']}.json"
    if not out:
        raise inputs.InputError(f"{run_dir / 'runs.jsonl'}: expected the rows of a run, found none")
    return out


def simulated(run_dir: pathlib.Path) -> dict:
    """{(strategy, axes): steps 0-6 simulated us} of such a run."""
    return {key: span_us(path) for key, path in timelines(run_dir).items()}


def replayed(run_dir: pathlib.Path) -> tuple[list[dict], int]:
    """The cases of the three base repeats whose simulation in `run_dir` is
    the one replayed (steps 0-6 equal to the replay's, to 1e-6): index,
    strategy, group (the axes), real times (each repeat's and their
    median), the median composed time, the timeline and its simulated time;
    and how many were left out (their simulation changed since the replay
    ran: another graph ran on the machine)."""
    reps = [[r for _, r in inputs.read_csv(H200 / p, "a replay CSV", ("strategy", "axes", "sim_us", "real_us",
                                                                         "composed_us"))] for p in BASE]
    paths = timelines(run_dir)
    kept = []
    for i, r in enumerate(reps[0]):
        key = (r["strategy"], r["axes"])
        if key not in paths:
            raise inputs.InputError(f"{run_dir}: expected a run of suites/gpu-replay.toml (the replay's cases), "
                                    f"found no case {r['strategy']} ({r['axes']})")
        sim = span_us(paths[key])
        if abs(sim / float(r["sim_us"]) - 1) > 1e-6:
            continue
        reals = [float(rep[i]["real_us"]) for rep in reps]
        kept.append({"i": i, "key": key, "strategy": r["strategy"], "group": r["axes"], "reals": reals,
                     "real": statistics.median(reals),
                     "comp": statistics.median(float(rep[i]["composed_us"]) for rep in reps),
                     "timeline": paths[key], "sim0": sim})
    if not kept:
        raise inputs.InputError(f"{run_dir}: expected cases whose simulation is the one replayed, found none of "
                                f"{len(reps[0])} (every simulation changed since the replay ran)")
    return kept, len(reps[0]) - len(kept)


def half_errors(kept: list[dict], key: str, half: int) -> str:
    e = [c["real"] / c[key] - 1 for c in kept if c["i"] % 2 == half]
    return (f"median {statistics.median(e):+.3f}, median |.| {statistics.median(abs(x) for x in e):.3f}, "
            f"within 5%: {sum(abs(x) <= 0.05 for x in e)} of {len(e)}")


def check(without: pathlib.Path, with_terms: pathlib.Path, others: list[pathlib.Path] = ()) -> list[str]:
    """The terms end to end: the held-out cases (odd-numbered) simulated
    without and with them against the median real time of the three base
    repeats (replayed: the cases whose simulation is the one replayed).
    `others`: more runs with other terms (e.g. a hand-off term at several
    values), each judged on the fit half (even-numbered cases: where a
    value is chosen) and the held-out half."""
    kept, changed = replayed(without)
    runs = {"sim1": simulated(with_terms), **{f"more{j}": simulated(p) for j, p in enumerate(others)}}
    for c in kept:
        c.update({k: sim[c["key"]] for k, sim in runs.items()})
    held = [c for c in kept if c["i"] % 2 == 1]
    lines = [f"end to end, the held-out (odd-numbered) cases whose simulation is the one replayed: {len(held)} "
             f"({changed} of {len(kept) + changed} cases left out: their simulation changed since the replay)"]
    for name, k in (("without the terms", "sim0"), ("with the terms", "sim1")):
        lines.append(f"  {name:<18} real / simulated - 1: {half_errors(kept, k, 1)}")
    by = {}
    for c in held:
        by.setdefault(c["strategy"], []).append(c)
    for st, cs in sorted(by.items()):
        a = statistics.median(c["real"] / c["sim0"] - 1 for c in cs)
        b = statistics.median(c["real"] / c["sim1"] - 1 for c in cs)
        lines.append(f"  {st:<24}{a:+.3f} -> {b:+.3f}  ({len(cs)} cases)")
    # The ranking rule of analysis/gpu_replay.py over every kept case: pairs the machine separates.
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import gpu_replay

    groups = {}
    for c in kept:
        groups.setdefault(c["group"], []).append(c)
    for name, k in (("without the terms", "sim0"), ("with the terms", "sim1")):
        n = same = 0
        for cs in groups.values():
            for a, b in itertools.combinations(cs, 2):
                sign = gpu_replay.separated(a["reals"], b["reals"])
                if sign:
                    n += 1
                    same += ((a[k] > b[k]) - (a[k] < b[k])) == sign
        lines.append(f"  ranking {name}: the simulation orders {same} of the {n} pairs the machine separates "
                     f"(all {len(kept)} kept cases)")
    for j, path in enumerate(others):
        lines.append(f"  {path}: fit half {half_errors(kept, f'more{j}', 0)}; held out "
                     f"{half_errors(kept, f'more{j}', 1)}")
    if others:
        lines.append(f"  (with the terms alone: fit half {half_errors(kept, 'sim1', 0)})")
    return lines


def cross_lane_waits(timeline: pathlib.Path, first: int = 0, last: int = 6) -> int:
    """Tasks of steps first..last that wait for a task of another lane."""
    events = timeline_events(timeline)
    lane = {e["args"]["task"]: e["tid"] for e in events if "task" in e.get("args", {})}
    n = 0
    for e in events:
        a = e["args"]
        if first <= a.get("step", -1) <= last and any(
                w >= 0 and lane.get(w, e["tid"]) != e["tid"] for w in a.get("waits", [])):
            n += 1
    return n


def handoff(run_dir: pathlib.Path) -> list[str]:
    """A hand-off per wait across lanes as a correction of the composition
    alone: gap = real - composed (medians over the three base repeats) fitted
    as h x waits through the origin on the even cases, checked on the odd
    ones (replayed cases only)."""
    rows = [(c["i"], c["real"], c["comp"], cross_lane_waits(c["timeline"])) for c in replayed(run_dir)[0]]
    fit_rows, held = [x for x in rows if x[0] % 2 == 0], [x for x in rows if x[0] % 2 == 1]
    if not held or not sum(x[3] ** 2 for x in fit_rows):
        raise inputs.InputError(f"{run_dir}: expected replayed cases with waits across lanes on both halves, "
                                "found none")
    h = sum((x[1] - x[2]) * x[3] for x in fit_rows) / sum(x[3] ** 2 for x in fit_rows)
    before = [abs(x[1] / x[2] - 1) for x in held]
    after = [abs(x[1] / (x[2] + h * x[3]) - 1) for x in held]
    return [f"hand-off per wait across lanes, fitted on {len(fit_rows)} even cases' composition gap: {h:.2f} us; "
            f"the {len(held)} odd cases' composition error, median |.| {statistics.median(before):.3f} -> "
            f"{statistics.median(after):.3f}, within 2%: {sum(x <= 0.02 for x in before)} -> "
            f"{sum(x <= 0.02 for x in after)}"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--toml", action="store_true", help="print the terms as hardware profile entries")
    ap.add_argument("--check", nargs="+", type=pathlib.Path, metavar="RUN",
                    help="RUN_WITHOUT RUN_WITH [RUN ...]: runs of suites/gpu-replay.toml with timelines")
    ap.add_argument("--handoff", type=pathlib.Path, metavar="RUN",
                    help="a run folder of suites/gpu-replay.toml with timelines")
    args = ap.parse_args(argv)
    if args.check is not None and len(args.check) < 2:
        ap.error(f"--check: expected two run folders of suites/gpu-replay.toml (without and with the terms), "
                 f"found {len(args.check)}")
    blocks = parse_logs([H200 / p for p in LOGS])
    base = [cases_of(H200 / p, blocks) for p in BASE]
    # Fit on the even-numbered cases of every repeat, hold out the odd ones
    # (each repeat's own machine state on both sides) and the calibrated replay.
    fit_cases = [c for run in base for i, c in enumerate(run) if i % 2 == 0]
    held = {"other half": [c for run in base for i, c in enumerate(run) if i % 2 == 1],
            "own tables": cases_of(H200 / CALIBRATED, blocks)}
    print(f"Contention terms from {len(fit_cases)} case runs (the even-numbered cases of the three base repeats, "
          f"{H200.relative_to(ROOT)}); median |real / predicted - 1| per task kind's busy time, held out\n")
    lines, terms = analyse(fit_cases, held)
    print("\n".join(lines))
    if args.check:
        print("\n" + "\n".join(check(args.check[0], args.check[1], args.check[2:])))
    if args.handoff:
        print("\n" + "\n".join(handoff(args.handoff)))
    if args.toml:
        print("\n# The terms as a hardware profile's entries (configs/hardware/h100-host-contention.toml)")
        for term, t in terms.items():
            print(f"[[contention]]\nterm = \"{term}\"\nfactor = {t['factor']:.3f}\n"
                  f"per_task_us = {t['per_task_us']:.2f}\nsource = \"analysis/gpu_contention.py: fitted on the "
                  f"even-numbered cases of the H200 base repeats (2026-11-27), {t['fitted_on']} case runs\"\n")
    return 0


if __name__ == "__main__":
    sys.exit(inputs.main_guard("gpu_contention.py", main))
