# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""scripts/testbed-region: the design of its points, the solve on the targets, what is in the region, and how a
claim's outcome and cause across the region are read. The harness is replaced by a closed-form stand-in (no suite
runs): these test the tool's logic, docs/TESTBEDS.md's region tables test the tool on the papers' testbeds."""

from __future__ import annotations

import json
import math
import os
import pathlib
import subprocess
import sys

import pytest

import inputs

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUN_SUITE = os.environ.get("MOEBENCH_RUN_SUITE", str(ROOT / "build" / "bin" / "run_suite"))


REG = inputs.script_module(ROOT / "scripts" / "testbed-region")

PROFILE = """name = "toy"
[cpu]
mem_bw_gbps = 100.0           # a comment that stays
[link]
h2d_gbps = 25.0
latency_us = 10.0
[[stack]]
name = "kt"
layer_overhead_us = 1000
[[cpu_kernel]]
family = "kt"
compute_gflops = 500
[[cpu_kernel]]
family = "ggml"
compute_gflops = 500
"""


def unknowns(*ds):
    return {d["key"]: REG.Unknown(d, "test") for d in ds}


def test_the_design_is_the_center_each_unknown_at_both_ends_and_a_seeded_latin_hypercube():
    us = unknowns({"key": "link.h2d_gbps", "low": 10, "high": 40},
                  {"key": "cpu.mem_bw_gbps", "low": 60, "high": 120, "scale": "linear"})
    sampled = list(us.values())
    pts = REG.design(sampled, {"link.h2d_gbps": 25.0, "cpu.mem_bw_gbps": 100.0}, 5, seed=1)
    ids = [p[0] for p in pts]
    assert ids[:5] == ["center", "link.h2d_gbps-low", "link.h2d_gbps-high", "cpu.mem_bw_gbps-low",
                       "cpu.mem_bw_gbps-high"]
    assert pts[1][2] == {"link.h2d_gbps": 10, "cpu.mem_bw_gbps": 100.0}  # one at a time: the others at the center
    lhs = [p[2] for p in pts if p[1] == "Latin hypercube"]
    assert len(lhs) == 5
    for u in sampled:  # one point in each fifth of every range
        strata = sorted(int(5 * u.pos(v[u.key])) for v in lhs)
        assert strata == [0, 1, 2, 3, 4]
    assert REG.design(sampled, {"link.h2d_gbps": 25.0, "cpu.mem_bw_gbps": 100.0}, 5, seed=1) == pts
    assert REG.design(sampled, {"link.h2d_gbps": 25.0, "cpu.mem_bw_gbps": 100.0}, 5, seed=2) != pts


def test_a_range_in_log_scale_spreads_by_factors():
    (u,) = unknowns({"key": "link.latency_us", "low": 3, "high": 30}).values()
    assert u.at(0.5) == pytest.approx(math.sqrt(90))
    assert u.pos(u.at(0.3)) == pytest.approx(0.3)
    with pytest.raises(SystemExit):
        REG.Unknown({"key": "x", "low": 5, "high": 5}, "test")


def test_apply_sets_sections_entries_and_tied_keys_and_nothing_else():
    us = unknowns({"key": "link.h2d_gbps", "low": 10, "high": 40},
                  {"key": "cpu_kernel.kt.compute_gflops", "role": "solved", "low": 100, "high": 1000,
                   "tied": ["cpu_kernel.ggml.compute_gflops"]})
    t = REG.apply(PROFILE, us, {"link.h2d_gbps": 12.5, "cpu_kernel.kt.compute_gflops": 640})
    d = tomllib.loads(t)
    assert d["link"]["h2d_gbps"] == 12.5 and d["link"]["latency_us"] == 10.0
    assert [k["compute_gflops"] for k in d["cpu_kernel"]] == [640, 640]
    assert "# a comment that stays" in t and d["cpu"]["mem_bw_gbps"] == 100.0


