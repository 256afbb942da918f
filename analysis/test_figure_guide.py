# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Follows docs/ADDING_A_FIGURE.md for every figure script: its FIGURE names a suite file (or make target) that
exists and that docs/REPRODUCING.md lists, every part it names is a part of that suite, every table of paper values
it reads exists, its paper and figure have a reference verdict, and every reference verdict has a script. The
example's files exist and its FIGURE is the guide's."""

import csv
import fnmatch
import pathlib
import re
import tomllib

import common

ROOT = pathlib.Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "ADDING_A_FIGURE.md"


def parts(suite: pathlib.Path) -> set:
    """The names of a suite's parts: the [suite] name of every file it includes, recursively."""
    data = tomllib.loads(suite.read_text())
    out = set()
    for inc in data.get("include", []):
        child = suite.parent / inc
        out.add(tomllib.loads(child.read_text()).get("suite", {}).get("name"))
        out |= parts(child)
    return out


def where(suite_field: str):
    """(path or make target, [part patterns]) of a FIGURE's "suite"."""
    m = re.match(r"(\S+(?: \S+)?)(?: \(parts? (.+)\))?$", suite_field)
    head = m.group(1)
    named = [p.strip() for p in (m.group(2) or "").split(",") if p.strip()]
    return head, named


def problems_of(scripts, verdict_rows, reproducing: str, root: pathlib.Path = ROOT) -> list:
    out = []
    makefile = (root / "Makefile").read_text()
    for module, paper, figure, suite_field in scripts:
        head, named = where(suite_field)
        if head.startswith("make "):
            target = head.split()[1]
            if not re.search(rf"^{re.escape(target)}:", makefile, re.M):
                out.append(f"{module}: no make target '{target}'")
        else:
            suite = root / head
            if not suite.is_file():
                out.append(f"{module}: no suite {head}")
                continue
            have = parts(suite)
            for p in named:
                if not any(fnmatch.fnmatch(x or "", p) for x in have):
                    out.append(f"{module}: no part {p} in {head}")
        if head not in reproducing:
            out.append(f"{module}: {head} not in REPRODUCING.md")
        text = (root / "analysis" / f"{module}.py").read_text()
        for name, table in re.findall(r'paper_values\("(\w+)"\)\["(\w+)"\]', text):
            values = tomllib.loads((root / "analysis" / "paper_values" / f"{name}.toml").read_text())
            if table not in values:
                out.append(f"{module}: no [{table}] in analysis/paper_values/{name}.toml")
        if not any(r["paper"] == paper and r["figure"] == figure for r in verdict_rows):
            out.append(f"{module}: no reference verdict for {paper} {figure}")
    declared = {(p, f) for _, p, f, _ in scripts}
    for r in verdict_rows:
        if (r["paper"], r["figure"]) not in declared:
            out.append(f"verdicts.csv: {r['paper']} {r['figure']} has no script")
    return out


def reference():
    with open(ROOT / "results" / "reference" / "verdicts.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_every_figure_script_has_what_the_guide_lists():
    scripts = common.figure_scripts()
    assert len(scripts) >= 40
    assert problems_of(scripts, reference(), (ROOT / "docs" / "REPRODUCING.md").read_text()) == []


def test_a_missing_piece_is_named():
    scripts = [("smoe_fig13", "SMoE", "Fig. 13", "suites/smoe-fig13.toml"),
               ("dali_fig14", "DALI", "Fig. 14", "suites/dali.toml (part dali-fig99)"),
               ("dali_fig13", "DALI", "Fig. 13", "suites/nowhere.toml")]
    rows = [{"paper": "SMoE", "figure": "Fig. 13"}, {"paper": "DALI", "figure": "Fig. 14"},
            {"paper": "X", "figure": "Y"}]
    found = problems_of(scripts, rows, "suites/dali.toml")
    assert found == ["smoe_fig13: suites/smoe-fig13.toml not in REPRODUCING.md",
                     "dali_fig14: no part dali-fig99 in suites/dali.toml",
                     "dali_fig13: no suite suites/nowhere.toml",
                     "verdicts.csv: X Y has no script"], found


def test_the_guides_example_is_real():
    guide = GUIDE.read_text()
    paths = set(re.findall(r"`((?:suites|analysis)/[A-Za-z0-9_./-]+\.(?:toml|py))`", guide))
    assert len(paths) >= 6, paths
    assert [p for p in paths if not (ROOT / p).is_file()] == []
    block = re.search(r"```python\n(.+?)```", guide, re.S).group(1)
    assert re.sub(r"\s+", " ", block).strip() in re.sub(r"\s+", " ", (ROOT / "analysis" / "smoe_fig13.py").read_text())
