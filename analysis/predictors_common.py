"""Reading results/predictors/*.json (written by `make predictors`)."""

from __future__ import annotations

import json
import pathlib


def load(results: str, model: str, batch: int):
    path = pathlib.Path(results) / "predictors" / f"{model}-b{batch}.json"
    if not path.is_file():
        return None
    d = json.loads(path.read_text())
    if d.get("model") != model or d.get("batch") != batch:
        raise RuntimeError(f"{path}: expected model {model}, batch {batch}; found {d.get('model')}, {d.get('batch')}")
    d["_path"] = str(path)
    return d


def mean(xs):
    v = [x for x in xs if x is not None]
    return sum(v) / len(v) if v else float("nan")
