"""Three-valued verdicts with stated margins over workload seeds (analysis/common.py)."""

import pathlib
import sys

import pandas as pd

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import common  # noqa: E402
from common import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED  # noqa: E402


def check(values, make=lambda v: common.Effect(v, common.ABS_TOL)):
    return common.Check("c", {i + 1: make(v) for i, v in enumerate(values)})


def test_rounding_noise_is_not_a_reproduced_trend():
    # HybriMoE Fig. 9 passed "MRS above LRU" at +0.001 hit rate: within tolerance now.
    assert check([0.001, 0.002, 0.001]).verdict == INCONCLUSIVE
    # DALI Fig. 12 compared 45.041 and 45.051 tokens/s (0.02 %).
    assert common.more(45.051, 45.041).outcome() == INCONCLUSIVE
    assert common.more(46.0, 45.0).outcome() == REPRODUCED  # 2.2 % > 2 %


def test_an_effect_must_hold_in_every_seed():
    assert check([0.05, 0.06, 0.04]).verdict == REPRODUCED
    assert check([-0.05, -0.06, -0.04]).verdict == NOT_REPRODUCED
    c = check([0.05, -0.03, 0.04])  # seed-dependent
    assert c.verdict == INCONCLUSIVE and "differs across seeds" in c.reason
    c = check([0.05, 0.06])  # too few seeds
    assert c.verdict == INCONCLUSIVE and "3 needed" in c.reason


def test_ratio_band_around_the_paper():
    assert check([1.30, 1.20, 1.25], lambda v: common.within(v, 1.32)).verdict == REPRODUCED
    assert check([2.0, 2.1, 1.9], lambda v: common.within(v, 1.32)).verdict == NOT_REPRODUCED
    assert check([1.3, 2.0, 1.3], lambda v: common.within(v, 1.32)).verdict == INCONCLUSIVE


def test_every_takes_the_weakest_effect():
    e = common.every([common.more_abs(0.5, 0.4), common.more_abs(0.41, 0.405)])
    assert e.outcome() == INCONCLUSIVE
    b = common.every([common.within(1.0, 1.0), common.within(1.5, 1.0)])
    assert b.outcome() == NOT_REPRODUCED


def test_seedless_quantities_need_one_evaluation():
    c = common.evaluate_once({"cost model": common.Effect(0.2, 0.05, seedless=True)})["cost model"]
    assert c.verdict == REPRODUCED
    c = common.evaluate_once({"from one predictor run": common.Effect(0.2, 0.05)})["from one predictor run"]
    assert c.verdict == INCONCLUSIVE


def test_figure_verdict_and_evaluate_per_seed():
    df = pd.DataFrame({"workload.seed": [1, 1, 2, 2, 3, 3], "strategy": ["a", "b"] * 3,
                       "speed": [10.0, 9.0, 10.0, 9.5, 10.0, 9.9]})

    def measure(d):
        s = d.set_index("strategy")["speed"]
        return {"a faster than b": common.more(s["a"], s["b"])}

    checks = common.evaluate(df, measure)
    c = checks["a faster than b"]
    assert len(c.effects) == 3
    assert c.verdict == INCONCLUSIVE  # +1 % in seed 3
    assert "a faster than b: inconclusive" in common.checks_text(checks)
    assert common.figure_verdict(checks) == INCONCLUSIVE
    assert common.figure_verdict({"x": check([0.05] * 3), "y": check([-0.05] * 3)}) == NOT_REPRODUCED
    assert common.figure_verdict({"x": check([0.05] * 3)}) == REPRODUCED
    # A legacy boolean check has no margin and never counts as reproduced.
    assert common.verdict_of({"trend_reproduced": True}) == "no margin (legacy check: yes)"
    assert common.verdict_of({"verdict": REPRODUCED}) == REPRODUCED
