# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""analysis/serving.py: capacity is the highest rate met in every seed, and a ranking needs every seed."""

import math

import pandas as pd

import serving


def rows(values):
    """values: {(strategy, rate, seed): (goodput, p99 met)}."""
    return pd.DataFrame([{"strategy": s, "workload.rate": r, "workload.seed": k, "serve_goodput_rps": g,
                          "serve_slo_p99_met": m} for (s, r, k), (g, m) in values.items()])


def test_capacity_is_the_highest_rate_met_in_every_seed():
    d = rows({("a", 1.0, 1): (1, 1), ("a", 1.0, 2): (1, 1), ("a", 2.0, 1): (2, 1), ("a", 2.0, 2): (2, 0),
              ("a", 0.5, 1): (0.5, 1), ("a", 0.5, 2): (0.5, 1)})
    assert serving.capacity(d) == 1.0
    assert math.isnan(serving.capacity(d[d["workload.rate"] == 2.0]))  # not met in seed 2


def test_a_ranking_holds_only_beyond_the_tolerance_in_every_seed():
    d = rows({("a", 4.0, 1): (1.10, 0), ("b", 4.0, 1): (1.00, 0), ("c", 4.0, 1): (0.0, 0),
              ("a", 4.0, 2): (1.01, 0), ("b", 4.0, 2): (1.00, 0), ("c", 4.0, 2): (0.0, 0)})
    pairs = serving.ranking(d, 4.0)
    assert ("a", "b") not in pairs  # +1% in seed 2: inside the 2% tolerance
    assert ("a", "c") in pairs and ("b", "c") in pairs  # any goodput is above none
    assert ("c", "a") not in pairs
    assert serving.order_text(pairs, ["a", "b", "c"]).startswith("a (1) > b (1) > c (0)")


def test_an_oracle_is_not_a_bound_at_a_rate_where_a_seed_warns_so():
    d = rows({("oracle", 1.0, 1): (1, 1), ("oracle", 1.0, 2): (1, 1), ("oracle", 4.0, 1): (2, 1),
              ("oracle", 4.0, 2): (2, 1)})
    d["warnings"] = [None, "serving: ... so this case is not a bound", "serving: the oracle's future is its own "
                     "schedule (3 runs of the case until the schedule repeated)", None]
    assert serving.not_bounds(d) == [1.0]
    text = serving.oracle_text(d, ["a", "oracle"])
    assert "not a bound at 1 req/s" in text
    d["warnings"] = None
    assert "a bound at every rate" in serving.oracle_text(d, ["oracle"])
    assert serving.oracle_text(d, ["a"]) == ""
