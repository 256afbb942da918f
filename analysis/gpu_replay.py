# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""GPU replay (issue 42, docs/GPU.md): each case of suites/gpu-replay.toml
simulated on the profile measured on the lent H100 machine, then its task
graph run for real there (`moebench replay`, scripts/gpu-session.sh). Per
case the end-to-end error (real / simulated - 1 over steps 0-6) and, in
replays since the split, its two parts: the table error (the real run's own
task durations composed by the graph, against the simulation) and the
composition error (the real run against that composition); per
group of cases that differ only in the strategy (model, batch, cache
ratio): whether the strategies rank the same real and simulated, and each
pair's speedup real against simulated.

Targets (issue 42): every case within 5% end to end, identical ranking,
every speedup ratio within 5%.

    python3 analysis/gpu_replay.py [REPLAY_CSV]
(default: docs/measurements/gpu-h100-2026-11-25/replay.csv). Plain Python:
no pandas needed."""

from __future__ import annotations

import csv
import itertools
import pathlib
import sys

DEFAULT = pathlib.Path(__file__).resolve().parent.parent / "docs/measurements/gpu-h100-2026-11-25/replay.csv"
TOLERANCE = 0.05  # the 5%


def parse_axes(axes: str) -> dict[str, str]:
    out = {}
    for part in axes.split(";"):
        if "=" in part:
            k, v = part.strip().split("=", 1)
            out[k.split(".")[-1]] = v
    return out


def load(path: pathlib.Path) -> list[dict]:
    rows = []
    with open(path, newline="") as f:
        for line, r in enumerate(csv.DictReader(f), start=2):
            try:
                a = parse_axes(r["axes"])
                rows.append({"strategy": r["strategy"], "model": a["preset"], "batch": int(a["batch_size"]),
                             "cache": float(a["cache_ratio"]), "sim": float(r["sim_us"]),
                             "real": float(r["real_us"]), "err": float(r["end_to_end_error"]),
                             "gpu": r["gpu_expert_real_over_sim"], "cpu": r["cpu_expert_real_over_sim"],
                             "copy": r["copy_real_over_sim"],
                             # Replays since the split (moebench replay): the real run's own task
                             # durations composed by the graph, and the two parts of the error.
                             "table": float(r["table_error"]) if r.get("table_error") else None,
                             "comp": float(r["composition_error"]) if r.get("composition_error") else None})
            except (KeyError, ValueError) as e:
                sys.exit(f"{path}:{line}: expected a replay row (strategy, axes with preset, batch_size and "
                         f"cache_ratio, sim_us, real_us, ...), found {e!r}")
    if not rows:
        sys.exit(f"{path}: expected replay rows, found none")
    return rows


def analyse(rows: list[dict]) -> tuple[list[str], dict]:
    """The report's lines (printed by main, written by run) and the counts."""
    lines = [f"{'strategy':<24}{'model':<18}{'batch':>6}{'cache':>7}{'sim us':>12}{'real us':>12}"
             f"{'real/sim-1':>11}{'gpu-exp':>9}{'cpu-exp':>9}{'copy':>7}"]
    for r in rows:
        lines.append(f"{r['strategy']:<24}{r['model']:<18}{r['batch']:>6}{r['cache']:>7.2f}{r['sim']:>12.0f}"
                     f"{r['real']:>12.0f}{r['err']:>+11.3f}{r['gpu'] or '-':>9}{r['cpu'] or '-':>9}"
                     f"{r['copy'] or '-':>7}")
    within = sum(abs(r["err"]) <= TOLERANCE for r in rows)
    errs = sorted(r["err"] for r in rows)
    c = {"cases": len(rows), "within": within, "median": errs[len(errs) // 2]}
    split = [r for r in rows if r["comp"] is not None]
    if split:
        comp = sorted(r["comp"] for r in split)
        table = sorted(r["table"] for r in split)
        lines.append(f"\ncomposition error (real / composed - 1, the issue's target 2%): {sum(abs(x) <= 0.02 for x in comp)} "
                     f"of {len(split)} within 2%, median {comp[len(comp) // 2]:+.3f}; table error (composed / "
                     f"simulated - 1): median {table[len(table) // 2]:+.3f}")
    else:
        lines.append("\n(no composed times in this file: it predates the split of the error into tables and "
                     "composition, so only the end-to-end error is known)")
    lines.append(f"\nend to end: {within} of {len(rows)} cases within {TOLERANCE:.0%}; real / simulated - 1 from "
                 f"{errs[0]:+.3f} to {errs[-1]:+.3f}, median {c['median']:+.3f} (target: every case within 5%)")
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["model"], r["batch"], r["cache"]), []).append(r)
    same_rank = pairs = pairs_ok = 0
    worst = (0.0, "")
    lines.append(f"\n{'model':<18}{'batch':>6}{'cache':>7}  ranking the same?  pairs' speedups within 5%")
    for key, g in sorted(groups.items()):
        by_sim = [r["strategy"] for r in sorted(g, key=lambda r: r["sim"])]
        by_real = [r["strategy"] for r in sorted(g, key=lambda r: r["real"])]
        same = by_sim == by_real
        same_rank += same
        n = ok = 0
        for a, b in itertools.combinations(g, 2):
            s, q = a["sim"] / b["sim"], a["real"] / b["real"]
            e = q / s - 1.0
            n += 1
            ok += abs(e) <= TOLERANCE
            if abs(e) > abs(worst[0]):
                worst = (e, f"{a['strategy']} / {b['strategy']} on {key[0]} batch {key[1]} cache {key[2]}: "
                            f"simulated {s:.3f}, real {q:.3f}")
        pairs += n
        pairs_ok += ok
        lines.append(f"{key[0]:<18}{key[1]:>6}{key[2]:>7.2f}  {'yes' if same else 'no':<17}  {ok} of {n}")
        if not same:
            lines.append(f"{'':31}simulated: {' < '.join(by_sim)}")
            lines.append(f"{'':31}real:      {' < '.join(by_real)}")
    c.update({"groups": len(groups), "same_rank": same_rank, "pairs": pairs, "pairs_ok": pairs_ok})
    lines.append(f"\nranking identical in {same_rank} of {len(groups)} groups (target: all); speedup ratios within "
                 f"5%: {pairs_ok} of {pairs} pairs (target: all); worst {worst[0]:+.3f} ({worst[1]})")
    return lines, c


