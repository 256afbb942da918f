# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""The known-truth test of the verdict pipeline (docs/KNOWN_TRUTH.md).

The H200 replay (docs/measurements/gpu-h200-2026-11-27, replay-base-{1,2,3}.csv: three repeats of the 64 cases of
suites/gpu-replay.toml, GPU experts, expert copies and CPU experts run for real) is a "paper" whose numbers were
measured. Its claims are written the way the papers write theirs, about the three proposed systems (HybriMoE, SMoE,
DALI) only, and only where the machine itself separates them (the same order in all three repeats, by more than 5%
in each, analysis/gpu_replay.py's `separated`):

- pair:  "at setting S, A is faster than B by X" (X the median over the repeats of B's time over A's);
- mean:  "on model M, A is faster than B by X on average over the four settings" (a paper's headline average;
         the geometric mean of the four speedups, so that a claim reversed is its inverse);
- step:  "at model M and batch b, doubling the expert cache (25% -> 50%) makes A faster by X" (an ablation step).

Planted false claims: each true claim with its effect tripled (X -> 1 + 3 (X - 1)) and each reversed (the slower
one said to be faster by X). The testbed is identified from the baselines' measured times only
(configs/hardware/known-truth-h200.toml, its [[calibration]] entries written by --calibration below and fitted by
scripts/fit-testbed), the suites suites/known-truth/h200-batch{1,8}.toml run on it with workload seeds 1-3, and
every claim is judged by analysis/common.py's Check, the rule every paper's figure is judged by.

Sensitivity: the true claims judged reproduced or direction only. Specificity: the planted claims judged not
reproduced. Met when sensitivity >= 90%, no true claim is not reproduced, and specificity is 100%.

    python3 analysis/known_truth.py [--results results] [--out results/known-truth]
    python3 analysis/known_truth.py --calibration     # the profile's [[calibration]] entries, from the replay
    python3 analysis/known_truth.py --check-profile   # the profile's entries are those (exit 1 otherwise)
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

import inputs
import gpu_replay

RATIO_BAND = 0.25  # common.RATIO_BAND (common imports pandas; this module's claims do not need it)

BASELINES = ("gpu-ondemand", "llamacpp", "fiddler", "ktransformers", "ktransformers-deferral")
PROPOSED = ("hybrimoe", "smoe", "dali")
PROFILE = "known-truth-h200"
SUITES = {1: "known-truth-h200-batch1", 8: "known-truth-h200-batch8"}
SUITE_FILES = {b: f"suites/known-truth/h200-batch{b}.toml" for b in SUITES}
SENSITIVITY_TARGET = 0.90
# The profile keys fitted on the baselines' times (the quantities of that machine a datasheet leaves open).
FITS = ("cpu.mem_bw_gbps", "cpu.gemm_efficiency", "cpu.task_overhead_us", "gpu.kernel_launch_us",
        "gpu.gemm_efficiency", "link.h2d_gbps", "link.latency_us")
CALIBRATION_TOLERANCE = 0.15  # as the paper testbeds' targets
ROOT = pathlib.Path(__file__).resolve().parent.parent
BEGIN, END = "# ---- begin: known_truth.py --calibration", "# ---- end: known_truth.py --calibration"


def truth(paths=None) -> dict:
    """{(model, batch, cache, strategy): [real time in us per repeat]} from the replay's repeats (checked as
    analysis/gpu_replay.py checks them)."""
    runs = gpu_replay.load_repeats([pathlib.Path(p) for p in (paths or gpu_replay.DEFAULT)])
    out: dict = {}
    for rows in runs:
        for r in rows:
            out.setdefault((r["model"], r["batch"], r["cache"], r["strategy"]), []).append(r["real"])
    return out


def settings(times: dict) -> list:
    return sorted({k[:3] for k in times})


# ------------------------------------------------------------------------------------------- the claims


class Claim:
    """A claim in a paper's words: `fast` faster than `slow` by `speedup` (the paper's number; None where the
    machine's repeats do not repeat one: a direction alone). `fast` and `slow` are parallel lists of (model, batch,
    cache, strategy) keys: four settings' (a mean claim, the geometric mean of their speedups) or one each (a pair
    or a step). `kind`: pair, mean or step; `planted`: "", "tripled" or "reversed"."""

    def __init__(self, kind: str, text: str, fast: list, slow: list, speedup: float, planted: str = ""):
        self.kind, self.text, self.fast, self.slow, self.speedup, self.planted = kind, text, fast, slow, speedup, planted

    def measure(self, times: dict) -> float:
        """The claim's speedup in `times` ({(model, batch, cache, strategy): time}): the geometric mean over its
        settings of the slow case's time over the fast case's (so a claim reversed measures the inverse)."""
        return speedup_of(times, self.fast, self.slow)

    def tripled(self) -> "Claim":
        # REQUIRES: a claim with a number (speedup not None).
        x = 1 + 3 * (self.speedup - 1)
        return Claim(self.kind, f"{self.text} [planted: effect tripled, {x:.2f}x]", self.fast, self.slow, x, "tripled")

    def reversed(self) -> "Claim":
        return Claim(self.kind, f"{self.text} [planted: reversed]", self.slow, self.fast, self.speedup, "reversed")


def speedup_of(times: dict, fast: list, slow: list, i=None) -> float:
    """Geometric mean over the settings of slow's time over fast's (repeat i of a list of times, or one time)."""
    pick = (lambda k: times[k]) if i is None else (lambda k: times[k][i])
    return statistics.geometric_mean(pick(s) / pick(f) for f, s in zip(fast, slow))


def _key(setting, strategy):
    return (*setting, strategy)


def _claim_if_separated(kind, text_of, times, fast, slow):
    """The claim in the direction the machine shows, or None when the repeats do not separate the two sides by more
    than gpu_replay.SEPARATION in each. `fast`/`slow` are parallel lists of keys. The claim carries the median
    speedup as its number only when every repeat's effect is within common.RATIO_BAND of the median's: a number the
    machine does not repeat is no claim of a size (its direction is), as the magnitude band would judge it."""
    n = len(times[fast[0]])
    per_repeat = [speedup_of(times, fast, slow, i) for i in range(n)]
    if all(q > 1 + gpu_replay.SEPARATION for q in per_repeat):
        qs, flip = per_repeat, False
    elif all(q < 1 / (1 + gpu_replay.SEPARATION) for q in per_repeat):
        qs, flip, fast, slow = [1 / q for q in per_repeat], True, slow, fast
    else:
        return None
    med = statistics.median(qs)
    steady = all(abs((q - 1) / (med - 1) - 1) <= RATIO_BAND for q in qs)
    return Claim(kind, text_of(flip, med, steady), fast, slow, med if steady else None)


def by(x: float, steady: bool) -> str:
    return f" by {x:.2f}x" if steady else f" (by {x:.2f}x, a number the repeats do not repeat: direction only)"


def true_claims(times: dict) -> list:
    """Every claim about HybriMoE, SMoE and DALI that the machine's three repeats support (module docstring)."""
    out = []
    strategies = sorted({k[3] for k in times})
    others = lambda p: [q for q in strategies if q != p and not (q in PROPOSED and PROPOSED.index(q) < PROPOSED.index(p))]
    for p in PROPOSED:
        for q in others(p):
            for st in settings(times):
                where = f"{st[0]} batch {st[1]} cache {st[2]:g}"
                text = lambda flip, x, steady, a=p, b=q, w=where: (f"{w}: {b if flip else a} faster than "
                                                                   f"{a if flip else b}{by(x, steady)}")
                out.append(_claim_if_separated("pair", text, times, [_key(st, p)], [_key(st, q)]))
            for model in sorted({st[0] for st in settings(times)}):
                sts = [st for st in settings(times) if st[0] == model]
                text = lambda flip, x, steady, a=p, b=q, m=model: (
                    f"{m}: {b if flip else a} faster than {a if flip else b} on average over batch 1, 8 and cache "
                    f"25%, 50%{by(x, steady)}")
                out.append(_claim_if_separated("mean", text, times, [_key(st, p) for st in sts],
                                               [_key(st, q) for st in sts]))
        for model, batch in sorted({st[:2] for st in settings(times)}):
            small, big = (model, batch, 0.25), (model, batch, 0.5)
            text = lambda flip, x, steady, a=p, m=model, b=batch: (
                f"{m} batch {b}: {a} with a 50% expert cache {'slower' if flip else 'faster'} than with "
                f"25%{by(x, steady)}")
            out.append(_claim_if_separated("step", text, times, [_key(big, p)], [_key(small, p)]))
    return [c for c in out if c is not None]


def planted_claims(claims: list) -> list:
    """Each true claim with a number with its effect tripled, and each true claim reversed."""
    return [c.tripled() for c in claims if c.speedup is not None] + [c.reversed() for c in claims]


# ------------------------------------------------------------------------------------------- the verdicts


def harness_times(results: str) -> dict:
    """{seed: {(model, batch, cache, strategy): the steps' time in us}} from the latest complete run of each suite.

    The steps' time is the prefill's and the decode steps' (prefill_time_s + decode_time_s): from the run's
    start to the last step's end, as the replay timed the machine (a step's span ends at its own last task).
    total_time_s also counts copies that nothing waits for and that end later (DALI's window swaps of step 4: up
    to 1.47x its steps on the H100 profile, docs/measurements/known-truth-2026-12-07b/log.txt); the baselines' two
    are equal, so their targets read total_time_s."""
    import common  # pandas: only for the harness's rows

    out: dict = {}
    for batch, suite in SUITES.items():
        run = common.latest_run(results, suite)
        if run is None:
            raise inputs.InputError(f"{results}: expected a complete run of suite '{suite}' ({SUITE_FILES[batch]}), "
                                    "found none (make known-truth runs it)")
        df = common.load_runs(run)
        for _, r in df.iterrows():
            key = (r["model"], int(r["workload.batch_size"]), float(r["strategy.residency.cache_ratio"]), r["strategy"])
            seed = int(r["workload.seed"])
            steps = sum(inputs.number(r[c], f"{run}/runs.csv", c, above=0) for c in ("prefill_time_s", "decode_time_s"))
            out.setdefault(seed, {})[key] = steps * 1e6
    return out


def judge(claim: Claim, per_seed: dict):
    """The claim's Check over the harness's seeds: direction beyond common.REL_TOL, magnitude on the effect."""
    import common

    effects = {}
    for seed, times in per_seed.items():
        h = claim.measure(times)
        effects[seed] = common.speedup(h, 1.0, claim.speedup)
    return common.Check(claim.text, effects)


def score(true_checks: list, planted_checks: list) -> dict:
    """Sensitivity, specificity and whether the test's targets are met."""
    import common

    ok = sum(c.verdict in (common.REPRODUCED, common.DIRECTION_ONLY) for c in true_checks)
    refused_true = sum(c.verdict == common.NOT_REPRODUCED for c in true_checks)
    caught = sum(c.verdict == common.NOT_REPRODUCED for c in planted_checks)
    sens = ok / len(true_checks) if true_checks else float("nan")
    spec = caught / len(planted_checks) if planted_checks else float("nan")
    return {"true": len(true_checks), "true_ok": ok, "true_not_reproduced": refused_true, "sensitivity": sens,
            "planted": len(planted_checks), "planted_not_reproduced": caught, "specificity": spec,
            "met": bool(sens >= SENSITIVITY_TARGET and refused_true == 0 and caught == len(planted_checks))}


# ------------------------------------------------------------------------------------------- the testbed's targets


def calibration_text(times: dict) -> str:
    """The profile's [[calibration]] entries: every baseline's median measured time at every setting (the proposed
    systems' times are the claims, never targets)."""
    lines = [BEGIN, "# Each baseline's measured time of steps 0-6 at each setting: the median real_us of the three",
             "# repeats (replay-base-{1,2,3}.csv), in s. Regenerate: python3 analysis/known_truth.py --calibration"]
    for st in settings(times):
        for b in BASELINES:
            model, batch, cache = st
            value = statistics.median(times[_key(st, b)]) / 1e6
            lines += ["", "[[calibration]]", f'id = "h200-{b}-{model}-b{batch}-c{cache:g}"', f'system = "{b}"',
                      f'model = "{model}"', f'quantity = "steps 0-6 (prefill of {batch} x 32 tokens, 6 decode steps), '
                      f'cache {100 * cache:g}%, median of 3 repeats"', 'unit = "s"', f"value = {value:.6g}",
                      f"tolerance = {CALIBRATION_TOLERANCE}", "fits = [" + ", ".join(f'"{k}"' for k in FITS) + "]",
                      'source = "docs/measurements/gpu-h200-2026-11-27/replay-base-{1,2,3}.csv (real_us)"',
                      f'suite = "{SUITE_FILES[batch]}"', f'strategy = "{b}"', 'metric = "total_time_s"',
                      f'where = ["model={model}", "strategy.residency.cache_ratio={cache:g}"]']
    return "\n".join(lines + ["", END]) + "\n"


def check_profile(times: dict) -> int:
    """0 when the profile's generated block is calibration_text(times), else 1 with what differs."""
    path = ROOT / "configs" / "hardware" / f"{PROFILE}.toml"
    text = inputs.read_text(path, "the known-truth hardware preset")
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < 0:
        print(f"{path}: expected the block between '{BEGIN}' and '{END}', found none", file=sys.stderr)
        return 1
    have, want = text[a:b + len(END)] + "\n", calibration_text(times)
    if have != want:
        first = next(i for i, (x, y) in enumerate(zip(have.splitlines(), want.splitlines() + [""])) if x != y)
        print(f"{path}: line {text.count(chr(10), 0, a) + first + 1}: expected the replay's entries "
              f"('{want.splitlines()[first] if first < len(want.splitlines()) else ''}'), found "
              f"'{have.splitlines()[first]}' (regenerate with --calibration)", file=sys.stderr)
        return 1
    print(f"{path}: its [[calibration]] entries are the replay's measured baseline times")
    return 0


# ------------------------------------------------------------------------------------------- the report


def strategy_errors(times: dict, per_seed: dict) -> dict:
    """Per strategy, the machine's median time over the harness's, less 1: the median over settings and seeds."""
    out: dict = {}
    for key, reals in times.items():
        for harness in per_seed.values():
            out.setdefault(key[3], []).append(statistics.median(reals) / harness[key] - 1)
    return {s: statistics.median(v) for s, v in out.items()}


def failures(claims: list, checks: list, times: dict, per_seed: dict) -> list:
    """Markdown lines for each claim the test gets wrong (a true claim not reproduced, a planted claim not
    refused): the machine's speedup in each repeat, the harness's in each seed, and each side's repeat times, so that a failure the machine's own
    spread explains is told from one the model makes."""
    import common

    out = []
    for c, chk in zip(claims, checks):
        wrong = chk.verdict == common.NOT_REPRODUCED if not c.planted else chk.verdict != common.NOT_REPRODUCED
        if not wrong:
            continue
        n = len(times[c.fast[0]])
        reps = ", ".join(f"{speedup_of(times, c.fast, c.slow, i):.2f}x" for i in range(n))
        sides = "; ".join(f"{k[3]} at {k[0]} b{k[1]} c{k[2]:g}: " + ", ".join(f"{x / 1e3:.1f}" for x in times[k]) + " ms"
                          for k in dict.fromkeys(c.fast + c.slow) if len(c.fast) == 1)
        seeds = ", ".join(f"{c.measure(per_seed[sd]):.2f}x" for sd in sorted(per_seed))
        out.append(f"- {c.planted or 'true'}: {c.text} ({chk.verdict}); the machine's repeats {reps}, the harness's "
                   f"seeds {seeds}"
                   + (f" ({sides})" if sides else ""))
    return out


def report(trues: list, planted: list, per_seed: dict, times: dict | None = None) -> tuple:
    """(summary dict, markdown text, csv text) of every claim's verdict; with `times` (the machine's repeats) the
    markdown lists the claims the test gets wrong first."""
    true_checks = [judge(c, per_seed) for c in trues]
    planted_checks = [judge(c, per_seed) for c in planted]
    s = score(true_checks, planted_checks)
    seeds = sorted(per_seed)
    rows = ["kind,planted,claim,paper_speedup," + ",".join(f"harness_seed{sd}" for sd in seeds) + ",verdict"]
    md = [f"# Known truth: the H200 replay judged by the verdict pipeline\n",
          f"Sensitivity {s['true_ok']} of {s['true']} true claims reproduced or direction only "
          f"({100 * s['sensitivity']:.1f}%; target {100 * SENSITIVITY_TARGET:.0f}%), {s['true_not_reproduced']} true "
          f"claim(s) not reproduced (target 0); specificity {s['planted_not_reproduced']} of {s['planted']} planted "
          f"false claims not reproduced ({100 * s['specificity']:.1f}%; target 100%): "
          f"**{'met' if s['met'] else 'not met'}**.\n"]
    wrong = failures(trues + planted, true_checks + planted_checks, times, per_seed) if times else []
    if wrong:
        md += ["## What it gets wrong\n", *wrong, ""]
    md += ["| kind | planted | claim | paper | harness (seeds " + ", ".join(map(str, seeds)) + ") | verdict |",
           "| --- | --- | --- | --- | --- | --- |"]
    for c, chk in zip(trues + planted, true_checks + planted_checks):
        hs = [c.measure(per_seed[sd]) for sd in seeds]
        paper = "" if c.speedup is None else f"{c.speedup:.4f}"
        rows.append(f'{c.kind},{c.planted or "no"},"{c.text}",{paper},' + ",".join(f"{h:.4f}" for h in hs)
                    + f",{chk.verdict}")
        md.append(f"| {c.kind} | {c.planted or 'no'} | {c.text} | "
                  + ("direction only" if c.speedup is None else f"{c.speedup:.2f}x") + " | "
                  + ", ".join(f"{h:.2f}x" for h in hs) + f" | {chk.verdict} |")
    return s, "\n".join(md) + "\n", "\n".join(rows) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="results", help="where run_suite wrote the known-truth suites' runs")
    ap.add_argument("--out", default="results/known-truth", help="folder for index.md and claims.csv")
    ap.add_argument("--calibration", action="store_true", help="print the profile's [[calibration]] entries")
    ap.add_argument("--check-profile", action="store_true", help="check the profile's entries against the replay")
    ap.add_argument("--require", action="store_true", help="exit 1 when the targets are not met")
    args = ap.parse_args(argv)
    times = truth()
    if args.calibration:
        sys.stdout.write(calibration_text(times))
        return 0
    if args.check_profile:
        return check_profile(times)
    out = inputs.check_output(pathlib.Path(args.out) / "index.md", "the known-truth report")
    trues = true_claims(times)
    harness = harness_times(args.results)
    s, md, csv_text = report(trues, planted_claims(trues), harness, times)
    inputs.write_text(out, md)
    inputs.write_text(out.parent / "claims.csv", csv_text)
    kinds = {k: sum(c.kind == k for c in trues) for k in ("pair", "mean", "step")}
    print(f"known truth: {s['true']} true claims ({kinds['pair']} pairs, {kinds['mean']} means, {kinds['step']} "
          f"steps) about {', '.join(PROPOSED)}; {s['planted']} planted false claims")
    print(f"sensitivity {s['true_ok']}/{s['true']} = {100 * s['sensitivity']:.1f}% (target "
          f"{100 * SENSITIVITY_TARGET:.0f}%), true claims not reproduced {s['true_not_reproduced']} (target 0), "
          f"specificity {s['planted_not_reproduced']}/{s['planted']} = {100 * s['specificity']:.1f}% (target 100%): "
          f"{'MET' if s['met'] else 'NOT MET'}")
    errs = strategy_errors(times, harness)
    print("the machine's time over the harness's - 1 (median over settings and seeds): "
          + ", ".join(f"{k} {v:+.3f}" for k, v in errs.items()))
    print(f"wrote {out} and {out.parent / 'claims.csv'}")
    return 1 if args.require and not s["met"] else 0


if __name__ == "__main__":
    sys.exit(inputs.main_guard("known_truth", main))
