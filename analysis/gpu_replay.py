# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""GPU replay (docs/GPU.md): each case of suites/gpu-replay.toml
simulated on a profile measured on a lent GPU machine, then its task graph
run for real there (`moebench replay`, scripts/gpu-session.sh). Per case the
end-to-end error (real / simulated - 1 over steps 0-6) and, in replays since
the split, its two parts: the table error (the real run's own task
durations composed by the graph, against the simulation) and the
composition error (the real run against that composition); per group of
cases that differ only in the strategy (model, batch, cache ratio): whether
the strategies rank the same real and simulated, and each pair's speedup
real against simulated.

Targets: every case within 5% end to end, identical ranking,
every speedup ratio within 5%.

Several files are repeats of one replay (the same cases, the same
simulation, run again on the machine): then a case counts as within 5%
only when every repeat is, as outside when every repeat is outside on the
same side, and as inconclusive otherwise; ranking and speedups are judged
on each case's median real time over the repeats, and each repeat's own
counts are printed beside them.

    python3 analysis/gpu_replay.py [REPLAY_CSV ...]
(default: the three repeats of docs/measurements/gpu-h200-2026-11-27/).
Plain Python: no pandas needed."""

from __future__ import annotations

import csv
import itertools
import pathlib
import statistics
import sys

import inputs

MEASUREMENTS = pathlib.Path(__file__).resolve().parent.parent / "docs/measurements"
# The newest replay with the split: three repeats of the base variant on the
# lent H200 machine (docs/GPU.md, "Second session").
DEFAULT = [MEASUREMENTS / "gpu-h200-2026-11-27" / f"replay-base-{i}.csv" for i in (1, 2, 3)]
TOLERANCE = 0.05  # the 5%
COMPOSITION_TOLERANCE = 0.02  # the whole-step validation's target for the composition error
# A pair of strategies the machine separates beyond its own noise: the same
# order in every repeat, by more than this in each (real time ratio).
SEPARATION = 0.05


def parse_axes(axes: str) -> dict[str, str]:
    out = {}
    for part in axes.split(";"):
        if "=" in part:
            k, v = part.strip().split("=", 1)
            out[k.split(".")[-1]] = v
    return out


COLUMNS = ("case_id", "strategy", "axes", "sim_us", "real_us", "end_to_end_error")


def load(path: pathlib.Path) -> list[dict]:
    """A replay CSV's rows, checked as the C++ readers check theirs: a regular UTF-8 file with the columns,
    every time finite and above 0, the error the one its times give, each case once."""
    rows, seen = [], {}
    for line, r in inputs.read_csv(path, "a replay CSV (moebench replay's replay.csv)", COLUMNS):
        where = f"{path}:{line}"
        try:
            a = parse_axes(r["axes"])
            model, batch, cache = a["preset"], a["batch_size"], a["cache_ratio"]
        except (KeyError, ValueError):
            raise inputs.InputError(f"{where}: key 'axes': expected preset, batch_size and cache_ratio, found "
                                    f"'{inputs.shown(r['axes'])}'") from None
        sim = inputs.number(r["sim_us"], where, "sim_us", above=0)
        real = inputs.number(r["real_us"], where, "real_us", above=0)
        err = inputs.number(r["end_to_end_error"], where, "end_to_end_error")
        if abs(err - (real / sim - 1.0)) > 1e-4 + 1e-9 * abs(err):
            raise inputs.InputError(f"{where}: key 'end_to_end_error': expected real_us / sim_us - 1 = "
                                    f"{real / sim - 1:.4f}, found {err} (an edited row?)")
        if r["case_id"] in seen:
            raise inputs.InputError(f"{where}: key 'case_id': expected each case once, found {r['case_id']} "
                                    f"again (line {seen[r['case_id']]})")
        seen[r["case_id"]] = line
        opt = {k: inputs.number(r[k], where, k) if r.get(k) else None
               for k in ("table_error", "composition_error")}
        rows.append({"case": r["case_id"], "strategy": r["strategy"], "model": model,
                     "batch": int(inputs.number(batch, where, "axes batch_size", low=1, integer=True)),
                     "cache": inputs.number(cache, where, "axes cache_ratio", low=0, high=1),
                     "sim": sim, "real": real, "err": err,
                     "gpu": r.get("gpu_expert_real_over_sim"), "cpu": r.get("cpu_expert_real_over_sim"),
                     "copy": r.get("copy_real_over_sim"),
                     # Replays since the split (moebench replay): the real run's own task
                     # durations composed by the graph, and the two parts of the error.
                     "table": opt["table_error"], "comp": opt["composition_error"]})
    if not rows:
        raise inputs.InputError(f"{path}: expected replay rows, found none")
    return rows


def load_repeats(paths: list[pathlib.Path]) -> list[list[dict]]:
    """Each file's rows, the files checked to be repeats of one replay: the
    same cases with the same simulated times, in any order (returned in the
    first file's order), each file once and each measured apart (one file
    given three times once counted as three repeats)."""
    paths = inputs.distinct_files(paths, "repeats of one replay")
    runs = [load(p) for p in paths]
    first = {r["case"]: r for r in runs[0]}
    for i, (path, rows) in enumerate(zip(paths[1:], runs[1:]), start=1):
        mine = {r["case"]: r for r in rows}
        if set(mine) != set(first):
            extra, missing = sorted(set(mine) - set(first)), sorted(set(first) - set(mine))
            raise inputs.InputError(
                f"{path}: expected a repeat of {paths[0]} (the same {len(first)} cases), found {len(missing)} of its "
                f"cases missing ({', '.join(missing[:3]) or 'none'}) and {len(extra)} others "
                f"({', '.join(extra[:3]) or 'none'})")
        for case, r in mine.items():
            if abs(r["sim"] - first[case]["sim"]) > 1e-6 * max(1.0, abs(r["sim"])):
                raise inputs.InputError(
                    f"{path}: case {case} ({r['strategy']}): expected the simulated time of {paths[0]} "
                    f"({first[case]['sim']} us), found {r['sim']} us: not a repeat of the same simulation")
        for j in range(i):
            other = {r["case"]: r["real"] for r in runs[j]}
            if all(other[c] == r["real"] for c, r in mine.items()):
                raise inputs.InputError(f"{path}: expected a repeat measured apart from {paths[j]}, found every "
                                        "real time equal to its (a copy of one file?)")
    order = {c: k for k, c in enumerate(r["case"] for r in runs[0])}
    return [sorted(rows, key=lambda r: order[r["case"]]) for rows in runs]


def upper_median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def judge(errs: list[float], tol: float = TOLERANCE) -> str:
    """A case over its repeats: within only when every repeat is, outside only
    when every repeat is outside on the same side."""
    if all(abs(e) <= tol for e in errs):
        return "within"
    if all(e > tol for e in errs) or all(e < -tol for e in errs):
        return "outside"
    return "inconclusive"


def rank_and_pairs(cases: list[dict], real_key: str, lines: list[str] | None):
    """Ranking and pairs' speedups per group (model, batch, cache ratio), on
    each case's real time under real_key; the group lines go to lines."""
    groups: dict[tuple, list[dict]] = {}
    for r in cases:
        groups.setdefault((r["model"], r["batch"], r["cache"]), []).append(r)
    same_rank = pairs = pairs_ok = 0
    worst = (0.0, "")
    for key, g in sorted(groups.items()):
        by_sim = [r["strategy"] for r in sorted(g, key=lambda r: r["sim"])]
        by_real = [r["strategy"] for r in sorted(g, key=lambda r: r[real_key])]
        same = by_sim == by_real
        same_rank += same
        n = ok = 0
        for a, b in itertools.combinations(g, 2):
            s, q = a["sim"] / b["sim"], a[real_key] / b[real_key]
            e = q / s - 1.0
            n += 1
            ok += abs(e) <= TOLERANCE
            if abs(e) > abs(worst[0]):
                worst = (e, f"{a['strategy']} / {b['strategy']} on {key[0]} batch {key[1]} cache {key[2]}: "
                            f"simulated {s:.3f}, real {q:.3f}")
        pairs += n
        pairs_ok += ok
        if lines is not None:
            lines.append(f"{key[0]:<18}{key[1]:>6}{key[2]:>7.2f}  {'yes' if same else 'no':<17}  {ok} of {n}")
            if not same:
                lines.append(f"{'':31}simulated: {' < '.join(by_sim)}")
                lines.append(f"{'':31}real:      {' < '.join(by_real)}")
    return {"groups": len(groups), "same_rank": same_rank, "pairs": pairs, "pairs_ok": pairs_ok, "worst": worst}