class FakeHarness:
    """Targets of a toy testbed: a step time of layer overhead plus bytes over bandwidth, on two 'models'."""

    def __init__(self):
        self.batches = []  # how many profiles each run of the suites evaluated

    def __call__(self, name, text, targets, run_suite):
        d = tomllib.loads(text)
        host, bw = d["stack"][0]["layer_overhead_us"], d["link"]["h2d_gbps"]
        return [32 * host / 1e6 + 5.0 / bw, 48 * host / 1e6 + 2.0 / bw]

    def many(self, name, texts, targets, run_suite, files=None):
        assert files is None or not any(files)  # no strategy setting moves on the toy testbed
        self.batches.append(len(texts))
        return [self(name, t, targets, run_suite) for t in texts]


def toy_fit(monkeypatch):
    """A Fitter on the toy testbed (the link sampled, the host time solved), its Jacobian taken at the center;
    with its targets, unknowns, center and the stand-in harness."""
    us = unknowns({"key": "link.h2d_gbps", "low": 10, "high": 40},
                  {"key": "stack.kt.layer_overhead_us", "role": "solved", "low": 100, "high": 5000})
    harness = FakeHarness()
    monkeypatch.setattr(REG.fit, "run_suites_many", harness.many)
    targets = [{"id": "a", "value": 0.232, "tolerance": 0.25}, {"id": "b", "value": 0.128, "tolerance": 0.25}]
    f = REG.Fitter("toy", PROFILE, us, targets, "run_suite")
    start = {"link.h2d_gbps": 25.0, "stack.kt.layer_overhead_us": 1000.0}
    f.jacobian(start, f.evaluate(start))
    return f, targets, us, start, harness


def test_the_solved_key_is_fitted_at_each_point_and_the_region_keeps_what_meets_every_target(monkeypatch):
    f, targets, us, start, harness = toy_fit(monkeypatch)
    v, h = f.solve(dict(start, **{"link.h2d_gbps": 40.0}))
    # At 40 GB/s: the least-squares host time (log ratios), found by a scan, and the solve land together.

    def loss(host):
        hh = harness("toy", REG.apply(PROFILE, us, {"link.h2d_gbps": 40.0, "stack.kt.layer_overhead_us": host}),
                     targets, "")
        return sum(math.log(x / t["value"]) ** 2 for x, t in zip(hh, targets))
    best = min(range(100, 5000, 5), key=loss)
    assert v["stack.kt.layer_overhead_us"] == pytest.approx(best, rel=0.1)
    assert REG.in_region(v, h, targets, us) == ""
    v10, h10 = f.solve(dict(start, **{"link.h2d_gbps": 10.0}))
    # At 10 GB/s the copies alone are 0.5 s of target a's 0.232 s: no host time meets it.
    why = REG.in_region(v10, h10, targets, us)
    assert "a at" in why
    assert f.evaluations >= 4


def test_points_solved_together_take_the_steps_each_takes_alone_in_fewer_runs(monkeypatch):
    f, _, _, start, harness = toy_fit(monkeypatch)
    starts = [dict(start, **{"link.h2d_gbps": bw}) for bw in (10.0, 18.0, 33.0, 40.0)]
    alone = [f.solve(s) for s in starts]
    n_alone = f.evaluations
    harness.batches.clear()
    together = f.solve_many(starts)
    assert together == alone
    assert f.evaluations - n_alone == n_alone - 2  # the same trials (less the center's and the Jacobian's)
    assert len(harness.batches) < f.evaluations - n_alone and max(harness.batches) == len(starts)


def test_a_solved_key_outside_its_range_is_outside_the_region():
    us = unknowns({"key": "stack.kt.layer_overhead_us", "role": "solved", "low": 100, "high": 500})
    targets = [{"id": "a", "value": 1.0, "tolerance": 0.15}]
    assert REG.in_region({"stack.kt.layer_overhead_us": 300}, [1.1], targets, us) == ""
    assert "outside [100, 500]" in REG.in_region({"stack.kt.layer_overhead_us": 900}, [1.0], targets, us)
    assert "a at 1.200" in REG.in_region({"stack.kt.layer_overhead_us": 300}, [1.2], targets, us)


def test_crossing_finds_the_value_that_gives_the_goal_inside_or_beyond_the_range():
    (u,) = unknowns({"key": "gpu.kernel_launch_us", "low": 5, "high": 40}).values()
    # A quantity linear in log(value): -1 at 5 us, 0 at 20 us, 0.5 at 40 us.
    q = {5: -1.0, 20: 0.0, 40: 0.5}
    pts = [(v, q[v]) for v in (5, 20, 40)]
    assert REG.crossing(u, pts, 0.0) == pytest.approx(20)
    assert REG.crossing(u, pts, 1.0) > 40  # extrapolated past the high end
    assert REG.crossing(u, [(5, 0.3), (20, 0.3), (40, 0.3)], 0.0) is None


