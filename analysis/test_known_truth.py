# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""The known-truth test's own method (analysis/known_truth.py), on answers known here: the replay itself as the
harness must meet every target, a harness that flatters the proposed systems or reverses them must not, and the
profile's targets are the replay's baseline times. No suite runs (make known-truth runs them)."""

import statistics

import pytest

import common
import known_truth as kt


@pytest.fixture(scope="module")
def times():
    return kt.truth()


@pytest.fixture(scope="module")
def claims(times):
    return kt.true_claims(times)


def as_harness(times, scale=None):
    """Three 'seeds' whose times are the replay's repeats (optionally scaled per strategy)."""
    scale = scale or {}
    return {sd: {k: v[sd - 1] * scale.get(k[3], 1.0) for k, v in times.items()} for sd in (1, 2, 3)}


def test_claims_are_about_the_proposed_systems_where_the_machine_separates_them(times, claims):
    assert len(times) == 64 and all(len(v) == 3 for v in times.values())
    kinds = {c.kind for c in claims}
    assert kinds == {"pair", "mean", "step"}
    for c in claims:
        strategies = {k[3] for k in c.fast + c.slow}
        assert strategies & set(kt.PROPOSED), c.text
        # Every repeat shows the claimed direction by more than the machine's noise threshold.
        for i in range(3):
            q = statistics.geometric_mean(times[s][i] / times[f][i] for f, s in zip(c.fast, c.slow))
            assert q > 1 + 0.05 - 1e-12, c.text
        # Its number, where it has one, is one every repeat shows within the magnitude band.
        if c.speedup is not None:
            assert c.speedup > 1.05
            for i in range(3):
                q = statistics.geometric_mean(times[s][i] / times[f][i] for f, s in zip(c.fast, c.slow))
                assert abs((q - 1) / (c.speedup - 1) - 1) <= common.RATIO_BAND + 1e-12, c.text
    assert kt.RATIO_BAND == common.RATIO_BAND
    numbered = [c for c in claims if c.speedup is not None]
    assert numbered, "no claim with a number"
    texts = {c.text for c in claims}
    assert len(texts) == len(claims)


def test_planted_claims_are_the_true_ones_tripled_or_reversed(claims):
    planted = kt.planted_claims(claims)
    numbered = [c for c in claims if c.speedup is not None]
    assert len(planted) == len(numbered) + len(claims)
    c = numbered[0]
    tripled = planted[0]
    rev = planted[len(numbered) + claims.index(c)]
    assert tripled.planted == "tripled" and abs((tripled.speedup - 1) - 3 * (c.speedup - 1)) < 1e-12
    assert rev.planted == "reversed" and rev.fast == c.slow and rev.slow == c.fast and rev.speedup == c.speedup


def test_the_machines_own_repeats_as_the_harness_meet_every_target(times, claims):
    """The method's known answer: judged against the replay's own three repeats, every true claim holds and every
    planted one is refused. A pipeline that failed this would fail for its rule, not for the model."""
    h = as_harness(times)
    s = kt.score([kt.judge(c, h) for c in claims], [kt.judge(c, h) for c in kt.planted_claims(claims)])
    assert s["met"], s
    assert s["sensitivity"] == 1.0 and s["specificity"] == 1.0


def test_a_harness_that_flatters_the_proposed_systems_is_caught(times, claims):
    """The proposed systems 1.6x faster than measured (the baselines exact): true claims against baselines are
    overstated beyond their band or reversed, and the test says not met."""
    flatter = as_harness(times, {p: 1 / 1.6 for p in kt.PROPOSED})
    s = kt.score([kt.judge(c, flatter) for c in claims], [kt.judge(c, flatter) for c in kt.planted_claims(claims)])
    assert not s["met"] and s["true_not_reproduced"] > 0
    # The report lists each claim it gets wrong with the machine's repeats beside the harness's seeds; against
    # the machine's own repeats it lists none.
    planted = kt.planted_claims(claims)
    wrong = kt.failures(claims + planted, [kt.judge(c, flatter) for c in claims + planted], times, flatter)
    assert len(wrong) == s["true_not_reproduced"] + s["planted"] - s["planted_not_reproduced"] > 0
    assert all("the machine's repeats" in w and "the harness's seeds" in w for w in wrong)
    exact = as_harness(times)
    assert kt.failures(claims + planted, [kt.judge(c, exact) for c in claims + planted], times, exact) == []
    # Swapping the proposed systems' times with each other's reverses their mutual claims: refused.
    swap = {sd: dict(t) for sd, t in as_harness(times).items()}
    for t in swap.values():
        for k in list(t):
            if k[3] == "hybrimoe":
                other = (*k[:3], "smoe")
                t[k], t[other] = t[other], t[k]
    hs = [c for c in claims if {k[3] for k in c.fast + c.slow} == {"hybrimoe", "smoe"}]
    assert hs and all(kt.judge(c, swap).verdict == common.NOT_REPRODUCED for c in hs)