def kendall_tau(xs: list[float], ys: list[float]) -> float:
    """Kendall's tau-a of two orderings of the same items (1: the same order, -1: reversed)."""
    n = len(xs)
    if n < 2:
        return float("nan")
    s = 0
    for i, j in itertools.combinations(range(n), 2):
        s += ((xs[i] > xs[j]) - (xs[i] < xs[j])) * ((ys[i] > ys[j]) - (ys[i] < ys[j]))
    return s / (n * (n - 1) / 2)


def separated(a_reals: list[float], b_reals: list[float]) -> int:
    """+1 when a is slower than b by more than SEPARATION in every repeat, -1
    when faster by more in every repeat, 0 when the machine does not separate them."""
    q = [a / b for a, b in zip(a_reals, b_reals)]
    if all(x > 1 + SEPARATION for x in q):
        return 1
    if all(x < 1 / (1 + SEPARATION) for x in q):
        return -1
    return 0


def noise_ranking(runs: list[list[dict]], lines: list[str] | None) -> dict:
    """The ranking judged against the machine's own noise, per group (model,
    batch, cache ratio): the pairs the machine separates (separated) and how
    many of them the simulation orders the same; Kendall's tau of the
    simulated times against the median real times beside the real repeats'
    tau against each other; the speedup error on the separated pairs only."""
    k = len(runs)
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(runs[0]):
        groups.setdefault((r["model"], r["batch"], r["cache"]), []).append(i)
    total = agree = sp_ok = 0
    taus_sim, taus_real, sp_errs = [], [], []
    for key, idx in sorted(groups.items()):
        reals = {i: [run[i]["real"] for run in runs] for i in idx}
        sim = {i: runs[0][i]["sim"] for i in idx}
        n = same = ok = 0
        for a, b in itertools.combinations(idx, 2):
            sign = separated(reals[a], reals[b])
            if sign == 0:
                continue
            n += 1
            same += ((sim[a] > sim[b]) - (sim[a] < sim[b])) == sign
            # The pair's speedup as the machine orders it (slower over faster):
            # real (median times) over simulated, minus 1.
            slow, fast = (a, b) if sign > 0 else (b, a)
            e = (statistics.median(reals[slow]) / statistics.median(reals[fast])) / (sim[slow] / sim[fast]) - 1.0
            sp_errs.append(e)
            ok += abs(e) <= TOLERANCE
        med = [statistics.median(reals[i]) for i in idx]
        tau_sim = kendall_tau([sim[i] for i in idx], med)
        tau_real = [kendall_tau([runs[u][i]["real"] for i in idx], [runs[v][i]["real"] for i in idx])
                    for u, v in itertools.combinations(range(k), 2)]
        total, agree, sp_ok = total + n, agree + same, sp_ok + ok
        taus_sim.append(tau_sim)
        taus_real.extend(tau_real)
        if lines is not None:
            rt = ", ".join(f"{t:+.2f}" for t in tau_real) or "-"
            lines.append(f"{key[0]:<18}{key[1]:>6}{key[2]:>7.2f}  {same:>3} of {n:<3}{tau_sim:>+14.2f}   {rt}")
    return {"separated": total, "separated_same": agree, "separated_speedups_ok": sp_ok,
            "separated_speedups_10": sum(abs(e) <= 2 * TOLERANCE for e in sp_errs),
            "speedup_err_median": upper_median([abs(e) for e in sp_errs]) if sp_errs else float("nan"),
            "tau_sim": taus_sim, "tau_real": taus_real}