def check(name, verdict, direction, magnitude=(), kind="direction", tol=0.02, role="claim"):
    return {"name": name, "verdict": verdict, "role": role, "kind": kind, "tol": tol,
            "direction": list(direction), "magnitude": list(magnitude)}


def test_a_claim_holds_across_the_region_or_depends_on_the_unknown_that_flips_it():
    us = unknowns({"key": "link.h2d_gbps", "low": 14, "high": 27.4},
                  {"key": "gpu.kernel_launch_us", "low": 5, "high": 40})
    region = {"committed": {"link.h2d_gbps": 25.0, "gpu.kernel_launch_us": 10.0}}

    def entry(fig, verdict, c):
        return {"paper": "P", "figure": fig, "judged_in": "mechanism", "verdict": verdict, "headline": "",
                "checks": [c]}
    # Fig. A: reproduced everywhere. Fig. B: its speedup's effect (magnitude) grows with the launch cost and reaches
    # the paper's (0) only past the range; the verdict flips to "not reproduced" at the slow-copy end.
    judged = {}
    for pid, mag, v in (("center", -0.5, "direction only"), ("link.h2d_gbps-low", -0.6, "not reproduced"),
                        ("link.h2d_gbps-high", -0.5, "direction only"),
                        ("gpu.kernel_launch_us-low", -0.7, "direction only"),
                        ("gpu.kernel_launch_us-high", -0.2, "direction only")):
        judged[pid] = [entry("A", "reproduced", check("a", "reproduced", [0.1] * 3, [0.0] * 3)),
                       entry("B", v, check("b", v, [0.05] * 3, [mag] * 3))]
    claims = {c["figure"]: c for c in REG.aggregate(region, judged, us)}
    assert claims["A"]["outcome"] == "holds across the region: reproduced"
    assert claims["B"]["outcome"] == "depends on the unknowns"
    assert [f["key"] for f in claims["B"]["flips"]] == ["link.h2d_gbps"]
    assert claims["B"]["flips"][0]["low"] == [14, "not reproduced"]
    assert claims["A"]["joint"] == {} and claims["B"]["joint"] == {}
    # A hypercube point (every unknown moved at once) that differs where no one-at-a-time end does.
    judged["sample-1"] = [entry("A", "inconclusive", check("a", "inconclusive", [0.0] * 3, [0.0] * 3))]
    joint = {c["figure"]: c for c in REG.aggregate(region, judged, us)}["A"]
    assert joint["outcome"] == "depends on the unknowns" and joint["joint"] == {"sample-1": "inconclusive"}
    del judged["sample-1"]
    cause = claims["B"]["checks"][0]["cause"]
    top = cause["by_unknown"][0]
    assert top["key"] == "gpu.kernel_launch_us" and top["moves"] == pytest.approx(0.5)
    assert top["needs"] > 40 and not top["inside"]
    md = REG.markdown({"profile": "toy", "points": [], "evaluations": 0, "seconds": 0, "seed": 1,
                       "unknowns": [], "targets": [], "extent": {}, "committed": {}},
                      {"points": list(judged), "claims": list(claims.values())})
    assert "| P | B | mechanism | direction only | depends on the unknowns |" in md
    assert "(outside the range)" in md


