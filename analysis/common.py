# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Shared helpers for the analysis scripts. Scripts read only results/."""

from __future__ import annotations

import json
import os
import pathlib
import sys
from typing import Optional

import matplotlib
import pandas as pd

import inputs

# Every figure is written to a file, never shown: the non-interactive
# backend, selected here because each script imports common before pyplot.
matplotlib.use("Agg")


def run_dirs(results: str, suite: str):
    """Run directories of a suite, oldest first (names start with the UTC start time). A shard's run
    (run_suite --shard I/N) holds a slice of the cases and is never read as the suite's run: its merge
    (run_suite --merge) is."""
    root = pathlib.Path(results) / suite
    if not root.is_dir():
        return []
    return [p for p in sorted(root.iterdir()) if (p / "manifest.json").is_file() and not _is_shard(p / "manifest.json")]


def _is_shard(manifest_path: pathlib.Path) -> bool:
    """Whether a manifest is a shard's: run_suite writes it indented by two spaces with the keys in a fixed order,
    the top-level "shard" before "cases", so the first part of the file tells without parsing megabytes of case
    configurations (a merged run's "merged_from" entries name their shards one level deeper)."""
    with open(manifest_path, "rb") as f:
        head = f.read(1 << 16)
    cut = head.find(b'\n  "cases":')
    if cut < 0:
        try:
            m = json.loads(manifest_path.read_text())
        except (OSError, UnicodeDecodeError, ValueError):
            return False  # not readable: latest_run and find_part skip it with a warning
        return isinstance(m, dict) and "shard" in m
    return b'\n  "shard":' in head[:cut]


class RunsError(RuntimeError):
    """A run's files are not what run_suite writes (corrupt, edited, incomplete): the message names the file, the
    line or case, and why. Figure scripts let it through, so the figure says why it has no verdict."""


_MANIFESTS: dict = {}  # path -> ((inode, size, mtime_ns), parsed manifest)


def _read_manifest(run_dir: pathlib.Path):
    """A run's parsed manifest, read once per version of the file in a process: the report's figure scripts look
    at the same runs again and again, and a paper suite's manifest holds every case's configuration (megabytes).
    The dict is shared: callers only read it. Raises what reading or parsing raises."""
    path = pathlib.Path(run_dir) / "manifest.json"
    st = path.stat()
    version = (st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _MANIFESTS.get(str(path))
    if hit and hit[0] == version:
        return hit[1]
    m = json.loads(inputs.read_text(path, "a run's manifest"))
    _MANIFESTS[str(path)] = (version, m)
    return m


def run_status(run_dir: pathlib.Path) -> Optional[str]:
    """A run's manifest status, or None (with a warning naming the file) when the manifest cannot be read: a newer
    run with a broken manifest must not hide every older run of its suite."""
    path = run_dir / "manifest.json"
    try:
        m = _read_manifest(run_dir)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        print(f"warning: {path}: expected a readable JSON manifest, found {type(e).__name__}: {e}; this run is "
              f"skipped", file=sys.stderr)
        return None
    return m.get("status") if isinstance(m, dict) else None


def latest_run(results: str, suite: str, complete_only: bool = True) -> Optional[pathlib.Path]:
    for d in reversed(run_dirs(results, suite)):
        status = run_status(d)
        if status is not None and (not complete_only or status == "complete"):
            return d
    return None


def _reject_constant(name):
    raise ValueError(f"{name} (run_suite writes null for a missing number, never NaN or Infinity)")


# The metrics every successful row of run_suite has, each a finite number (null only where the workload has no
# such tokens); speeds, times and hit rates are never negative, hit rates at most 1.
HEADLINE = ("ttft_mean_ms", "tbt_mean_ms", "prefill_tokens_per_s", "decode_tokens_per_s", "total_time_s")
HOST_COLUMNS = ("run_id", "utc_time", "wall_time_s", "result_of", "warnings", "preset_files")


def _row_problems(row: dict) -> list:
    """Why one row of runs.jsonl is not a successful run_suite row (empty when it is, or is not a success)."""
    if row.get("status") != "ok":
        return []
    out = []
    written_by_run_suite = "run_id" in row and "suite" in row  # test fixtures write a few keys only
    for k in HEADLINE:
        if k not in row:
            if written_by_run_suite:
                out.append(f"no key '{k}'")
            continue
        v = row[k]
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            out.append(f"'{k}' is {json.dumps(v)[:40]} (not a number)")
        elif v != v or v in (float("inf"), float("-inf")) or v < 0:
            out.append(f"'{k}' is {v}")
    for k, v in row.items():
        if "hit_rate" in k and k.endswith("_frac") and isinstance(v, (int, float)) and not isinstance(v, bool):
            if not 0 <= v <= 1:
                out.append(f"'{k}' is {v} (a fraction in [0, 1])")
    return out


def _parse_rows(path: pathlib.Path) -> list:
    """runs.jsonl's rows, strictly: a line that is not a JSON object (or holds NaN or Infinity) is an error
    naming the file and the line."""
    try:
        text = inputs.read_text(path, "a readable runs.jsonl")
    except inputs.InputError as e:
        raise RunsError(str(e)) from None
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line, parse_constant=_reject_constant)
        except ValueError as e:
            raise RunsError(f"{path}:{i}: expected one JSON object per line, found invalid JSON ({e})")
        if not isinstance(r, dict):
            raise RunsError(f"{path}:{i}: expected one JSON object per line, found {type(r).__name__}")
        rows.append((i, r))
    return rows