def analyse(runs: list[list[dict]] | list[dict]) -> tuple[list[str], dict]:
    """The report's lines (printed by main, written by run) and the counts.
    runs: one replay's rows, or the rows of each repeat (load_repeats)."""
    if runs and isinstance(runs[0], dict):
        runs = [runs]
    k = len(runs)
    cases = []
    for i, r in enumerate(runs[0]):
        reps = [run[i] for run in runs]
        real = statistics.median(x["real"] for x in reps)
        comps = [x["comp"] for x in reps if x["comp"] is not None]
        tables = [x["table"] for x in reps if x["table"] is not None]
        cases.append(dict(r, errs=[x["err"] for x in reps], real_med=real, err_med=real / r["sim"] - 1.0,
                          verdict=judge([x["err"] for x in reps]),
                          comp_med=statistics.median(comps) if len(comps) == k else None,
                          table_med=statistics.median(tables) if len(tables) == k else None))
    lines = []
    if k == 1:
        lines.append(f"{'strategy':<24}{'model':<18}{'batch':>6}{'cache':>7}{'sim us':>12}{'real us':>12}"
                     f"{'real/sim-1':>11}{'gpu-exp':>9}{'cpu-exp':>9}{'copy':>7}")
        for r in cases:
            lines.append(f"{r['strategy']:<24}{r['model']:<18}{r['batch']:>6}{r['cache']:>7.2f}{r['sim']:>12.0f}"
                         f"{r['real']:>12.0f}{r['err']:>+11.3f}{r['gpu'] or '-':>9}{r['cpu'] or '-':>9}"
                         f"{r['copy'] or '-':>7}")
    else:
        lines.append(f"{'strategy':<24}{'model':<18}{'batch':>6}{'cache':>7}{'sim us':>12}{'real us med':>13}"
                     f"{'real/sim-1 med':>15}{'over repeats':>18}  {'case':<13}{'comp med':>9}")
        for r in cases:
            span = f"[{min(r['errs']):+.3f}, {max(r['errs']):+.3f}]"
            comp = f"{r['comp_med']:+.3f}" if r["comp_med"] is not None else "-"
            lines.append(f"{r['strategy']:<24}{r['model']:<18}{r['batch']:>6}{r['cache']:>7.2f}{r['sim']:>12.0f}"
                         f"{r['real_med']:>13.0f}{r['err_med']:>+15.3f}{span:>18}  {r['verdict']:<13}{comp:>9}")
    within = sum(r["verdict"] == "within" for r in cases)
    outside = sum(r["verdict"] == "outside" for r in cases)
    errs = [r["err_med"] for r in cases]
    c = {"cases": len(cases), "repeats": k, "within": within, "outside": outside,
         "inconclusive": len(cases) - within - outside, "median": upper_median(errs)}
    split = [r for r in cases if r["comp_med"] is not None]
    if split:
        comp = [r["comp_med"] for r in split]
        table = [r["table_med"] for r in split]
        c["comp_within"] = sum(abs(x) <= COMPOSITION_TOLERANCE for x in comp)
        c["comp_median"] = upper_median(comp)
        c["table_median"] = upper_median(table)
        of = f" (each case's median over {k} repeats)" if k > 1 else ""
        lines.append(f"\ncomposition error (real / composed - 1, the issue's target 2%){of}: {c['comp_within']} "
                     f"of {len(split)} within 2%, median {c['comp_median']:+.3f}; table error (composed / "
                     f"simulated - 1): median {c['table_median']:+.3f}")
    else:
        lines.append("\n(no composed times in this file: it predates the split of the error into tables and "
                     "composition, so only the end-to-end error is known)")
    if k == 1:
        lines.append(f"\nend to end: {within} of {len(cases)} cases within {TOLERANCE:.0%}; real / simulated - 1 "
                     f"from {min(errs):+.3f} to {max(errs):+.3f}, median {c['median']:+.3f} (target: every case "
                     f"within 5%)")
    else:
        lines.append(f"\nend to end over {k} repeats: {within} of {len(cases)} cases within {TOLERANCE:.0%} in every "
                     f"repeat, {outside} outside in every repeat, {c['inconclusive']} inconclusive (within in some, "
                     f"not in others); each case's median real / simulated - 1 from {min(errs):+.3f} to "
                     f"{max(errs):+.3f}, median {c['median']:+.3f} (target: every case within 5%)")
    on = " (on each case's median real time)" if k > 1 else ""
    lines.append(f"\n{'model':<18}{'batch':>6}{'cache':>7}  ranking the same?  pairs' speedups within 5%{on}")
    g = rank_and_pairs(cases, "real_med", lines)
    c.update({key: g[key] for key in ("groups", "same_rank", "pairs", "pairs_ok")})
    lines.append(f"\nranking identical in {g['same_rank']} of {g['groups']} groups (target: all); speedup ratios "
                 f"within 5%: {g['pairs_ok']} of {g['pairs']} pairs (target: all); worst {g['worst'][0]:+.3f} "
                 f"({g['worst'][1]})")
    if k > 1:
        lines.append(f"\nranking against the machine's own noise: the pairs the machine separates (the same order in "
                     f"all {k} repeats, by more than {SEPARATION:.0%} in each) and how many the simulation orders "
                     f"alike; Kendall's tau of simulated against median real times, beside the real repeats' tau "
                     f"against each other\n{'model':<18}{'batch':>6}{'cache':>7}  separated  tau sim/real   tau "
                     f"real/real")
        nz = noise_ranking(runs, lines)
        c.update({key: nz[key] for key in ("separated", "separated_same", "separated_speedups_ok")})
        c["tau_sim"], c["tau_real"] = nz["tau_sim"], nz["tau_real"]
        lines.append(f"\nthe simulation orders {nz['separated_same']} of the {nz['separated']} pairs the machine "
                     f"separates as the machine does; their speedups (slower over faster, real against simulated) within "
                     f"5%: {nz['separated_speedups_ok']}, within 10%: {nz['separated_speedups_10']} of "
                     f"{nz['separated']} (median |error| {nz['speedup_err_median']:.3f}); Kendall's tau, simulated "
                     f"against median real: {min(nz['tau_sim']):+.2f} to {max(nz['tau_sim']):+.2f}; real repeats "
                     f"against each other: {min(nz['tau_real']):+.2f} to {max(nz['tau_real']):+.2f} (median "
                     f"{statistics.median(nz['tau_real']):+.2f}). The strict counts above (identical ranking, every "
                     f"pair within 5%) hold the simulation to an order the machine itself does not repeat.")
        lines.append("\neach repeat alone:")
        for i, run in enumerate(runs, start=1):
            e = [r["err"] for r in run]
            gi = rank_and_pairs(run, "real", None)
            cp = [r["comp"] for r in run if r["comp"] is not None]
            comp = (f", composition error within 2% in {sum(abs(x) <= COMPOSITION_TOLERANCE for x in cp)} "
                    f"(median {upper_median(cp):+.3f})") if cp else ""
            lines.append(f"  repeat {i}: {sum(abs(x) <= TOLERANCE for x in e)} of {len(e)} within 5% (median "
                         f"{upper_median(e):+.3f}), ranking identical in {gi['same_rank']} of {gi['groups']}, "
                         f"{gi['pairs_ok']} of {gi['pairs']} speedups within 5%{comp}")
    return lines, c


