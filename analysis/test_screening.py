# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""analysis/screening.py and scripts/testbed-region --screen: which numbers a screen varies and why, and how its
report reads. No suite runs here (docs/measurements/screen-2026-12-07 is the screen of the papers' testbeds)."""

from __future__ import annotations

import pathlib

import pytest

import inputs
import screening

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore

ROOT = pathlib.Path(__file__).resolve().parents[1]
REG = inputs.script_module(ROOT / "scripts" / "testbed-region")

PROFILE = """name = "toy"
[cpu]
cores = 10                    # [paper]
threads = 10                  # [assumption]
mem_bw_gbps = 90.0            # [assumption] an unknown below
peak_gflops_fp32 = 1216.0     # [spec-derived]
gemm_efficiency = 0.6         # [assumption]
first_task_warmup_us = 0.0    # [assumption]
[link]
d2h_gbps = 25.0
[[cpu_kernel]]
family = "kt"
dtype = "int4"
compute_gflops = 737.1
evidence = "fitted"
[[stack]]
name = "pytorch"
launches_per_layer = 115
launch_us = 16.0              # [assumption] the line's tag beats the entry's evidence
evidence = "paper"
[[contention]]
term = "cpu-under-copy"
factor = 1.17
[[unknown]]
key = "cpu.mem_bw_gbps"
low = 60
high = 110
"""


def by_key(text=PROFILE, unknown=("cpu.mem_bw_gbps",)):
    return {c.key: c for c in screening.candidates(text, set(unknown))}


def test_facts_unknowns_structure_and_zeros_are_not_screened_and_each_says_why():
    c = by_key()
    assert c["cpu.cores"].why == "what the machine is"
    assert c["cpu.peak_gflops_fp32"].why == "a fact ([spec-derived])"
    assert c["cpu.mem_bw_gbps"].why == "an [[unknown]] of the region"
    assert c["cpu.first_task_warmup_us"].why.startswith("zero")
    assert c["stack.pytorch.launches_per_layer"].why == "a fact ([paper])"  # the entry's evidence
    assert not any(x.screened for x in c.values() if x.why)
    assert {k for k, x in c.items() if x.screened} == {
        "cpu.threads", "cpu.gemm_efficiency", "link.d2h_gbps", "cpu_kernel.kt.int4.compute_gflops",
        "stack.pytorch.launch_us", "contention.cpu-under-copy.factor"}


def test_the_screening_range_is_half_to_twice_within_what_the_key_can_be():
    c = by_key()
    assert (c["link.d2h_gbps"].low, c["link.d2h_gbps"].high) == (12.5, 50.0)
    assert (c["cpu.gemm_efficiency"].low, c["cpu.gemm_efficiency"].high) == (0.3, 1.0)  # an efficiency <= 1
    assert (c["cpu.threads"].low, c["cpu.threads"].high) == (5.0, 20.0) and c["cpu.threads"].integer
    assert c["contention.cpu-under-copy.factor"].low == 1.0  # a slowdown: from none
    assert c["contention.cpu-under-copy.factor"].high == pytest.approx(1.34)
    assert c["stack.pytorch.launch_us"].source == "assumption"
    assert c["link.d2h_gbps"].source == "" and c["cpu_kernel.kt.int4.compute_gflops"].source == "fitted"
    assert screening.screen_range("stack.x.launches_per_layer", 115, True) == (58.0, 230.0)  # whole numbers


def test_a_kernel_entry_named_without_its_dtype_is_the_same_unknown_and_a_tied_key_moves_with_its_unknown():
    c = by_key(unknown=("cpu.mem_bw_gbps", "cpu_kernel.kt.compute_gflops"))
    assert c["cpu_kernel.kt.int4.compute_gflops"].why == "an [[unknown]] of the region"
    c = {x.key: x for x in screening.candidates(PROFILE, {"cpu.mem_bw_gbps"}, {"link.d2h_gbps"})}
    assert not c["link.d2h_gbps"].screened and c["link.d2h_gbps"].why == "tied to an [[unknown]] of the region"


@pytest.mark.parametrize("name", ["dali-rtx3090", "hybrimoe-a6000", "smoe-rtx4090", "ktransformers-a100",
                                  "ktransformers-rtx4080", "moe-lightning-t4"])
def test_every_screened_key_of_a_region_profile_is_a_number_the_tools_can_move(name):
    text = (ROOT / "configs" / "hardware" / f"{name}.toml").read_text()
    unknowns = {d["key"]: REG.Unknown(d, name) for d in tomllib.loads(text)["unknown"]}
    screened, found = REG.screened_unknowns(text, unknowns, name)
    assert screened and all(u.role == "screened" and u.low < u.high for u in screened.values())
    for k, u in screened.items():
        v = REG.fit.get_value(text, k)
        assert v == next(c.value for c in found if c.key == k)
        moved = REG.apply(text, screened, {k: u.high})
        assert REG.fit.get_value(moved, k) == pytest.approx(u.high, rel=1e-3)
        tomllib.loads(moved)  # still a profile
    assert not set(screened) & (set(unknowns) | {t for u in unknowns.values() for t in u.tied})
    assert REG.varied(dict(unknowns, **screened)) == list(screened.values())
    assert REG.varied(unknowns) == [u for u in unknowns.values() if u.role == "sampled"]


def test_the_screens_report_names_the_keys_that_move_a_verdict_and_the_ends_the_evidence_excludes():
    region = {"profile": "toy", "screen": True, "committed": {"link.d2h_gbps": 25.0, "cpu.threads": 10.0},
              "unknowns": [{"key": "link.d2h_gbps", "role": "screened", "low": 12.5, "high": 50.0},
                           {"key": "cpu.threads", "role": "screened", "low": 5.0, "high": 20.0}],
              "points": [{"id": "center", "in_region": True},
                         {"id": "link.d2h_gbps-low", "in_region": True},
                         {"id": "link.d2h_gbps-high", "in_region": True},
                         {"id": "cpu.threads-low", "in_region": False, "why": "t1 at 1.300 of the paper"},
                         {"id": "cpu.threads-high", "in_region": True}],
              "candidates": [{"key": "link.d2h_gbps", "source": "", "screened": True},
                             {"key": "cpu.threads", "source": "assumption", "screened": True},
                             {"key": "cpu.cores", "value": 10.0, "line": 3, "why": "what the machine is",
                              "screened": False}]}
    claims = {"claims": [{"paper": "P", "figure": "Fig. 1", "center": "not reproduced",
                          "verdicts": {"center": "not reproduced", "link.d2h_gbps-low": "direction only",
                                       "link.d2h_gbps-high": "not reproduced", "cpu.threads-high": "not reproduced"}}]}
    text = "\n".join(REG.screen_markdown(region, claims))
    assert "| `link.d2h_gbps` | none stated | 25 | 12.5-50 | in the region | in the region | P Fig. 1: not " \
           "reproduced -> direction only at low (12.5) |" in text
    assert "| `cpu.threads` | assumption | 10 | 5-20 | excluded by the evidence: t1 at 1.300 of the paper | in the " \
           "region | none |" in text
    assert "| `cpu.cores` | 10 | 3 | what the machine is |" in text
    assert "- P Fig. 1: moved by `link.d2h_gbps` of the 2 screened numbers" in text
    claims["claims"][0]["verdicts"]["link.d2h_gbps-low"] = "not reproduced"
    assert "- P Fig. 1: moved by none of the 2 screened numbers" in "\n".join(REG.screen_markdown(region, claims))


def test_a_strategy_setting_is_read_through_its_preset_chain_and_moved_by_a_preset_file_of_the_point(tmp_path):
    settings = REG.setting_unknowns("dali-rtx3090")
    key = "strategy.hybrimoe-dali.prefetcher.prefetch_size"
    u = settings[key]
    assert u.role == "screened" and u.setting == ("hybrimoe-dali", "prefetcher.prefetch_size") and u.source
    assert REG.committed_value("", u) == 0.0  # hybrimoe-dali -> hybrimoe-code's prefetcher
    assert REG.setting_files(settings, {key: 0.0}, {key: 0.0}) == {}  # at the committed value: the tracked preset
    files = REG.setting_files(settings, {key: 4.0}, {key: 0.0})
    body = tomllib.loads(files["strategies/hybrimoe-dali.toml"])
    assert body["preset"] == str(ROOT / "configs" / "strategies" / "hybrimoe-dali.toml")
    assert body["prefetcher"] == {"prefetch_size": 4} and body["name"] == "hybrimoe-dali"
    assert REG.apply("x = 1\n", settings, {key: 4.0}) == "x = 1\n"  # not a key of the profile
    # A point's results go when its presets change, and a preset no longer moved is removed.
    text = (ROOT / "configs" / "hardware" / "dali-rtx3090.toml").read_text()
    REG.write_point(tmp_path, "dali-rtx3090", text, files)
    (tmp_path / "results").mkdir()
    REG.write_point(tmp_path, "dali-rtx3090", text, files)
    assert (tmp_path / "results").is_dir()
    REG.write_point(tmp_path, "dali-rtx3090", text, {})
    assert not (tmp_path / "results").exists()
    assert not (tmp_path / "configs" / "strategies" / "hybrimoe-dali.toml").exists()


def test_a_setting_that_is_not_in_the_preset_chain_is_refused_by_entry_and_key(capsys):
    with pytest.raises(SystemExit):
        REG.strategy_value("hybrimoe-dali", "prefetcher.nope", "screen_settings.toml: [[setting]] 1")
    err = capsys.readouterr().err
    assert "[[setting]] 1: key 'key': expected 'prefetcher.nope' in the preset chain hybrimoe-dali -> hybrimoe-code " \
           "-> hybrimoe" in err