def main() -> int:
    path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    rows = load(path)
    print(f"GPU replay: {path} ({len(rows)} cases; times are steps 0-6 of each case, us)\n")
    print("\n".join(analyse(rows)[0]))
    return 0


TITLE = "GPU replay: the hybrid strategies' task graphs run for real on a lent H100"


def run(results: str, out):
    """The report's machine section: the committed replay (it needs a GPU
    machine; scripts/gpu-session.sh makes a new one)."""
    import pandas as pd

    import common

    rows = load(DEFAULT)
    lines, c = analyse(rows)
    met = c["within"] == c["cases"] and c["same_rank"] == c["groups"] and c["pairs_ok"] == c["pairs"]
    table = pd.DataFrame([{k: r[k] for k in ("strategy", "model", "batch", "cache", "sim", "real", "err")}
                          for r in rows]).rename(columns={"sim": "simulated us", "real": "real us",
                                                          "err": "real / simulated - 1"})
    headline = (f"{c['within']} of {c['cases']} cases within 5% end to end (median {c['median']:+.3f}), ranking "
                f"identical in {c['same_rank']} of {c['groups']} groups, {c['pairs_ok']} of {c['pairs']} speedup "
                f"ratios within 5%: targets {'met' if met else 'not met'}")
    notes = ("Measured on the GPU machine lent on 2026-11-25 (NVIDIA H100 80GB HBM3, 16-core Xeon with AMX); "
             "steps 0-6 of each case; CPU experts, GPU experts and copies run for real, attention and the rest "
             "as placeholders of the simulated time. What dominates the misses and what is not built: "
             "docs/GPU.md.\n\n```\n" + "\n".join(lines) + "\n```\n")
    summary = {"run": str(DEFAULT.relative_to(DEFAULT.parents[3])), "headline": headline,
               "verdict": "targets met" if met else "targets not met"}
    return common.write_result(pathlib.Path(out), "gpu_replay", TITLE, table, None, summary, notes)


if __name__ == "__main__":
    sys.exit(main())