def verdict(c: dict) -> str:
    """The issue's targets over the cases: met when every case is within in
    every repeat and rankings and speedups hold; not met when a case is
    outside in every repeat or a ranking or speedup misses; else
    inconclusive (the repeats disagree)."""
    rest = c["same_rank"] == c["groups"] and c["pairs_ok"] == c["pairs"]
    if c["within"] == c["cases"] and rest:
        return "targets met"
    if c["outside"] > 0 or not rest:
        return "targets not met"
    return "inconclusive"


def main() -> int:
    paths = [pathlib.Path(a) for a in sys.argv[1:]] or DEFAULT
    runs = load_repeats(paths)
    what = paths[0] if len(paths) == 1 else f"{len(paths)} repeats: {', '.join(str(p) for p in paths)}"
    print(f"GPU replay: {what} ({len(runs[0])} cases; times are steps 0-6 of each case, us)\n")
    lines, c = analyse(runs)
    print("\n".join(lines))
    print(f"\nverdict: {verdict(c)}")
    return 0


TITLE = "GPU replay: the hybrid strategies' task graphs run for real on a lent GPU machine"


def run(results: str, out):
    """The report's machine section: the committed replay's repeats (a new
    one needs a GPU machine: scripts/gpu-session.sh)."""
    import pandas as pd

    import common

    runs = load_repeats(DEFAULT)
    lines, c = analyse(runs)
    k = c["repeats"]
    table = pd.DataFrame([{"strategy": r["strategy"], "model": r["model"], "batch": r["batch"],
                           "cache": r["cache"], "simulated us": r["sim"],
                           "real us (median)": statistics.median(run[i]["real"] for run in runs),
                           "real / simulated - 1 (lowest)": min(run[i]["err"] for run in runs),
                           "real / simulated - 1 (highest)": max(run[i]["err"] for run in runs),
                           "case": judge([run[i]["err"] for run in runs])}
                          for i, r in enumerate(runs[0])])
    headline = (f"the simulation orders {c['separated_same']} of the {c['separated']} strategy pairs the machine "
                f"separates beyond its own noise (the same order in all {k} repeats, by more than "
                f"{SEPARATION:.0%} in each); strict: "
                f"{c['within']} of {c['cases']} cases within 5% end to end in all {k} repeats, {c['outside']} "
                f"outside in all, {c['inconclusive']} inconclusive; composition error within 2% in "
                f"{c.get('comp_within', 0)} (median {c.get('comp_median', float('nan')):+.3f}); ranking identical "
                f"in {c['same_rank']} of {c['groups']} groups, {c['pairs_ok']} of {c['pairs']} speedup ratios "
                f"within 5%: {verdict(c)}")
    notes = ("Measured on the GPU machine lent on 2026-11-27 (NVIDIA H200, 16-core Xeon with AMX), the cases "
             "simulated on the profile measured on the H100 machine of 2026-11-25 (so the table error holds "
             "the two machines' differences; a replay on this machine's own tables is "
             "docs/measurements/gpu-h200-2026-11-27/replay-calibrated.csv); steps 0-6 of each case, "
             f"{k} repeats on one machine; CPU experts, GPU experts and copies run for real, attention and the "
             "rest as placeholders of the simulated time. What dominates the misses and what is not built: "
             "docs/GPU.md.\n\n```\n" + "\n".join(lines) + "\n```\n")
    root = MEASUREMENTS.parent.parent
    summary = {"run": ", ".join(str(p.relative_to(root)) for p in DEFAULT), "headline": headline,
               "verdict": verdict(c)}
    return common.write_result(pathlib.Path(out), "gpu_replay", TITLE, table, None, summary, notes)


if __name__ == "__main__":
    sys.exit(inputs.main_guard("gpu_replay.py", main))
