# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""The report's section on the testbed regions (scripts/testbed-region): for every paper testbed whose region was
judged, each claim's verdict at the committed profile, its outcome across the region, the unknown it flips with,
and for each check it does not reproduce, the unknown its number moves most with and the value of that unknown the
paper's number would need (docs/REPRODUCING.md, "Across the testbed region")."""

from __future__ import annotations

import json
import os
import pathlib


def _fmt(x) -> str:
    return "-" if x is None or x != x else f"{x:.4g}"


def flip_spans(flip: dict) -> str:
    """"A-B and C-D" from scripts/testbed-region's interpolated spans between the center and each end where the
    verdict changes (absent in regions judged before they were recorded: ""). The region tables and the report
    both print it."""
    spans = [x for x in (flip.get("low_flips_at"), flip.get("high_flips_at")) if x]
    return " and ".join(_fmt(a) if _fmt(a) == _fmt(b) else f"{_fmt(a)}-{_fmt(b)}" for a, b in spans)


def flips_at(flip: dict) -> str:
    """"; flips at about A-B" (flip_spans), or ""."""
    spans = flip_spans(flip)
    return f"; flips at about {spans}" if spans else ""


def cause_text(claim: dict) -> str:
    """For every counted check that is not reproduced at the committed profile: what moves it and what the paper's
    number needs."""
    out = []
    for k in claim["checks"]:
        by = (k.get("cause") or {}).get("by_unknown") or []
        if not by or k["role"] in ("construction", "host-time") or k["verdicts"].get("center") == "reproduced":
            continue
        s = by[0]
        if not abs(s["moves"]) > 1e-9:
            out.append(f"{k['name']}: {k['verdicts'].get('center', '-')}; no testbed unknown moves it")
            continue
        need = ("no value of it within 3 range widths" if s["needs"] is None else
                f"the paper's needs {_fmt(s['needs'])} ({'inside' if s['inside'] else 'outside'} the range)")
        out.append(f"{k['name']}: {k['verdicts'].get('center', '-')}; moves most with `{s['key']}` "
                   f"({_fmt(s['low'])} to {_fmt(s['high'])} over its range); {need}")
    return "; ".join(out)


def load(results: str) -> list:
    """Every results/region/<profile>/region.json that judged claims, by profile name."""
    root = pathlib.Path(results) / "region"
    found = []
    for f in sorted(root.glob("*/region.json")) if root.is_dir() else []:
        try:
            r = json.loads(f.read_text())
        except (OSError, ValueError) as e:
            raise RuntimeError(f"{f}: expected the JSON scripts/testbed-region writes, found {e}")
        if r.get("claims"):
            found.append((f, r))
    return found


def markdown(results: str, out=None) -> str:
    """The section; links to each region.md are relative to `out` (the report's folder) when given."""
    found = load(results)
    if not found:
        return ("Not run: `make region` (scripts/testbed-region on each fitted testbed: its region from the "
                "baselines' published numbers, then its claims at the region's points).\n")
    s = ""
    for f, r in found:
        inside = sum(p["in_region"] for p in r["points"])
        link = f.parent / "region.md"
        link = os.path.relpath(link, out) if out is not None else link
        s += (f"**{r['profile']}** ([{f.parent.name}/region.md]({link})): {inside} of "
              f"{len(r['points'])} points meet every target; claims judged at {len(r['claims']['points'])} "
              f"({', '.join(r['claims']['points'])}).\n\n"
              "| paper | figure | judged in | at the committed profile | across the region | flips with | cause "
              "(checks not reproduced) |\n|---|---|---|---|---|---|---|\n")
        for c in r["claims"]["claims"]:
            flips = "; ".join(f"`{x['key']}` ({_fmt(x['low'][0])}: {x['low'][1]}, {_fmt(x['high'][0])}: "
                              f"{x['high'][1]}{flips_at(x)})" for x in c["flips"])
            flips = flips or "; ".join(f"unknowns together at {pid}: {v}" for pid, v in c.get("joint", {}).items()) \
                or "-"
            s += (f"| {c['paper']} | {c['figure']} | {c['judged_in']} | {c['center']} | {c['outcome']} | {flips} | "
                  f"{cause_text(c) or '-'} |\n")
        s += "\n"
    return s