def test_a_flip_is_placed_where_the_seeds_effects_cross_their_outcome_boundary():
    (u,) = unknowns({"key": "link.h2d_gbps", "low": 14, "high": 27.4, "scale": "linear"}).values()
    # Direction effects (tol 0.02) of three seeds: 0.10 at the center (25 GB/s), -0.10 at the low end (14 GB/s):
    # linear in the value, each crosses +0.02 at 25 - 11 * 0.08 / 0.2 = 20.6 and -0.02 at 25 - 11 * 0.12 / 0.2 = 18.4.
    c0 = check("b", "reproduced", [0.10] * 3)
    c1 = check("b", "not reproduced", [-0.10] * 3)
    lo, hi = REG.flip_between(u, 25.0, c0, 14.0, c1)
    assert lo == pytest.approx(18.4) and hi == pytest.approx(20.6)
    # Seeds that cross at different places widen the span; a verdict that does not change has no flip.
    c1b = check("b", "not reproduced", [-0.10, -0.10, -0.30])
    lo2, hi2 = REG.flip_between(u, 25.0, c0, 14.0, c1b)
    assert lo2 == pytest.approx(lo) and hi2 == pytest.approx(25 - 11 * 0.08 / 0.4)  # 22.8: the steeper seed
    assert REG.flip_between(u, 25.0, c0, 27.4, check("b", "reproduced", [0.2] * 3)) is None
    # A magnitude (band +-0.25 of the paper's effect) that leaves the band: the magnitude's crossing counts.
    m0 = dict(check("m", "reproduced", [0.1] * 3, [0.0] * 3), magnitude_tol=0.25)
    m1 = dict(check("m", "direction only", [0.1] * 3, [-0.5] * 3), magnitude_tol=0.25)
    assert REG.flip_between(u, 25.0, m0, 14.0, m1) == pytest.approx([19.5, 19.5])
    # A bound ("at most +tol") counts its +tol edge only: -0.10 -> +0.10 crosses -0.02 too, which changes nothing.
    b0 = check("n", "reproduced", [-0.10] * 3, kind="at_most")
    b1 = check("n", "not reproduced", [0.10] * 3, kind="at_most")
    assert REG.flip_between(u, 25.0, b0, 14.0, b1) == pytest.approx([25 - 11 * 0.12 / 0.2] * 2)  # 18.4
    assert REG.flip_span(u, 25.0, 14.0, {"b": c0, "m": m0}, {"b": c1, "m": m1}, ["b", "m"]) == \
        pytest.approx([18.4, 20.6])


@pytest.mark.parametrize("name", ["dali-rtx3090", "hybrimoe-a6000", "smoe-rtx4090", "ktransformers-a100",
                                  "ktransformers-rtx4080", "moe-lightning-t4"])
def test_every_committed_unknown_names_a_key_of_its_profile_and_holds_its_committed_value(name):
    path = ROOT / "configs" / "hardware" / f"{name}.toml"
    text = path.read_text()
    prof = tomllib.loads(text)
    fits = {k for t in prof.get("calibration", []) for k in t.get("fits", [])}
    assert prof["region_suites"] and all((ROOT / s).is_file() for s in prof["region_suites"])
    REG.check_suites_run_on(name, prof["region_suites"], RUN_SUITE)  # each suite has cases on this profile
    for d in prof["unknown"]:
        u = REG.Unknown(d, name)
        v = REG.fit.get_value(text, u.key)
        assert u.low <= v <= u.high, f"{name}: {u.key} = {v} outside [{u.low}, {u.high}]"
        assert u.source
        if u.role == "solved":
            assert u.key in fits
        for t in u.tied:
            assert REG.fit.get_value(text, t) == v


def test_a_region_suite_that_does_not_run_on_the_profile_is_refused(capsys):
    # peers-kt-dynamic runs on smoe-rtx4090: judged in the A6000's region its claim could not move (it was, until
    # 2026-11-28, and "held across the region").
    with pytest.raises(SystemExit):
        REG.check_suites_run_on("hybrimoe-a6000", ["suites/peers-kt-dynamic.toml"], RUN_SUITE)
    err = capsys.readouterr().err
    assert ("configs/hardware/hybrimoe-a6000.toml: key 'region_suites': expected suites with cases on hybrimoe-a6000; "
            "found suites/peers-kt-dynamic.toml, whose cases run on smoe-rtx4090") in err


def test_a_proposed_systems_published_number_is_placed_against_its_range_over_the_region():
    prof = {"feasibility": [{"id": "t", "system": "S", "quantity": "decode", "unit": "s", "value": 0.11},
                            {"id": "u", "system": "S", "quantity": "prefill", "unit": "s", "value": 0.5}]}
    v = {x["id"]: x for x in REG.validation(prof, {"center": {"t": 0.024, "u": 0.4},
                                                    "link.h2d_gbps-low": {"t": 0.03, "u": 0.6}})}
    assert (v["t"]["low"], v["t"]["high"], v["t"]["published_is"]) == (0.024, 0.03, "above every point")
    assert v["u"]["published_is"] == "inside"