# load_runs' checked tables by run folder, kept while its runs.jsonl and manifest.json are the files they were
# when read (the same inode, size and modification and change times): the report's figures read the same run many
# times (DALI's verdict summary read its 1,746-row, 39 MB run 40 times), and parsing it was most of their time.
# run_suite appends rows (the size changes) and replaces the manifest by renaming (the inode changes).
_RUNS_CACHE: dict = {}


def _stamp(path: pathlib.Path):
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def load_runs(run_dir: pathlib.Path) -> pd.DataFrame:
    """The rows of runs.jsonl (one per case and repetition), checked: a verdict is computed only from complete,
    finite, unique rows of the run's own cases. Otherwise RunsError says which rows and why (a NaN in every
    llama.cpp row once gave "not reproduced ... nanx-nanx", an inf in one seed moved a range, a planted duplicate
    turned a ratio into 0.20x, an empty runs.jsonl read as "not run"). A run read before, and unchanged since
    (its two files' inodes, sizes and times), is not parsed again; each caller gets its own copy."""
    key = str(pathlib.Path(run_dir).resolve())
    stamp = (_stamp(pathlib.Path(run_dir) / "runs.jsonl"), _stamp(pathlib.Path(run_dir) / "manifest.json"))
    hit = _RUNS_CACHE.get(key)
    if hit is not None and hit[0] == stamp and stamp[0] is not None:
        return hit[1].copy()
    df = _load_runs(pathlib.Path(run_dir))
    _RUNS_CACHE[key] = (stamp, df)
    return df.copy()


