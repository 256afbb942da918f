# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Reading results/predictors/*.json (written by `make predictors`: one file per model, batch size and workload
seed, <model>-b<batch>-s<seed>.json)."""

from __future__ import annotations

import json
import pathlib

import common


def load_seeds(results: str, model: str, batch: int):
    """{seed: report} for every workload seed evaluated for (model, batch); None when there is none."""
    out = {}
    for sd, path in common.seeded_files(pathlib.Path(results) / "predictors", f"{model}-b{batch}", "json").items():
        d = json.loads(path.read_text())
        if d.get("model") != model or d.get("batch") != batch:
            raise RuntimeError(f"{path}: expected model {model}, batch {batch}; found {d.get('model')}, "
                               f"{d.get('batch')}")
        d["_path"] = str(path)
        out[sd] = d
    return out or None


def mean(xs):
    v = [x for x in xs if x is not None]
    return sum(v) / len(v) if v else float("nan")