def test_a_nearly_flat_quantity_needs_no_value_rather_than_an_overflow():
    (u,) = unknowns({"key": "link.latency_us", "low": 3, "high": 30}).values()
    assert REG.crossing(u, [(3, -0.5), (10, -0.5 + 1e-12), (30, -0.5 + 2e-12)], 0.0) is None
    (lin,) = unknowns({"key": "cpu.mem_bw_gbps", "low": 60, "high": 120, "scale": "linear"}).values()
    assert REG.crossing(lin, [(60, 1.0), (100, 1.1), (120, 1.15)], 0.0) is None  # would need a negative bandwidth
    assert REG.crossing(lin, [(60, 1.0), (100, 0.5), (120, 0.25)], 0.0) == pytest.approx(140)
    assert REG.crossing(lin, [(60, 1.0), (100, 0.9), (120, 0.85)], 0.0) is None  # 460: past 3 range widths


def test_the_reports_region_section_shows_each_claims_outcome_and_cause(tmp_path):
    import json
    import sys
    import regions
    assert regions.markdown(str(tmp_path)).startswith("Not run: `make region`")
    cause = {"quantity": "magnitude", "goal": 0.0, "by_unknown": [
        {"key": "link.h2d_gbps", "low": 2.2, "center": 3.9, "high": 4.2, "moves": 2.0, "needs": 6.5, "inside": False}]}
    flat = {"quantity": "magnitude", "goal": 0.0, "by_unknown": [
        {"key": "link.h2d_gbps", "low": 0.8, "center": 0.8, "high": 0.8, "moves": 0.0, "needs": None, "inside": False}]}
    claim = {"paper": "HybriMoE", "figure": "Fig. 7", "judged_in": "mechanism", "center": "not reproduced",
             "outcome": "holds across the region: not reproduced", "flips": [],
             "checks": [{"name": "prefill gain", "role": "claim", "verdicts": {"center": "not reproduced"},
                         "holds": True, "cause": cause},
                        {"name": "update gain", "role": "claim", "verdicts": {"center": "direction only"},
                         "holds": True, "cause": flat},
                        {"name": "met", "role": "claim", "verdicts": {"center": "reproduced"}, "holds": True,
                         "cause": {}}]}
    d = tmp_path / "region" / "toy"
    d.mkdir(parents=True)
    (d / "region.json").write_text(json.dumps({"profile": "toy", "points": [{"in_region": True}],
                                               "claims": {"points": ["center"], "claims": [claim]}}))
    md = regions.markdown(str(tmp_path))
    assert "| HybriMoE | Fig. 7 | mechanism | not reproduced | holds across the region: not reproduced | - |" in md
    assert "prefill gain: not reproduced; moves most with `link.h2d_gbps` (2.2 to 4.2 over its range); the paper's " \
           "needs 6.5 (outside the range)" in md
    assert "update gain: direction only; no testbed unknown moves it" in md and "met:" not in md


