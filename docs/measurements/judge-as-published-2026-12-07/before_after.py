#!/usr/bin/env python3
"""Before and after: the reference verdicts before issue 79's item 3 (commit 604f62e's file, judged partly in the
mechanism comparison) against the ones recorded from the rerun judged as published (the working tree's file).

    python3 docs/measurements/judge-as-published-2026-12-07/before_after.py > docs/measurements/judge-as-published-2026-12-07/before_after.md
"""
import csv
import io
import pathlib
import subprocess

root = pathlib.Path(__file__).resolve().parents[3]
old_text = subprocess.run(["git", "show", "604f62e:results/reference/verdicts.csv"], cwd=root, check=True,
                          capture_output=True, text=True).stdout
old = {(r["paper"], r["figure"]): r for r in csv.DictReader(io.StringIO(old_text))}
new = {(r["paper"], r["figure"]): r for r in csv.DictReader(open(root / "results/reference/verdicts.csv"))}
print("| paper | figure | judged in before | verdict before | verdict now (as published) | headline before | headline now |")
print("|---|---|---|---|---|---|---|")
moved = 0
counts = {}
for k, r in new.items():
    o = old.get(k, {})
    changed = o.get("verdict") != r["verdict"]
    moved += changed
    counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    mark = "**" if changed else ""
    print(f"| {k[0]} | {k[1]} | {o.get('judged in', '-')} | {o.get('verdict', '-')} | {mark}{r['verdict']}{mark} | "
          f"{o.get('headline', '').replace('|', '/')} | {r['headline'].replace('|', '/')} |")
print()
print(f"{moved} verdicts moved; now: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
