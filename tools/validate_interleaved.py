#!/usr/bin/env python3
# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Sim-vs-real validation with the calibration interleaved (docs/BACKENDS.md,
"Validation"): for each (model, dtype) group of suites/validation/real.toml,
`moebench calibrate` measures that group's tables and the group's real cases
run right after it, so the table and the cases it predicts are measured
seconds apart rather than minutes (this VM's speed drifts between minutes);
then the simulated cases run with the profile the calibrations built, and
analysis/validation.py pairs them.

The calibrations chain into one profile: the first group's starts from
--base (the hardware profile the calibration copies), each later one from
the profile written so far, so the result has every group's tables, each
measured just before that group's real cases. Unless --no-bracket, each
group is calibrated once more right after its real cases, into a profile of
its own that the simulation does not read: the two tables bracket how far
the machine moved while the cases ran (analysis/validation_tasks.py).

--rounds R runs all of that R times one after another (a series; each round
calibrates afresh from --base and writes its own files and index, named by
the round's start time): analysis/validation.py pools the rounds of the
newest series, each case's error over rounds with a confidence interval, so
a machine whose speed drifts between minutes still gives a verdict once
enough rounds are in (docs/BACKENDS.md, "Rounds"). An interrupted series
keeps every round it finished.

Writes (nothing outside the results root; the suites find the round's profile
through MOEBENCH_CONFIG_PATH, before the tracked configs/):
  results/validation-interleaved/<stamp>-configs/hardware/<preset>.toml
                                                     the chained profile, named as the suites' [hardware]
                                                     preset (local-cpu-calibrated); --profile FILE instead
  results/validation-real/<stamp>-<model>-<dtype>/   one run per group (with timelines/: every task)
  results/validation-sim/<stamp>/                    the simulated cases (with timelines/)
  results/validation-interleaved/<stamp>.json        the index analysis/validation.py reads
  results/validation-interleaved/<stamp>-profile.toml with --profile: a copy of it as the simulated cases read it
  results/validation-interleaved/<stamp>-after-<model>-<dtype>.toml  each group calibrated again right
                                                     after its real cases (the machine's drift meanwhile)

    python3 tools/validate_interleaved.py [--bin build/bin] [--results results] [--rounds R]"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import subprocess
import sys
import time

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    tomllib = None

ROOT = pathlib.Path(__file__).resolve().parent.parent
REAL = "suites/validation/real.toml"
SIM = "suites/validation/sim.toml"


def fail(msg: str) -> None:
    print(f"validate_interleaved: {msg}", file=sys.stderr)
    sys.exit(2)


def as_list(v) -> list:
    return v if isinstance(v, list) else [v]


def groups_of(suite: pathlib.Path) -> list[tuple[str, str]]:
    """The (model, dtype) groups of the real suite: its [model] preset x expert_dtype axes."""
    if tomllib is None:
        fail("expected Python 3.11 or later (tomllib) to read the suite, found " + sys.version.split()[0])
    try:
        doc = tomllib.loads(suite.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        fail(f"{suite}: expected a readable TOML suite, found: {e}")
    model = doc.get("model", {})
    if "preset" not in model or "expert_dtype" not in model:
        fail(f"{suite}: expected [model] preset and expert_dtype (the groups to calibrate), found keys "
             f"{sorted(model)}")
    return [(m, d) for m in as_list(model["preset"]) for d in as_list(model["expert_dtype"])]


def hardware_preset(suite: pathlib.Path) -> str:
    """The suite's [hardware] preset: the name the generated profile must have."""
    try:
        doc = tomllib.loads(suite.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        fail(f"{suite}: expected a readable TOML suite, found: {e}")
    preset = doc.get("hardware", {}).get("preset")
    if not isinstance(preset, str) or not preset:
        fail(f"{suite}: expected [hardware] preset, a name (the calibrated profile), found {preset!r}")
    return preset


def write_atomic(path: pathlib.Path, text: str) -> None:
    # Stdlib only (analysis/common.py imports pandas, which this driver does not need).
    tmp = path.with_name(path.name + f".tmp.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def run(cmd: list[str], env: dict, steps: list) -> None:
    steps.append({"utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "command": " ".join(cmd)})
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, cwd=ROOT, env=env)
    if r.returncode != 0:
        fail(f"expected exit status 0 from `{' '.join(cmd)}`, found {r.returncode}")


def utc_stamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def one_round(args, argv: list[str], binary: dict, env: dict, results: pathlib.Path, stamp: str, groups: list,
              series: dict) -> pathlib.Path:
    """One round: every group calibrated and run, then the simulated cases; returns the round's index."""
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    index_dir = results / "validation-interleaved"
    index_dir.mkdir(parents=True, exist_ok=True)
    if args.profile:
        profile = args.profile
    else:
        # Under the results root, where the suites' preset name finds it (MOEBENCH_CONFIG_PATH).
        configs = index_dir / f"{stamp}-configs"
        (configs / "hardware").mkdir(parents=True, exist_ok=True)
        profile = str(configs / "hardware" / f"{args.preset}.toml")
        env = dict(env, MOEBENCH_CONFIG_PATH=os.pathsep.join(
            [str(configs)] + ([env["MOEBENCH_CONFIG_PATH"]] if env.get("MOEBENCH_CONFIG_PATH") else [])))
    real_dirs, steps, after = [], [], {}
    for i, (model, dtype) in enumerate(groups):
        # Each round's chain starts again from --base: a round's profile is measured within that round only.
        base = args.base if i == 0 else profile
        run([str(binary["moebench"]), "calibrate", "--hardware", base, "--models", model, "--dtypes", dtype,
             "--out", profile, *args.calibrate_arg], env, steps)
        out = results / "validation-real" / f"{stamp}-{model}-{dtype}"
        run([str(binary["run_suite"]), args.real, "--filter", f"model.name={model},model.expert_dtype={dtype}",
             "--out", str(out), "--quiet", "--timeline"], env, steps)
        real_dirs.append(out)
        if args.bracket:
            # The same calibration again right after the group's cases: how far the machine moved while
            # they ran (analysis/validation_tasks.py sets the error against it). Not read by the simulation.
            path = index_dir / f"{stamp}-after-{model}-{dtype}.toml"
            run([str(binary["moebench"]), "calibrate", "--hardware", args.base, "--models", model, "--dtypes",
                 dtype, "--out", str(path), *args.calibrate_arg], env, steps)
            after[f"{model} {dtype}"] = str(path.relative_to(results))
    if args.profile:
        # The chained profile as the simulated cases read it (the file itself is rewritten by the next run).
        profile_copy = index_dir / f"{stamp}-profile.toml"
        src = pathlib.Path(profile) if pathlib.Path(profile).is_absolute() else ROOT / profile
        write_atomic(profile_copy, src.read_text())
    else:
        profile_copy = pathlib.Path(profile)  # the round's own file: no later round rewrites it
    sim_dir = results / "validation-sim" / stamp
    run([str(binary["run_suite"]), args.sim, "--out", str(sim_dir), "--quiet", "--timeline"], env, steps)

    index = {
        "protocol": "interleaved: each (model, dtype) group calibrated, then its real cases; then the simulated "
                    "cases with the profile the calibrations built",
        "groups": [f"{m} {d}" for m, d in groups],
        "real_runs": [str(p.relative_to(results)) for p in real_dirs],
        "sim_run": str(sim_dir.relative_to(results)),
        "profile": (str(pathlib.Path(profile).relative_to(results))
                    if pathlib.Path(profile).is_relative_to(results) else profile),
        "profile_copy": str(profile_copy.relative_to(results)),
        # Per group: its tables measured again right after its real cases (--no-bracket: none).
        "after_profiles": after,
        # The series this round belongs to (--rounds): its first round's stamp, this round's number
        # (1-based) and how many were asked for. analysis/validation.py pools a series' rounds.
        "series": series,
        "started_utc": started,
        "finished_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([sys.argv[0], *argv]),
        # Every command with its start time: the provenance of each table of the chained profile.
        "steps": steps,
    }
    path = index_dir / f"{stamp}.json"
    write_atomic(path, json.dumps(index, indent=2) + "\n")
    print(f"wrote {path}", flush=True)
    return path


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="build/bin", help="directory of moebench and run_suite")
    ap.add_argument("--results", default="results", help="results root")
    ap.add_argument("--base", default="local-cpu", help="hardware profile the first calibration copies")
    ap.add_argument("--calibrate-arg", action="append", default=[],
                    help="extra argument for every `moebench calibrate` (repeatable)")
    ap.add_argument("--real", default=REAL, help="the real-backend suite (its [model] axes are the groups)")
    ap.add_argument("--sim", default=SIM, help="the simulated suite, the same cases")
    ap.add_argument("--no-bracket", dest="bracket", action="store_false",
                    help="skip the second calibration of each group after its real cases")
    ap.add_argument("--profile", default=None,
                    help="write the calibrated profile here instead (the file both suites' [hardware] preset "
                         "names); default: results/validation-interleaved/<stamp>-configs/hardware/<preset>.toml")
    ap.add_argument("--rounds", default="1",
                    help="how many times to run the whole protocol one after another (a series; "
                         "analysis/validation.py pools 3 or more rounds into a verdict with confidence intervals)")
    args = ap.parse_args(argv)
    try:
        rounds = int(args.rounds)
    except ValueError:
        rounds = 0
    if not 1 <= rounds <= 99:
        fail(f"--rounds: expected a whole number from 1 to 99, found {args.rounds!r}")

    binary = {name: ROOT / args.bin / name for name in ("moebench", "run_suite")}
    for name, path in binary.items():
        if not path.is_file():
            fail(f"expected the {name} binary at {path}, found none (build first: cmake --build build)")
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    results = pathlib.Path(args.results)
    if not results.is_absolute():
        results = ROOT / results
    groups = groups_of(ROOT / args.real)
    args.preset = hardware_preset(ROOT / args.real)
    if hardware_preset(ROOT / args.sim) != args.preset:
        fail(f"{args.sim}: expected the [hardware] preset of {args.real} ({args.preset!r}), found "
             f"{hardware_preset(ROOT / args.sim)!r}")
    if not args.profile and ("/" in args.preset or args.preset.endswith(".toml")):
        fail(f"{args.real}: expected [hardware] preset to be a preset name (the generated profile is found by "
             f"name under the results root), found the file {args.preset!r}; pass --profile to write that file")
    first, previous = None, None
    for r in range(1, rounds + 1):
        stamp = utc_stamp()
        while stamp == previous:  # every round's files are named by its start second
            time.sleep(0.2)
            stamp = utc_stamp()
        previous = stamp
        first = first or stamp
        if rounds > 1:
            print(f"validate_interleaved: round {r} of {rounds} (series {first})", flush=True)
        one_round(args, argv, binary, env, results, stamp, groups, {"id": first, "round": r, "rounds": rounds})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
