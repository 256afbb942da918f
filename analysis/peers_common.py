# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Shared code of the peer-system scripts (issue 47): the rows of suites/peers.toml and
suites/peers-llamacpp.toml, per model and strategy."""

from __future__ import annotations

import pandas as pd

import common

PART = "peers"
LLAMACPP_PART = "peers-llamacpp"
SHORT = {"deepseek-v2-lite": "DeepSeek-V2-Lite", "mixtral-8x7b": "Mixtral-8x7B", "qwen3-30b-a3b": "Qwen3-30B-A3B"}


def rows(results: str, part: str = PART):
    """(run dir, every seed's rows) of the part, or (None, None) before it was run."""
    return common.find_part(results, part, suites=(), all_seeds=True)


def value(d: pd.DataFrame, model: str, strategy: str, column: str) -> float:
    """One seed's value of a (model, strategy); an error naming what is missing."""
    r = d[(d["model"] == model) & (d["strategy"] == strategy)]
    if r.empty:
        raise RuntimeError(f"expected strategy '{strategy}' on model '{model}' in the peers run, found none "
                           "(run build/bin/run_suite suites/peers.toml)")
    return float(r[column].iloc[0])


def models(d: pd.DataFrame) -> list:
    return sorted(d["model"].unique(), key=lambda m: list(SHORT).index(m) if m in SHORT else len(SHORT))


def per_model_table(df: pd.DataFrame, strategies: list, columns: dict) -> pd.DataFrame:
    """Seed means: one row per model and strategy, the given columns renamed."""
    m = common.seed_mean(df)
    m = m[m["strategy"].isin(strategies)].copy()
    m["model"] = m["model"].map(lambda x: SHORT.get(x, x))
    m["order"] = m["strategy"].map(strategies.index)
    t = m.sort_values(["model", "order"])[["model", "strategy", *columns]].rename(columns=columns)
    return t.reset_index(drop=True)


def range_effect(h: float, lo: float, hi: float, band: float = common.RATIO_BAND) -> common.Effect:
    """A ratio inside a published range [lo, hi], each end widened by the band: the larger of lo / h - 1 and
    h / hi - 1 must not exceed the band (kind 'at_most')."""
    if not (h == h) or h <= 0:
        return common.Effect(float("nan"), band, kind="at_most", unit="%")
    return common.Effect(max(lo / h - 1.0, h / hi - 1.0), band, kind="at_most", unit="%")