def test_the_profiles_targets_are_the_replays_baseline_times(times, capsys):
    assert kt.check_profile(times) == 0
    text = kt.calibration_text(times)
    assert text.count("[[calibration]]") == len(kt.BASELINES) * 8
    assert not any(f'system = "{p}"' in text for p in kt.PROPOSED)  # never a proposed system's number
    import testbeds
    assert kt.PROFILE in testbeds.NOT_PAPER_TESTBEDS  # the report's paper testbeds leave it out


def test_the_docs_counts_are_the_claims_the_script_writes(claims):
    """docs/KNOWN_TRUTH.md's claim counts are computed here, not typed once and left."""
    import re
    doc = (kt.ROOT / "docs" / "KNOWN_TRUTH.md").read_text()
    for kind in ("pair", "mean", "step"):
        m = re.search(rf"^\| {kind} \|.*\| (\d+) \|$", doc, re.M)
        assert m and int(m.group(1)) == sum(c.kind == kind for c in claims), kind
    m = re.search(r"(\d+) of the (\d+) do\.", doc)
    assert m and (int(m.group(1)), int(m.group(2))) == (sum(c.speedup is not None for c in claims), len(claims))
    numbered = sum(c.speedup is not None for c in claims)
    m = re.search(r"\(X -> 1 \+ 3 \(X - 1\): (\d+)\), and every claim reversed \(the slower side said to\s+be faster: (\d+)\)",
                  doc)
    assert m and (int(m.group(1)), int(m.group(2))) == (numbered, len(claims))


def test_the_harness_is_timed_to_the_last_steps_end_as_the_replay_was(tmp_path):
    """A copy nothing waits for that ends after the last step (DALI's window swaps) is in total_time_s but not in
    the replay's time: the harness's time is prefill_time_s + decode_time_s."""
    import json

    for batch, suite in kt.SUITES.items():
        d = tmp_path / suite / "20261207T000000Z-x"
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps({"status": "complete", "suite": {"name": suite},
                                                     "cases": [{"case_id": "a"}]}))
        row = {"suite": suite, "run_id": d.name, "case_id": "a", "case_index": 0, "repetition": 0, "status": "ok",
               "backend": "sim", "strategy": "dali", "model": "qwen3-30b-a3b", "workload.batch_size": batch,
               "strategy.residency.cache_ratio": 0.25, "workload.seed": 1, "ttft_mean_ms": 40.0,
               "tbt_mean_ms": 10.0, "prefill_tokens_per_s": 800.0, "decode_tokens_per_s": 100.0,
               "prefill_time_s": 0.04, "decode_time_s": 0.06, "total_time_s": 0.125}
        (d / "runs.jsonl").write_text(json.dumps(row) + "\n")
    got = kt.harness_times(str(tmp_path))
    for batch in kt.SUITES:
        assert got[1][("qwen3-30b-a3b", batch, 0.25, "dali")] == pytest.approx(0.1e6)


def test_the_docs_state_the_committed_lab_notes_score():
    """README, STATUS and KNOWN_TRUTH say the score known_truth.py wrote into the latest lab note's index.md."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parent.parent
    notes = sorted((root / "docs" / "measurements").glob("known-truth-*/index.md"))
    head = notes[-1].read_text().splitlines()[2]
    m = re.match(r"Sensitivity (\d+) of (\d+) true claims reproduced or direction only \(([\d.]+)%; target 90%\), "
                 r"(\d+) true claim\(s\) not reproduced \(target 0\); specificity (\d+) of (\d+) planted false claims "
                 r"not reproduced \(([\d.]+)%; target 100%\)", head)
    assert m, head
    sens, n, sens_pct, refused, spec, planted, spec_pct = m.groups()
    readme = " ".join((root / "README.md").read_text().split())
    assert f"sensitivity {sens_pct}%, {refused} true claims refused, specificity {spec_pct}%" in readme
    status = (root / "docs" / "STATUS.md").read_text()
    assert (f"sensitivity {sens} of {n} ({sens_pct}%, target 90%), {refused} true claims not reproduced (target 0), "
            f"specificity {spec} of {planted} ({spec_pct}%, target 100%)") in status
    doc = (root / "docs" / "KNOWN_TRUTH.md").read_text()
    assert f"| {sens} / {n} ({sens_pct}%) | {refused} | {spec} / {planted} ({spec_pct}%) |" in doc
