# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Shared code of the peer-system scripts: the rows of suites/peers.toml and
suites/peers-llamacpp.toml, per model and strategy."""

from __future__ import annotations

import pandas as pd

import common

PART = "peers"
LLAMACPP_PART = "peers-llamacpp"
SHORT = {"deepseek-v2-lite": "DeepSeek-V2-Lite", "mixtral-8x7b": "Mixtral-8x7B", "qwen3-30b-a3b": "Qwen3-30B-A3B"}
TESTBED = {"hybrimoe-a6000": "A6000", "dali-rtx3090": "RTX 3090", "smoe-rtx4090": "RTX 4090"}


def rows(results: str, part: str = PART):
    """(run dir, every seed's rows) of the part, or (None, None) before it was run."""
    return common.find_part(results, part, suites=(), all_seeds=True)


def settings(d: pd.DataFrame) -> list:
    """The (testbed, model) pairs of the rows, models in SHORT's order."""
    pairs = d[["hardware", "model"]].drop_duplicates().itertuples(index=False, name=None)
    return sorted(pairs, key=lambda p: (p[0], list(SHORT).index(p[1]) if p[1] in SHORT else len(SHORT)))


def label(setting) -> str:
    """'Mixtral-8x7B, A6000' for a (testbed, model) pair."""
    hw, m = setting
    return f"{SHORT.get(m, m)}, {TESTBED.get(hw, hw)}"


def value(d: pd.DataFrame, setting, strategy: str, column: str) -> float:
    """One seed's value of a strategy in a (testbed, model) setting; an error naming what is missing."""
    hw, model = setting
    r = d[(d["hardware"] == hw) & (d["model"] == model) & (d["strategy"] == strategy)]
    if len(r) != 1:
        raise RuntimeError(f"expected one row of strategy '{strategy}' on model '{model}' and testbed '{hw}' in "
                           f"the peers run, found {len(r)} (run build/bin/run_suite suites/peers.toml)")
    return float(r[column].iloc[0])


def per_model_table(df: pd.DataFrame, strategies: list, columns: dict) -> pd.DataFrame:
    """Seed means: one row per testbed, model and strategy, the given columns renamed; 'setting' labels the
    (model, testbed) pair."""
    m = common.seed_mean(df)
    m = m[m["strategy"].isin(strategies)].copy()
    m["setting"] = [label((h, x)) for h, x in zip(m["hardware"], m["model"])]
    m["model"] = m["model"].map(lambda x: SHORT.get(x, x))
    m["testbed"] = m["hardware"].map(lambda x: TESTBED.get(x, x))
    m["order"] = m["strategy"].map(strategies.index)
    t = m.sort_values(["testbed", "model", "order"])[["setting", "testbed", "model", "strategy", *columns]]
    return t.rename(columns=columns).reset_index(drop=True)


def range_effect(h: float, lo: float, hi: float, band: float = common.RATIO_BAND) -> common.Effect:
    """A ratio inside a published range [lo, hi], each end widened by the band: the larger of lo / h - 1 and
    h / hi - 1 must not exceed the band (kind 'at_most')."""
    if not (h == h) or h <= 0:
        return common.Effect(float("nan"), band, kind="at_most", unit="%")
    return common.Effect(max(lo / h - 1.0, h / hi - 1.0), band, kind="at_most", unit="%")