def test_slurm_submits_each_points_suites_with_its_profile_and_runs_nothing(tmp_path):
    # slurm-sweep --dry-run prints the sbatch commands: each names the point's results root and its profile folder.
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT), MOEBENCH_RUN_SUITE=RUN_SUITE, MOEBENCH_CACHE=str(tmp_path / "c"))
    cmd = [sys.executable, str(ROOT / "scripts" / "testbed-region"), "ktransformers-rtx4080", "--out", str(tmp_path),
           "--samples", "0", "--verdicts", "--unknowns", "link.h2d_gbps,gpu.hbm_efficiency", "-j", "2"]
    r = subprocess.run(cmd + ["--slurm", "0"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 2 and "--slurm: expected --verdicts and a shard count of at least 1, found 0" in r.stderr
    r = subprocess.run(cmd + ["--slurm", "3", "--slurm-arg=--dry-run"], capture_output=True, text=True, env=env,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    base = tmp_path / "ktransformers-rtx4080"
    for pid in ("center", "link.h2d_gbps-low"):
        assert f"MOEBENCH_CONFIG_PATH={base / pid / 'configs'}" in r.stdout
        assert f"MOEBENCH_RESULTS={base / pid / 'results'}" in r.stdout
    assert "--array=0-2" in r.stdout and "--cpus-per-task=2" in r.stdout
    # gpu.hbm_efficiency's high end is the committed 1.0: that point is the center, submitted once (it once
    # stopped the submission with a KeyError).
    assert "submitted 0 Slurm job(s) for 5 point(s)" in r.stdout  # a dry run submits nothing
    assert r.stdout.count("submitted suite 'ktransformers-fig12'") == 0  # (dry run: the sbatch lines instead)
    assert r.stdout.count("--array=0-2") == 4
    assert not any(base.glob("*/results/*/*/runs.jsonl"))  # and nothing ran here
    assert json.loads((base / "region.json").read_text())["claims"] is None


def test_a_points_results_stay_when_only_the_regions_own_entries_change(tmp_path):
    # region_suites and [[unknown]] are not part of a case's identity: a new region suite must not wipe the
    # point's finished runs (it did on 2026-11-28, and every SMoE point ran again); a changed value must.
    text = 'region_suites = ["suites/a.toml"]\n' + PROFILE
    REG.write_point(tmp_path, "toy", text)
    (tmp_path / "results" / "s").mkdir(parents=True)
    REG.write_point(tmp_path, "toy", text.replace('["suites/a.toml"]', '["suites/a.toml", "suites/b.toml"]')
                    + '[[unknown]]\nkey = "link.h2d_gbps"\nlow = 1.0\nhigh = 30.0\nsource = "s"\n')
    assert (tmp_path / "results" / "s").is_dir()
    REG.write_point(tmp_path, "toy", text.replace("h2d_gbps = 25.0", "h2d_gbps = 14.0"))
    assert not (tmp_path / "results").exists()


def test_the_saved_region_is_reused_when_only_the_judged_suites_change():
    a = tomllib.loads('region_suites = ["suites/a.toml"]\n' + PROFILE)
    b = tomllib.loads('region_suites = ["suites/a.toml", "suites/b.toml"]\n' + PROFILE)
    c = tomllib.loads('region_suites = ["suites/a.toml"]\n' + PROFILE.replace("latency_us = 10.0", "latency_us = 3.0"))
    assert REG.region_key(a) == REG.region_key(b) != REG.region_key(c)


def test_each_suite_runs_once_over_the_points_that_lack_it(tmp_path, monkeypatch):
    # One run_suite --points process per suite (a workload built for one point serves the others), over the points
    # without a complete run of that suite; a suite complete everywhere is not run.
    import common
    points = [tmp_path / p for p in ("center", "a-low", "a-high")]
    for p in points:
        (p / "configs").mkdir(parents=True)
    head = REG.head_commit()
    done = points[1] / "results" / "s1" / "20260101T000000Z-x"
    done.mkdir(parents=True)
    (done / "manifest.json").write_text(json.dumps({"status": "complete", "provenance": {
        "git_commit": head, "git_dirty": False}}))
    for p in points:
        d = p / "results" / "s2" / "20260101T000000Z-x"
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps({"status": "complete", "provenance": {}}))
    calls = []

    def fake_run(cmd, **kw):
        if cmd[0] == "git":
            return subprocess.CompletedProcess(cmd, 0, head + "\n", "")
        calls.append((cmd, kw["env"]))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(REG.subprocess, "run", fake_run)
    monkeypatch.setenv("MOEBENCH_CONFIG_PATH", "/elsewhere")
    spent = REG.run_points(points, ["suites/s1.toml", "suites/s2.toml"], ["s1", "s2"], "rs", 2, common, False)
    # The judging comparison's cases only: the mechanism what-if judges nothing in a region.
    assert [c[0] for c in calls] == [["rs", "-q", "-j", "2", "--filter", "run.comparison.mode=as-published",
                                      "suites/s1.toml", "--points", str(points[0]), str(points[2])]]
    assert "MOEBENCH_CONFIG_PATH" not in calls[0][1] and int(calls[0][1]["MOEBENCH_ROUTING_CACHE_MIB"]) >= 2048
    assert list(spent) == ["s1"]
