# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Why each claim the reference does not reproduce is not reproduced: analysis/causes.toml, one entry
per claim, each with its kind of cause and the evidence it rests on (docs/REPRODUCING.md, "Why a claim is not
reproduced"). The report shows the cause beside the verdict; ci and analysis tests check that every claim of
results/reference/verdicts.csv that is not reproduced has one, that every piece of evidence it names exists, and
that every number its `quotes` names is in its text and among the reference's recorded numbers for that claim (a
quote of "today's" numbers goes stale when the reference moves). A cause that rests on a counterfactual names the
committed run that measured it (`runs`: an executable script of the repository with the `log.txt` it wrote beside
it) and the numbers its text takes from that log (`run_quotes`, each in the text and in a named run's log).

    python3 analysis/causes.py     # checks the file against the reference; prints the count per kind"""

from __future__ import annotations

import csv
import os
import pathlib
import re
import sys

import common
import inputs

CAUSES = pathlib.Path(__file__).resolve().parent / "causes.toml"
# The reference verdicts the causes explain (make report-accept writes them; analysis/report.py judges against them).
REFERENCE = pathlib.Path(__file__).resolve().parents[1] / "results" / "reference" / "verdicts.csv"

# What a kind says (docs/REPRODUCING.md has the longer form).
KINDS = {
    "testbed": "the verdict flips with a testbed quantity inside the range its evidence allows",
    "beyond the testbed range": "the number moves with a testbed quantity, but the paper's number needs a value "
                                "of it outside the range its evidence allows",
    "mechanism": "no testbed quantity moves it to the paper's number: the decisions as the paper describes them, "
                 "run on one core, give another result (a controlled experiment says so)",
    "not the testbed": "no testbed quantity moves it to the paper's number within three widths of its range; "
                       "whether the mechanism or the workload is the cause is not yet separated",
    "workload": "a property of the synthetic routing that its calibration targets, fitted on other measurements, "
                "do not give",
    "no published number": "the direction holds; the paper publishes no number its magnitude could match",
    "unmeasured runtime cost": "the proposed system's own absolute numbers imply a cost of its implementation "
                               "that no evidence here measures",
    "open": "no cause backed by evidence yet",
}

# Verdicts that need a cause, and those that do not (reported, not counted).
NEEDS_CAUSE = (common.DIRECTION_ONLY, common.NOT_REPRODUCED, common.INCONCLUSIVE)


def slug(heading: str) -> str:
    """A Markdown heading's anchor as GitHub writes it."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def _anchors(path: pathlib.Path) -> set:
    text = inputs.read_text(path, "an evidence file")
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def _evidence_file(root: pathlib.Path, where: str, ev) -> tuple:
    """(the repository's file, its anchor) that an evidence entry names; ValueError for anything else (not a
    string, absolute, leaving the repository, not a regular file)."""
    if not isinstance(ev, str) or not ev:
        raise ValueError(f"{where}: key 'evidence': expected paths of files of the repository as strings, "
                         f"found {ev!r}")
    file, _, anchor = ev.partition("#")
    rel = pathlib.PurePosixPath(file)
    f = (root / file).resolve()
    if rel.is_absolute() or ".." in rel.parts or not f.is_relative_to(root.resolve()):
        raise ValueError(f"{where}: key 'evidence': expected a path inside the repository, relative to its root, "
                         f"found '{inputs.shown(file)}'")
    if inputs.kind(f) != "a regular file":
        raise ValueError(f"{where}: key 'evidence': expected a file of the repository, found "
                         f"{inputs.kind(f)} at '{inputs.shown(file)}'")
    return f, file, anchor


def _runs(root: pathlib.Path, where: str, c: dict, read: dict) -> None:
    """The entry's committed runs exist, each an executable script with its log beside it, and every number in
    `run_quotes` is in the text and in one of those logs; ValueError naming the entry and the key otherwise.
    `read` holds the logs read so far ({path: text}): several causes name the same run."""
    runs, rq = c.get("runs", []), c.get("run_quotes", [])
    if not isinstance(runs, list) or not all(isinstance(r, str) and r for r in runs):
        raise ValueError(f"{where}: key 'runs': expected an array of the run scripts' paths, found {runs!r}")
    if not isinstance(rq, list) or not all(isinstance(q, str) and q for q in rq):
        raise ValueError(f"{where}: key 'run_quotes': expected an array of the numbers the text takes from the "
                         f"runs' logs, as strings, found {rq!r}")
    if rq and not runs:
        raise ValueError(f"{where}: key 'runs': expected the runs whose logs hold the run_quotes, found none")
    logs = ""
    for r in runs:
        f = (root / r).resolve()
        if root.resolve() not in f.parents or not f.is_file():
            raise ValueError(f"{where}: key 'runs': expected a script of the repository, found no file at '{r}'")
        if not os.access(f, os.X_OK):
            raise ValueError(f"{where}: key 'runs': expected an executable script, found '{r}' not executable")
        log = f.parent / "log.txt"
        if not log.is_file():
            raise ValueError(f"{where}: key 'runs': expected the log the run wrote beside it ({r} -> log.txt), "
                             "found none")
        if log not in read:
            read[log] = inputs.read_text(log, "a run's log")
        logs += read[log]
    for q in rq:
        if q not in c["text"]:
            raise ValueError(f"{where}: key 'run_quotes': expected '{inputs.shown(q)}' in the text, found it not")
        if q not in logs:
            raise ValueError(f"{where}: key 'run_quotes': expected '{inputs.shown(q)}' in the log of "
                             f"{', '.join(runs)}, found it not (a stale quote?)")


def load(path: pathlib.Path = CAUSES) -> dict:
    """{(paper, figure): entry}; raises ValueError naming the file, the entry and the key on a malformed one."""
    try:
        data = common.load_toml(path)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: expected the TOML of analysis/causes.toml, found {e}")
    entries = data.get("cause", [])
    if not isinstance(entries, list) or not all(isinstance(c, dict) for c in entries):
        raise ValueError(f"{path}: key 'cause': expected an array of tables ([[cause]] entries), found "
                         f"{type(entries).__name__ if not isinstance(entries, list) else 'other values in it'}")
    out, anchors, logs = {}, {}, {}  # anchors: each evidence file's headings, logs: each run's log, read once
    root = common.repo_root()
    for i, c in enumerate(entries):
        where = f"{path}: [[cause]] {i + 1} ({c.get('paper')}, {c.get('figure')})"
        for key in ("paper", "figure", "kind", "text", "evidence"):
            if key not in c:
                raise ValueError(f"{where}: expected key '{key}', found none")
        for key in ("paper", "figure", "text"):
            if not isinstance(c[key], str):
                raise ValueError(f"{where}: key '{key}': expected a string, found {c[key]!r}")
        kinds = c["kind"] if isinstance(c["kind"], list) else [c["kind"]]
        for k in kinds:
            if k not in KINDS:
                raise ValueError(f"{where}: key 'kind': expected one of {', '.join(KINDS)}; found '{k}'")
        if not isinstance(c["evidence"], list):
            raise ValueError(f"{where}: key 'evidence': expected an array of paths, found {c['evidence']!r}")
        if not c["evidence"] and kinds != ["open"]:
            raise ValueError(f"{where}: key 'evidence': expected at least one file, found none")
        for ev in c["evidence"]:
            f, file, anchor = _evidence_file(root, where, ev)
            if anchor and file not in anchors:
                anchors[file] = _anchors(f)
            if anchor and anchor not in anchors[file]:
                raise ValueError(f"{where}: key 'evidence': expected a heading of {file} with anchor '{anchor}', "
                                 "found none")
        quotes = c.get("quotes", [])
        if not isinstance(quotes, list) or not all(isinstance(q, str) and q for q in quotes):
            raise ValueError(f"{where}: key 'quotes': expected an array of the numbers the text quotes from the "
                             f"reference, as strings, found {quotes!r}")
        for q in quotes:
            if q not in c["text"]:
                raise ValueError(f"{where}: key 'quotes': expected '{inputs.shown(q)}' in the text, found it not")
        _runs(root, where, c, logs)
        key = (c["paper"], c["figure"])
        if key in out:
            raise ValueError(f"{where}: expected one entry per claim, found a second")
        out[key] = dict(c, kind=kinds)
    return out


def text(entry: dict) -> str:
    """The report's cell: kinds, then the cause."""
    return f"*{', '.join(entry['kind'])}*: {entry['text']}"


def check(reference: pathlib.Path, causes: dict) -> list:
    """What is wrong between the reference verdicts and the causes: a counted claim not reproduced without an
    entry, or an entry for a claim that is not in the reference or is reproduced."""
    problems, seen = [], set()
    with open(reference, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["paper"], r["figure"])
            seen.add(key)
            if r["verdict"] in NEEDS_CAUSE and key not in causes:
                problems.append(f"{reference}: {key[0]} {key[1]} is '{r['verdict']}' and has no entry in "
                                f"{CAUSES.name}")
            if r["verdict"] not in NEEDS_CAUSE and key in causes:
                problems.append(f"{CAUSES.name}: {key[0]} {key[1]} has a cause but is '{r['verdict']}' in "
                                f"{reference}")
            for q in causes.get(key, {}).get("quotes", []):
                if q not in r.get("headline", ""):
                    problems.append(f"{CAUSES.name}: {key[0]} {key[1]}: key 'quotes': expected '{q}' among the "
                                    f"reference's numbers ('{r.get('headline', '')}'), found it not (a stale quote?)")
    for key in causes:
        if key not in seen:
            problems.append(f"{CAUSES.name}: {key[0]} {key[1]} is not a claim of {reference}")
    return problems


def main() -> int:
    try:
        causes = load()
    except ValueError as e:
        print(e, file=sys.stderr)
        return 1
    problems = check(REFERENCE, causes)
    for p in problems:
        print(p, file=sys.stderr)
    counts = {}
    for c in causes.values():
        for k in c["kind"]:
            counts[k] = counts.get(k, 0) + 1
    print(f"{len(causes)} claims with a cause; by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(inputs.main_guard("causes.py", main))