def _load_runs(run_dir: pathlib.Path) -> pd.DataFrame:
    path = run_dir / "runs.jsonl"
    rows = _parse_rows(path)
    man = {}
    try:
        man = _read_manifest(run_dir)
    except (OSError, UnicodeDecodeError, ValueError):
        pass
    cases = man.get("cases") if isinstance(man, dict) else None
    known = {c.get("case_id") for c in cases if isinstance(c, dict)} if isinstance(cases, list) else None
    suite = man.get("suite", {}).get("name") if isinstance(man.get("suite"), dict) else None
    problems, seen, first_of = [], {}, {}
    for i, r in rows:
        where = f"line {i}" + (f" (case {r.get('case_id')})" if "case_id" in r else "")
        why = _row_problems(r)
        if known is not None and "case_id" in r and r["case_id"] not in known:
            why.append("a case the manifest does not list")
        if suite is not None and "suite" in r and r["suite"] != suite:
            why.append(f"suite {r['suite']!r}, not the run's {suite!r}")
        if "case_id" in r:
            key = (r["case_id"], r.get("repetition", 0))
            if key in seen:
                why.append(f"repetition {key[1]} of the case again (also line {seen[key]})")
            seen[key] = i
            # The simulated backend gives one result per case: its repetitions must agree.
            if r.get("backend") == "sim" and r.get("status") == "ok":
                head = tuple(r.get(k) for k in HEADLINE)
                if r["case_id"] in first_of and first_of[r["case_id"]] != head:
                    why.append("simulated metrics unlike the case's other repetition")
                first_of.setdefault(r["case_id"], head)
        problems += [f"{where}: {w}" for w in why]
    if problems:
        raise RunsError(f"{path}: expected complete, finite, unique rows as run_suite writes them, found "
                        f"{len(problems)} problem(s) (no verdict is computed from this run): "
                        + "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else ""))
    if not rows and isinstance(cases, list) and cases and man.get("status") == "complete":
        raise RunsError(f"{path}: expected the rows of the run's {len(cases)} case(s) (its manifest says complete), "
                        f"found none")
    return pd.DataFrame([r for _, r in rows])


def manifest(run_dir: pathlib.Path) -> dict:
    return _read_manifest(run_dir)


def write_text_atomic(path: pathlib.Path, text: str) -> None:
    """Writes `text` to a temporary beside `path` and renames it into place; only a new file or a regular file is
    replaced (the rename would put a file where a device, FIFO, folder or link was)."""
    try:
        inputs.write_text(path, text)
    except inputs.InputError as e:
        raise RunsError(str(e)) from None


def save_figure(fig, path: pathlib.Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + f".tmp.{os.getpid()}.png")
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    os.replace(tmp, path)


def markdown_table(df: pd.DataFrame, floatfmt: str = "{:.3g}") -> str:
    cols = list(df.columns)
    out = "| " + " | ".join(str(c) for c in cols) + " |\n|" + "---|" * len(cols) + "\n"
    for row in df.itertuples(index=False, name=None):  # keeps each column's type (iterrows upcasts ints)
        cells = []
        for v in row:
            cells.append(floatfmt.format(v) if isinstance(v, float) else str(v))
        out += "| " + " | ".join(cells) + " |\n"
    return out


# ---------------------------------------------------------------- figures and tables


# ---------------------------------------------------------------- the two comparisons
#
# Every paper suite runs each case twice: "as-published" (each strategy on its
# own stack and kernels, with every entry the testbed's evidence gives them)
# and "mechanism" (every strategy on one implementation, so only the decisions
# differ). A figure script reads the rows of one comparison at a time
# (find_part filters them); report.py judges every script as published and
# shows the mechanism comparison beside it as a what-if.
AS_PUBLISHED, MECHANISM = "as-published", "mechanism"
COMPARISONS = (AS_PUBLISHED, MECHANISM)
COMPARISON_COLUMN = "run.comparison.mode"
# "checks": the Checks made since take_checks() was last called; None until it is first called (nothing is kept
# for a caller that never reads them, such as the report).
_state = {"comparison": AS_PUBLISHED, "lookups": 0, "checks": None}


def set_comparison(comparison: str) -> None:
    """The comparison find_part returns rows of (report.py sets it before each run of a figure script)."""
    if comparison not in COMPARISONS:
        raise ValueError(f"expected a comparison among {COMPARISONS}, found {comparison!r}")
    _state["comparison"] = comparison


def comparison() -> str:
    return _state["comparison"]


def reset_lookups() -> int:
    """How many suite parts were looked up since the last reset (0: the script reads no suite rows, so the
    comparison does not apply to it: predictor and characterisation files)."""
    n, _state["lookups"] = _state["lookups"], 0
    return n


def of_comparison(df: pd.DataFrame, comp: Optional[str] = None) -> pd.DataFrame:
    """The rows of one comparison; rows written before comparisons existed count as as-published."""
    comp = comp or comparison()
    if COMPARISON_COLUMN not in df.columns:
        return df if comp == AS_PUBLISHED else df.iloc[0:0]
    return df[df[COMPARISON_COLUMN].fillna(AS_PUBLISHED) == comp]


def find_part(results: str, part: str, suites=("ablation",), all_seeds: bool = False):
    """The latest complete run that holds `part` (its own suite, or a composite
    suite that includes it) and its successful rows of that part. Earlier runs
    count too: a composite suite run once per part with --filter part=... keeps
    each part findable. Scripts whose checks are rated over the workload seeds
    pass all_seeds=True; the others get the lowest seed's rows only (one row
    per configuration, as they expect) and report "no margin"."""
    _state["lookups"] += 1
    best = None
    for suite in (part,) + tuple(suites):
        for run in reversed(run_dirs(results, suite)):
            if best is not None and run.name <= best[0].name:
                break
            if run_status(run) != "complete":
                continue
            df = load_runs(run)
            if "parts" not in df.columns:
                continue
            rows = of_comparison(df[df["parts"].fillna("").str.split(";").apply(lambda p: part in p)])
            if rows.empty:
                continue
            best = (run, rows)
            break
    if best is None:
        return None, None
    run, rows = best
    failed = rows[rows["status"] != "ok"]
    if not failed.empty:
        raise RuntimeError(f"{run}: {len(failed)} case(s) of part '{part}' failed: "
                           + "; ".join(failed["error"].astype(str).str[:80].tolist()))
    # One row per case; host-time measurements (decision_*, host_*) are averaged over a case's repetitions
    # (the simulated metrics are the same in every repetition).
    host = [c for c in rows.columns if c.startswith(("decision_", "host_")) and pd.api.types.is_numeric_dtype(rows[c])]
    if host and rows["case_id"].duplicated().any():
        means = rows.groupby("case_id", sort=False)[host].mean()
        rows = rows.drop_duplicates("case_id").copy()
        rows[host] = means.loc[rows["case_id"]].to_numpy()
    else:
        rows = rows.drop_duplicates("case_id")
    if not all_seeds and SEED_COLUMN in rows.columns and rows[SEED_COLUMN].nunique() > 1:
        rows = rows[rows[SEED_COLUMN] == rows[SEED_COLUMN].min()]
    return run, rows.reset_index(drop=True)


# The four papers this project reproduces (its specification) lead the report, in this order; the other papers
# the figure scripts declare follow by name, then the comparison pages (FIGURE "page": "comparison"). A new
# paper needs nothing beyond its scripts' FIGURE declarations.
SPECIFICATION = ("KTransformers", "HybriMoE", "SMoE", "DALI")


def _paper_key(name: str) -> str:
    import re
    return re.sub(r"[^0-9a-z]", "", name.casefold())


def figure_scripts(folder=None) -> list:
    """Every figure script in `folder` (default: this one): a module that declares at its top level
    FIGURE = {"paper": ..., "figure": ..., "suite": ...} (a literal, read without importing the module; "page":
    "comparison" marks a page with no paper's claim). Returns (module, paper, figure, suite) tuples, by paper
    (the four specification papers, the others by name, then the comparison pages) and then by module name,
    numbers compared as numbers (dali_fig4 before dali_fig12). A FIGURE that is not such a literal, or whose
    paper is another script's paper spelt differently (one paper, one spelling), is an error naming the files."""
    import ast
    import difflib
    import re
    folder = pathlib.Path(folder) if folder else pathlib.Path(__file__).resolve().parent
    found, comparison, spelt = [], set(), {}
    for f in sorted(folder.glob("*.py")):
        tree = ast.parse(f.read_text(), str(f))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "FIGURE"
                                                    for t in node.targets):
                try:
                    d = ast.literal_eval(node.value)
                except ValueError:
                    raise ValueError(f"{f}:{node.lineno}: FIGURE: expected a literal dict, found an expression")
                keys = {"paper", "figure", "suite"}
                if not isinstance(d, dict) or not keys <= set(d) or not set(d) <= keys | {"page"}:
                    raise ValueError(f"{f}:{node.lineno}: FIGURE: expected the keys {sorted(keys)} (and optionally "
                                     f"'page'), found {sorted(d) if isinstance(d, dict) else type(d).__name__}")
                if d.get("page", "comparison") != "comparison":
                    raise ValueError(f"{f}:{node.lineno}: FIGURE page: expected 'comparison', found {d['page']!r}")
                for other, where in spelt.items():
                    close = difflib.SequenceMatcher(None, _paper_key(other), _paper_key(d["paper"])).ratio() >= 0.85
                    if other != d["paper"] and (_paper_key(other) == _paper_key(d["paper"]) or close):
                        raise ValueError(f"{f}:{node.lineno}: FIGURE paper: expected one spelling per paper, found "
                                         f"{d['paper']!r} here and {other!r} in {where}")
                spelt.setdefault(d["paper"], f.name)
                if "page" in d:
                    comparison.add(d["paper"])
                found.append((f.stem, d["paper"], d["figure"], d["suite"]))

    def key(e):
        paper = e[1]
        group = (0, SPECIFICATION.index(paper), "") if paper in SPECIFICATION else \
            (2 if paper in comparison else 1, 0, paper.casefold())
        return (group, [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", e[0])])
    return sorted(found, key=key)


def repo_root() -> pathlib.Path:
    return pathlib.Path(__file__).resolve().parent.parent


def load_toml(path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib  # type: ignore
    return tomllib.loads(inputs.read_text(path, "a TOML file"))


def paper_values(name: str) -> dict:
    """analysis/paper_values/<name>.toml (numbers transcribed from the papers)."""
    return load_toml(pathlib.Path(__file__).resolve().parent / "paper_values" / f"{name}.toml")


def ratio(harness, paper):
    try:
        if paper in (None, 0) or harness is None:
            return None
        return float(harness) / float(paper)
    except (TypeError, ValueError):
        return None


def fmt(x, spec="{:.3g}") -> str:
    if x is None:
        return "-"
    try:
        if x != x:  # NaN
            return "-"
    except TypeError:
        pass
    return spec.format(x) if isinstance(x, (int, float)) else str(x)


def write_result(out: pathlib.Path, fig_id: str, title: str, table: pd.DataFrame, fig, summary: dict,
                 notes: str = "") -> dict:
    """Writes <out>/<fig_id>.png, .csv and .md; returns the summary for the report index."""
    out.mkdir(parents=True, exist_ok=True)
    if fig is not None:
        save_figure(fig, out / f"{fig_id}.png")
        import matplotlib.pyplot as plt
        plt.close(fig)  # the report draws dozens of figures in one process
    write_text_atomic(out / f"{fig_id}.csv", table.to_csv(index=False))
    md = f"# {title}\n\n" + markdown_table(table) + "\n"
    if notes:
        md += notes.strip() + "\n"
    if summary.get("run"):
        md += f"\nResults: `{summary['run']}`.\n"
    write_text_atomic(out / f"{fig_id}.md", md)
    summary = dict(summary)
    summary.update({"id": fig_id, "title": title, "markdown": f"{fig_id}.md",
                    "png": f"{fig_id}.png" if fig is not None else None, "csv": f"{fig_id}.csv"})
    return summary


def figure_main(run_fn, argv=None, default_out="results/report") -> int:
    """Command line of a figure script: --results DIR --out DIR."""
    import argparse
    import sys
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default="results")
    ap.add_argument("--out", default=default_out)
    a = ap.parse_args(argv)
    # The comparison the report judges every script in, so that a script run alone reads the same rows.
    set_comparison(AS_PUBLISHED)
    try:
        s = run_fn(a.results, pathlib.Path(a.out))
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if s is None:
        return 2
    print(f"wrote {pathlib.Path(a.out) / s['markdown']}: {verdict_of(s)}")
    return 0


def speedups(df: pd.DataFrame, by: list, metric: str, target: str, others) -> pd.DataFrame:
    """Per group of `by` (e.g. model and batch size), metric[target] / metric[other]
    for each other strategy: one row per group, a column per other strategy."""
    recs = []
    for key, g in df.groupby(by if len(by) > 1 else by[0]):
        key = key if isinstance(key, tuple) else (key,)
        vals = {s: float(g[g["strategy"] == s][metric].iloc[0]) for s in [target, *others]
                if (g["strategy"] == s).any()}
        if target not in vals:
            continue
        rec = dict(zip(by, key))
        for o in others:
            rec[f"{target} / {o}"] = vals[target] / vals[o] if vals.get(o) else float("nan")
        recs.append(rec)
    return pd.DataFrame(recs)


def find_parts(results: str, parts, suites=(), all_seeds: bool = False):
    """find_part for several parts; concatenated rows and the run directories.
    Parts without results are skipped; None when none has any."""
    runs, frames = [], []
    for p in parts:
        run, df = find_part(results, p, suites=suites, all_seeds=all_seeds)
        if df is not None:
            runs.append(str(run))
            frames.append(df.assign(part=p))
    if not frames:
        return None, None
    return sorted(set(runs)), pd.concat(frames, ignore_index=True)


def strategy_rows(df: pd.DataFrame, run_dir, part: str, name: str, hint: str = "") -> pd.DataFrame:
    """The rows of strategy `name` in a part's results; an error naming the run and part when there are none."""
    r = df[df["strategy"] == name]
    if r.empty:
        raise RuntimeError(f"{run_dir}: expected strategy '{name}' in part {part}, found none"
                           + (f" ({hint})" if hint else ""))
    return r


def checks_text(checks: dict) -> str:
    """'name: yes; name: no' for a figure's trend checks (legacy boolean checks without a margin), or each
    Check's verdict with its effect, tolerance and seeds."""
    return "; ".join(v.text() if isinstance(v, Check) else f"{k}: {'yes' if v else 'no'} (no margin)"
                     for k, v in checks.items())


# ---------------------------------------------------------------- verdicts with margins
#
# A paper trend counts as reproduced only when the effect exceeds a stated
# tolerance in every one of at least MIN_SEEDS workload seeds (the simulated
# backend is deterministic per seed; the workload is the noise source). A
# ratio check states its band around the paper's value. Verdicts are
# three-valued: reproduced, not reproduced, inconclusive.

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
# A claim has two outcomes, its direction and its magnitude. "reproduced" needs both; a direction that
# holds is "direction only" when the paper's number is missed or when no number of the paper's was reachable to
# compare with (the check's text says which). A check that is itself a magnitude (a band around the paper's
# number, a published range, a paper's "no further gain") needs nothing more.
DIRECTION_ONLY = "direction only"
# Checks that hold by construction (a calibration target, the cost model's own assumption) are reported but not
# counted; a figure made only of them gets this verdict and is left out of the counts.
CONSTRUCTION = "construction"
# Checks of this machine's host time (a planner's wall clock, DALI Table 6 and Fig. 15) say nothing about the
# paper's testbed: reported, not counted; a figure made only of them gets this verdict.
HOST_TIME = "host time (not counted)"
VERDICTS = (REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED, INCONCLUSIVE)
# A page that compares strategies and states no paper's claim (analysis/peers_all.py): shown, not counted.
NO_CLAIM = "no claim (comparison page)"
MIN_SEEDS = 3
REL_TOL = 0.02     # a time or speed effect must exceed 2 % (relative)
ABS_TOL = 0.01     # a fraction (hit rate, share) effect must exceed 1 point
RATIO_BAND = 0.25  # a ratio within 25 % of the paper's counts as matching it
# A magnitude off by more than this factor in every seed (the harness's effect below half or above twice the paper's)
# refutes the claim's number: the claim is not reproduced, not "direction only". A paper's "3x" where the harness
# measures 1.2x is a different claim (the known-truth test's planted claims, each true effect tripled, are refused by
# this rule: docs/KNOWN_TRUTH.md). Fixed before that test ran: a factor of two, the band's "off" made decisive.
REFUTE_FACTOR = 2.0
SEED_COLUMN = "workload.seed"


class Effect:
    """One seed's measured effect for one check. kind 'direction': value > 0 means the paper's direction and
    must exceed tol; kind 'band': value is harness / paper - 1 and must lie within +-tol; kind 'at_most' (a
    claim of no gain): value must not exceed tol. `seedless` marks a
    quantity that no workload seed changes (the cost model alone), checked once."""

    def __init__(self, value: float, tol: float, kind: str = "direction", unit: str = "", seedless: bool = False,
                 basis: str = "ratio"):
        self.value, self.tol, self.kind, self.unit, self.seedless = float(value), float(tol), kind, unit, seedless
        # A band's value: "ratio" harness / paper - 1; "effect" (harness - 1) / (paper - 1) - 1, the effect's size
        # against the paper's effect (speedups and other ratios whose "no effect" is 1).
        self.basis = basis

    def refuted(self) -> bool:
        """A magnitude (kind 'band') whose quantity is off by more than REFUTE_FACTOR: harness / paper (or the
        effect / the paper's effect) below 1 / REFUTE_FACTOR or above REFUTE_FACTOR."""
        q = self.value + 1.0
        return self.kind == "band" and q == q and not (1.0 / REFUTE_FACTOR <= q <= REFUTE_FACTOR)

    def outcome(self) -> str:
        v = self.value
        if v != v:  # NaN: not measurable
            return INCONCLUSIVE
        if self.kind == "band":
            return REPRODUCED if abs(v) <= self.tol else NOT_REPRODUCED
        if self.kind == "at_most":
            return REPRODUCED if v <= self.tol else NOT_REPRODUCED
        if v > self.tol:
            return REPRODUCED
        if v < -self.tol:
            return NOT_REPRODUCED
        return INCONCLUSIVE

    def show(self, v: Optional[float] = None) -> str:
        v = self.value if v is None else v
        if self.unit == "%":
            return f"{100 * v:+.1f}%"
        return f"{v:+.3f}{self.unit}"


class Claim:
    """A claim's direction with its magnitude: `direction` an Effect (the harness's effect beyond the tolerance),
    `magnitude` an Effect of kind 'band' (the harness's effect size against the paper's number, e.g.
    within(harness speedup, paper speedup)), or None where the paper publishes no number."""

    def __init__(self, direction: Effect, magnitude: Optional[Effect] = None):
        self.direction, self.magnitude = direction, magnitude


def faster(slow, fast, paper_speedup=None, tol: float = REL_TOL) -> Claim:
    """`fast` faster than `slow` (times: slow / fast > 1 + tol), with the speedup's effect (slow / fast - 1)
    against the paper's where it publishes one."""
    h = float(slow) / float(fast) if float(fast) else float("nan")
    return Claim(more(slow, fast, tol), within_effect(h, paper_speedup) if paper_speedup else None)


def speedup(fast_speed, slow_speed, paper_speedup=None, tol: float = REL_TOL) -> Claim:
    """A speed (tokens/s) above another by more than tol, with the speedup's effect against the paper's where it
    publishes one."""
    h = float(fast_speed) / float(slow_speed) if float(slow_speed) else float("nan")
    return Claim(more(fast_speed, slow_speed, tol), within_effect(h, paper_speedup) if paper_speedup else None)


def more(a, b, tol: float = REL_TOL) -> Effect:
    """a larger than b by more than tol, relative (speeds, times, speedups)."""
    a, b = float(a), float(b)
    return Effect(a / b - 1 if b else float("nan"), tol, unit="%")


def more_abs(a, b, tol: float = ABS_TOL) -> Effect:
    """a larger than b by more than tol, absolute (hit rates, shares)."""
    return Effect(float(a) - float(b), tol)


def no_more(a, b, tol: float = REL_TOL) -> Effect:
    """a not larger than b by more than tol, relative (a paper's 'no further gain'): a / b - 1 <= tol."""
    a, b = float(a), float(b)
    return Effect(a / b - 1 if b else float("nan"), tol, kind="at_most", unit="%")


def within(harness, paper, band: float = RATIO_BAND) -> Effect:
    """harness within +-band of the paper's value (relative): for a quantity whose size is the claim itself (a
    share, a hit rate, an absolute time). A speedup's magnitude is its effect: within_effect."""
    h, p = float(harness), float(paper)
    return Effect(h / p - 1 if p else float("nan"), band, kind="band", unit="%")


def within_effect(harness, paper, band: float = RATIO_BAND) -> Effect:
    """A ratio whose "no effect" is 1 (a speedup, a time ratio): its effect, harness - 1, within +-band of the
    paper's effect, paper - 1 (docs/REPRODUCING.md, "Reading the report"). On the ratio itself a band of 25% can
    hardly fail for a small effect and accepts the wrong size: +2.5% matched a paper's +9% (1.025 / 1.09 - 1 =
    -6%), a step of -7% matched +9%; on the effect +2.5% is 72% short of +9% and -7% is the other direction."""
    h, p = float(harness), float(paper)
    value = (h - 1) / (p - 1) - 1 if p != 1 and h == h else float("nan")
    return Effect(value, band, kind="band", unit="%", basis="effect")


def every(effects) -> Effect:
    """All of several effects of one kind (e.g. 'on every model'): the weakest counts."""
    effects = list(effects)
    if not effects:
        return Effect(float("nan"), 0)
    if effects[0].kind == "band":
        return max(effects, key=lambda e: abs(e.value) if e.value == e.value else float("inf"))
    if effects[0].kind == "at_most":
        return max(effects, key=lambda e: e.value if e.value == e.value else float("inf"))
    return min(effects, key=lambda e: e.value if e.value == e.value else float("-inf"))


def every_claim(claims) -> Claim:
    """All of several claims (e.g. 'on every model'): the weakest direction and the farthest magnitude."""
    claims = list(claims)
    mags = [c.magnitude for c in claims if c.magnitude is not None]
    return Claim(every(c.direction for c in claims), every(mags) if len(mags) == len(claims) and mags else None)


class Check:
    """A claim's effects over the workload seeds and its verdict.

    `effects` maps seed -> Effect (a direction or, kind 'band', a magnitude on its own) or seed -> Claim (a
    direction with its magnitude). The direction verdict is three-valued (reproduced, not reproduced,
    inconclusive); a direction that holds counts as reproduced only when its magnitude is inside its band in every
    seed, and as DIRECTION_ONLY otherwise, including when the paper's number was not reachable (no magnitude). A
    check of kind 'band' or 'at_most' is a magnitude itself. `role`: "claim" (counted), "construction" (true by
    construction: a calibration target, the cost model's own assumption; reported, not counted) or "host-time"
    (depends on the host that ran the suite, measured with repetitions; reported, not counted: it says nothing about the paper's testbed). A check whose effects
    are the same in every seed is marked seed-invariant: "every seed" is then one measurement, and says so."""

    def __init__(self, name: str, effects: dict, role: str = "claim"):
        self.name, self.role = name, role
        self.effects = {sd: (e.direction if isinstance(e, Claim) else e) for sd, e in effects.items()}
        mags = {sd: e.magnitude for sd, e in effects.items() if isinstance(e, Claim) and e.magnitude is not None}
        self.magnitudes = mags if len(mags) == len(effects) else {}
        first = next(iter(self.effects.values()))
        self.tol, self.kind, self.seedless = first.tol, first.kind, first.seedless
        vals = [e.value for e in self.effects.values()]
        self.seed_invariant = (len(vals) >= 2 and not self.seedless and all(v == v for v in vals)
                               and max(vals) - min(vals) <= 1e-12 * max(1.0, max(abs(v) for v in vals)))
        self.direction, self.reason = self._rate(self.effects)
        self.magnitude = "not published"
        if self.magnitudes:
            m, _ = self._rate(self.magnitudes)
            self.magnitude = "matches" if m == REPRODUCED else "differs"
            if self.magnitude == "differs" and all(e.refuted() for e in self.magnitudes.values()):
                self.magnitude = "refuted"
        self.verdict = self.direction
        if self.kind != "direction" and not self.magnitudes:
            # A band, a range or a bound: the check is the magnitude.
            self.magnitude = "matches" if self.direction == REPRODUCED else "differs"
        elif self.direction == REPRODUCED and self.magnitude == "refuted":
            self.verdict, self.reason = NOT_REPRODUCED, f"magnitude off by more than {REFUTE_FACTOR:g}x in every seed"
        elif self.direction == REPRODUCED and self.magnitude in ("differs", "not published"):
            self.verdict = DIRECTION_ONLY
        if _state["checks"] is not None:
            _state["checks"].append(self)

    def _rate(self, effects: dict):
        outcomes = {e.outcome() for e in effects.values()}
        kind = next(iter(effects.values())).kind
        if not (self.seedless or len(effects) >= MIN_SEEDS):
            return INCONCLUSIVE, f"{len(effects)} seed(s), {MIN_SEEDS} needed"
        if len(outcomes) == 1 and outcomes != {INCONCLUSIVE}:
            return outcomes.pop(), ""
        if outcomes == {INCONCLUSIVE}:
            return INCONCLUSIVE, "within tolerance in every seed"
        return INCONCLUSIVE, {"direction": "differs across seeds", "at_most": "exceeded in some seeds only"}.get(
            kind, "inside the band in some seeds only")

    def text(self) -> str:
        e = list(self.effects.values())
        vals = ", ".join(x.show() for x in e)
        tol = e[0].show(self.tol).lstrip('+')
        margin = {"direction": f"needs > {tol}", "at_most": f"must not exceed +{tol}"}.get(
            self.kind, f"band +-{tol} of the paper's effect" if e[0].basis == "effect" else f"band +-{tol} of the paper")
        seeds = "cost model only" if self.seedless else f"{len(e)} seed(s)"
        if self.seed_invariant:
            seeds += ", the same in every seed: one measurement"
        why = f"; {self.reason}" if self.reason else ""
        mag = ""
        if self.magnitudes:
            m = list(self.magnitudes.values())
            what = "effect/paper's effect - 1" if m[0].basis == "effect" else "harness/paper - 1"
            mag = (f"; magnitude {self.magnitude} ({what}: {', '.join(x.show() for x in m)}; band "
                   f"+-{m[0].show(m[0].tol).lstrip('+')})")
        elif self.kind == "direction":
            mag = "; magnitude not published: direction only at best"
        label = {"construction": " [by construction: not counted]",
                 "host-time": " [host time of the machine that ran the suite: not counted]"}.get(self.role, "")
        return f"{self.name}{label}: {self.verdict} (effect {vals}; {margin}; {seeds}{why}{mag})"


def take_checks() -> list:
    """Every Check made since the last call, in order, and from now on keeps them (scripts/testbed-region reads a
    figure's checks this way, without each script having to return them)."""
    out, _state["checks"] = _state["checks"] or [], []
    return out


def seeds(df: pd.DataFrame):
    """The workload seeds present in a part's rows (one None when the rows carry no seed)."""
    if SEED_COLUMN not in df.columns:
        return [None]
    return sorted(df[SEED_COLUMN].dropna().unique().tolist()) or [None]


def by_seed(df: pd.DataFrame):
    """(seed, rows of that seed) for every workload seed in df."""
    for sd in seeds(df):
        yield sd, (df if sd is None else df[df[SEED_COLUMN] == sd])


IDENTITY_COLUMNS = {"suite", "run_id", "case_id", "case_index", "repetition", "status", "error", "warnings",
                    "utc_time", "wall_time_s", "result_of", "axes"}
CONFIG_COLUMNS = {"backend", "model", "hardware", "strategy", "parts", "part"}


def seed_mean(df: pd.DataFrame, keys=()) -> pd.DataFrame:
    """One row per configuration: the numeric metric columns averaged over the workload seeds, the configuration
    (model, strategy, part, every dotted configuration column) kept; non-numeric metrics (per-layer lists) are
    dropped. For the tables and figures, while checks are rated per seed with evaluate(). Rows without several
    seeds come back unchanged. `keys` names further columns that identify a configuration (a script's own)."""
    if df is None or SEED_COLUMN not in df.columns or df[SEED_COLUMN].nunique() <= 1:
        return df
    cols = [c for c in df.columns if c not in IDENTITY_COLUMNS and c != SEED_COLUMN]
    keys = [c for c in cols if "." in c or c in CONFIG_COLUMNS or c in keys]
    metrics = [c for c in cols if c not in keys and pd.api.types.is_numeric_dtype(df[c])]
    group = df[keys].astype(str).agg("\x1f".join, axis=1)
    first = df.groupby(group, sort=False)[keys].first()
    mean = df.groupby(group, sort=False)[metrics].mean()
    out = first.join(mean).reset_index(drop=True)
    return out[[c for c in df.columns if c in out.columns]]


def seeds_text(df: pd.DataFrame) -> str:
    """'mean over workload seeds 1, 2, 3' (or 'one workload seed') for a table's notes."""
    s = [x for x in seeds(df) if x is not None]
    if len(s) <= 1:
        return "one workload seed" + (f" ({int(s[0])})" if s else "")
    return "mean over workload seeds " + ", ".join(str(int(x)) for x in s)


def margin_text() -> str:
    return (f"a direction counts above {100 * REL_TOL:.0f}% for speeds and times, {ABS_TOL:.2f} for fractions, and "
            f"a magnitude within {100 * RATIO_BAND:.0f}% of the paper's number, each in every one of at least "
            f"{MIN_SEEDS} seeds; reproduced needs both (a direction without a paper's number to compare with is "
            f"direction only), direction only is its own outcome, and a magnitude off by more than "
            f"{REFUTE_FACTOR:g}x in every seed makes the claim not reproduced")


def evaluate(df: pd.DataFrame, measure, roles: Optional[dict] = None) -> dict:
    """Runs measure(rows of one seed) -> {check name: Effect or Claim} for every seed; returns {name: Check}.
    `roles` maps a check name to "construction" or "host-time" (default "claim")."""
    return evaluate_seeds(dict(by_seed(df)), measure, roles)


def evaluate_seeds(per_seed: dict, measure, roles: Optional[dict] = None) -> dict:
    """evaluate() for data that comes one object per workload seed ({seed: data}, e.g. make characterize's
    files): measure(data) -> {check name: Effect or Claim}; returns {name: Check}."""
    per = {}
    for sd, data in per_seed.items():
        for name, eff in measure(data).items():
            per.setdefault(name, {})[sd] = eff
    roles = roles or {}
    return {name: Check(name, effs, roles.get(name, "claim")) for name, effs in per.items()}


def evaluate_once(effects: dict, roles: Optional[dict] = None) -> dict:
    """Checks measured once, outside the seeded suites (predictor JSON, characterisation): a Check each."""
    roles = roles or {}
    return {name: Check(name, {None: eff}, roles.get(name, "claim")) for name, eff in effects.items()}


def verdict_of(summary: dict) -> str:
    """A figure's verdict: three-valued from its margin checks, or 'no margin (legacy check: yes/no)' for a
    script whose checks still compare without a tolerance over a single seed."""
    if summary.get("verdict"):
        return summary["verdict"]
    tr = summary.get("trend_reproduced")
    return "no margin" + ("" if tr is None else f" (legacy check: {'yes' if tr else 'no'})")


def figure_verdict(checks: dict) -> str:
    """Over the counted checks (not those true by construction): not reproduced if any is; else inconclusive if
    any is; else direction only if any claim's magnitude misses the paper's or has none to compare with; else
    reproduced. A figure whose
    checks are all by construction is CONSTRUCTION (reported, not counted)."""
    counted = [c for c in checks.values() if not (isinstance(c, Check) and c.role in ("construction", "host-time"))]
    if checks and not counted:
        host = any(isinstance(c, Check) and c.role == "host-time" for c in checks.values())
        return HOST_TIME if host else CONSTRUCTION
    vs = [c.verdict if isinstance(c, Check) else INCONCLUSIVE for c in counted]
    if NOT_REPRODUCED in vs:
        return NOT_REPRODUCED
    if INCONCLUSIVE in vs or not vs:
        return INCONCLUSIVE
    if DIRECTION_ONLY in vs:
        return DIRECTION_ONLY
    return REPRODUCED


def outcome_counts(checks: dict) -> dict:
    """How many counted checks have each outcome, and how many are by construction."""
    out = {v: 0 for v in VERDICTS}
    out[CONSTRUCTION] = out[HOST_TIME] = 0
    for c in checks.values():
        if isinstance(c, Check) and c.role == "construction":
            out[CONSTRUCTION] += 1
        elif isinstance(c, Check) and c.role == "host-time":
            out[HOST_TIME] += 1
        elif isinstance(c, Check):
            out[c.verdict] = out.get(c.verdict, 0) + 1
    return out


# ---------------------------------------------------------------- characterisation data (make characterize)


def characterize_json(results: str, name: str):
    """results/characterize/<name>.json (written by `make characterize`), or None."""
    path = pathlib.Path(results) / "characterize" / f"{name}.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def seeded_files(root, name: str, ext: str) -> dict:
    """{seed: path} of <root>/<name>-s<seed>.<ext> (the per-seed files of make characterize and make
    predictors); empty when there is none."""
    import re
    root = pathlib.Path(root)
    out = {}
    if root.is_dir():
        for path in sorted(root.glob(f"{name}-s*.{ext}")):
            m = re.fullmatch(re.escape(f"{name}-s") + r"(\d+)\." + re.escape(ext), path.name)
            if m:
                out[int(m.group(1))] = path
    return out


def characterize_seeds(results: str, name: str):
    """{seed: JSON} of results/characterize/<name>-s<seed>.json (`make characterize` writes 3 workload seeds),
    or None when there is none."""
    files = seeded_files(pathlib.Path(results) / "characterize", name, "json")
    return {sd: json.loads(p.read_text()) for sd, p in files.items()} or None


def characterize_trace_seeds(results: str, name: str):
    """{seed: trace} of results/characterize/<name>-s<seed>.safetensors through the numpy trace reader, or None."""
    import sys
    files = seeded_files(pathlib.Path(results) / "characterize", name, "safetensors")
    if not files:
        return None
    reader_dir = str(pathlib.Path(__file__).resolve().parents[1] / "workloads" / "python")
    if reader_dir not in sys.path:
        sys.path.insert(0, reader_dir)
    import moebench_trace
    return {sd: moebench_trace.read(str(p)) for sd, p in files.items()}
