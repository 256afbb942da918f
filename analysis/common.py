"""Shared helpers for the analysis scripts. Scripts read only results/."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Optional

import pandas as pd


def run_dirs(results: str, suite: str):
    """Run directories of a suite, oldest first (names start with the UTC start time)."""
    root = pathlib.Path(results) / suite
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / "manifest.json").is_file())


def latest_run(results: str, suite: str, complete_only: bool = True) -> Optional[pathlib.Path]:
    for d in reversed(run_dirs(results, suite)):
        m = json.loads((d / "manifest.json").read_text())
        if not complete_only or m.get("status") == "complete":
            return d
    return None


def load_runs(run_dir: pathlib.Path) -> pd.DataFrame:
    """The rows of runs.jsonl (one per case and repetition)."""
    path = run_dir / "runs.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return pd.DataFrame(rows)


def manifest(run_dir: pathlib.Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def write_text_atomic(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp.{os.getpid()}.0")
    tmp.write_text(text)
    os.replace(tmp, path)


def save_figure(fig, path: pathlib.Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + f".tmp.{os.getpid()}.png")
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    os.replace(tmp, path)


def markdown_table(df: pd.DataFrame, floatfmt: str = "{:.3g}") -> str:
    cols = list(df.columns)
    out = "| " + " | ".join(str(c) for c in cols) + " |\n|" + "---|" * len(cols) + "\n"
    for _, r in df.iterrows():
        cells = []
        for c in cols:
            v = r[c]
            cells.append(floatfmt.format(v) if isinstance(v, float) else str(v))
        out += "| " + " | ".join(cells) + " |\n"
    return out
