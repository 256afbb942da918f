# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""The peer systems' scripts end to end on small real runs: suites/peers.toml and
suites/peers-llamacpp.toml, each on one model, every script's table, figure and verdict."""

import os
import pathlib
import re
import subprocess
import sys

import pandas as pd
import pytest
import common
import peers_all
import peers_common
import peers_fate
import peers_kt_dynamic
import peers_llamacpp
import peers_mixtral_offloading
import peers_moe_infinity
import peers_moe_lightning
import peers_moe_lightning_t4

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(os.environ.get("MOEBENCH_BIN", ROOT / "build" / "bin" / "moebench")).parent


CLAIMED = (common.REPRODUCED, common.DIRECTION_ONLY, common.NOT_REPRODUCED, common.INCONCLUSIVE)


def run_suite(results, *args):
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    r = subprocess.run([str(BIN / "run_suite"), *args, "--results", str(results), "--quiet", "--jobs", "2"],
                       capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    res = tmp_path_factory.mktemp("results")
    # One workload seed of each suite: what these tests read, the tables and the verdict's presence, does not need
    # the other two (the verdict rule's seeds are tested in test_verdicts); a third of the cases.
    run_suite(res, "suites/peers.toml", "--filter", "model.preset=deepseek-v2-lite,workload.seed=1")
    run_suite(res, "suites/peers-llamacpp.toml", "--filter", "model.preset=mixtral-8x7b,workload.seed=1")
    run_suite(res, "suites/peers-kt-dynamic.toml", "--filter", "workload.seed=1")
    run_suite(res, "suites/peers-moe-lightning.toml", "--filter",
              "model.expert_dtype=int4,workload.prompt_len=512,workload.seed=1")
    return res


def test_every_peer_script_writes_its_table_figure_and_verdict(results, tmp_path):
    for mod in (peers_fate, peers_moe_infinity, peers_mixtral_offloading, peers_llamacpp, peers_kt_dynamic,
                peers_moe_lightning):
        s = mod.run(str(results), tmp_path)
        assert s["verdict"] in CLAIMED, mod.__name__
        assert (tmp_path / f"{s['id']}.png").stat().st_size > 5_000
        md = (tmp_path / f"{s['id']}.md").read_text()
        assert "Checks (" in md and ("Paper:" in md or "Source:" in md)
    fate = pd.read_csv(tmp_path / "peers-fate.csv")
    assert set(fate["strategy"]) == {"gpu-ondemand", "moe-infinity", "fate", "fate-uniform", "fate-int2",
                                     "fate-int2-code"}
    # Only the INT2 variants copy reduced, only the code's re-copies.
    by = fate.groupby("strategy")
    assert by["INT2 copies"].max()["fate"] == 0 and by["INT2 copies"].min()["fate-int2"] > 0
    assert by["INT4 re-copies"].max()["fate-int2"] == 0 and by["INT4 re-copies"].min()["fate-int2-code"] > 0
    assert set(fate["model"]) == {"DeepSeek-V2-Lite"} and set(fate["testbed"]) == {"A6000", "RTX 3090"}
    assert "miss rate is the paper's 1%" in (tmp_path / "peers-fate.md").read_text()
    assert "Fate with its INT2 copies decodes faster" in (tmp_path / "peers-fate.md").read_text()
    ll = pd.read_csv(tmp_path / "peers-llamacpp.csv")
    assert sorted(ll["prompt tokens"]) == [32, 64, 128, 256, 512, 1024, 2048]
    # Mixtral: 32 x 8 / 2 = 128 is ik_llama.cpp's threshold, shown beside where the harness's offload starts to pay.
    assert re.search(r"Mixtral-8x7B \d+ \(128\)", (tmp_path / "peers-llamacpp.md").read_text())
    kt = pd.read_csv(tmp_path / "peers-kt-dynamic.csv")
    assert list(kt["GPU expert ratio"]) == [0.1, 0.2, 0.3, 0.5]
    assert kt["paper dynamic / frequency"].iloc[0] == pytest.approx(70.22 / 58.60)
    # MoE-Lightning at 512-token contexts, int4 experts: the whole batch's attention and experts outlast the
    # copies (judged), and 4 micro-batches overlap them.
    ml = pd.read_csv(tmp_path / "peers-moe-lightning.csv")
    fixed = ml[ml["policy"] == "fixed (preset)"]
    assert list(fixed["micro-batches"]) == [1, 4] and set(fixed["judged"]) == {"yes"}
    assert fixed["over the whole batch"].iloc[1] > 1.05
    assert fixed["CPU + GPU ms / step"].iloc[0] > fixed["link ms / step"].iloc[0]
    # The policy search's choice, shown beside it: on the A6000 the int4 experts fit, so it keeps some on the
    # GPU and splits the batch; its own estimate of a step is close to the simulated one (the same formulas).
    hrm = ml[ml["policy"] == "HRM search"]
    assert len(hrm) == 1 and hrm["judged"].iloc[0] == "no: shown"
    assert hrm["micro-batches"].iloc[0] > 1 and hrm["cache ratio"].iloc[0] > 0
    assert hrm["over 4 micro-batches"].iloc[0] > 1.0
    assert 0.9 < hrm["HRM estimate ms / step"].iloc[0] / hrm["TBT ms"].iloc[0] < 1.1
    assert "moe-lightning-hrm" in (tmp_path / "peers-moe-lightning.md").read_text()


def test_moe_lightning_against_flexgen_on_a_t4(tmp_path):
    # The T4 suite at a quarter of its batch, one of its settings (int4 experts, 1,024-token prompts) and one
    # workload seed, so that the test stays short: every system runs, each records the policy its own search
    # chose, FlexGen runs its GPU batches in the serial order, and only FlexGen without delegation copies KV entries
    # to the GPU.
    text = (ROOT / "suites" / "peers-moe-lightning-t4.toml").read_text()
    for old, new in (("sequences = 1024", "sequences = 256"), ("batch_size = 1024", "batch_size = 256"),
                     ("prompt_len = [128, 1024]", "prompt_len = 1024"),
                     ('expert_dtype = ["bf16", "int4"]', 'expert_dtype = "int4"')):
        assert old in text, old
        text = text.replace(old, new)
    suite = tmp_path / "t4.toml"
    suite.write_text(text)
    res = tmp_path / "results"
    run_suite(res, str(suite), "--filter", "workload.seed=1")
    s = peers_moe_lightning_t4.run(str(res), tmp_path)
    assert s["verdict"] in CLAIMED
    raw = pd.concat(pd.read_csv(f) for f in res.glob("peers-moe-lightning-t4/*/runs.csv"))
    by = raw.groupby("strategy")
    assert set(raw.loc[raw["strategy"].isin(["flexgen", "flexgen-c"]), "strategy.residency.attention_order"]) == {
        "serial"}
    assert set(raw.loc[raw["strategy"] == "moe-lightning-hrm", "strategy.residency.attention_order"]) == {"ahead"}
    assert set(raw.loc[raw["strategy"].isin(["flexgen", "flexgen-c", "moe-lightning-hrm"]),
                       "residency_chosen_by"]) == {'strategy.prefetcher = "paged-weights"'}
    assert set(by["run_attention"].unique()["flexgen"]) == {"gpu-host-kv"}
    assert by["kv_h2d_bytes"].min()["flexgen"] > 0
    assert by["kv_h2d_bytes"].max()[["flexgen-c", "moe-lightning-hrm", "moe-lightning"]].max() == 0
    t = pd.read_csv(tmp_path / "peers-moe-lightning-t4.csv")
    assert len(t) == 5 and t["prompt tokens"].tolist() == [1024] * 5
    ml = t[t["system"] == peers_moe_lightning_t4.ML_LABEL].iloc[0]
    for label in peers_moe_lightning_t4.FLEXGENS.values():
        fg = t[t["system"] == label].iloc[0]
        assert fg["MoE-Lightning over this"] == pytest.approx(ml["decode tokens/s"] / fg["decode tokens/s"])
    # FlexGen's KV copies bound its step far below the others here.
    assert t[t["system"] == "FlexGen (its search)"]["MoE-Lightning over this"].iloc[0] > 2
    fixed = t[t["policy"] == "fixed"]
    assert fixed["micro-batches"].tolist() == [4, 4] and set(fixed["attention"]) == {"cpu"}
    md = (tmp_path / "peers-moe-lightning-t4.md").read_text()
    assert "batch 256" in md and "up to 10.3x" in md and "Checks (" in md


def test_the_comparison_page_has_every_strategy_and_no_claim(results, tmp_path):
    s = peers_all.run(str(results), tmp_path)
    assert s["verdict"] == common.NO_CLAIM
    t = pd.read_csv(tmp_path / "peers-all.csv")
    for name in ("all-cpu", "llamacpp", "ktransformers", "hybrimoe", "smoe", "dali", "fate", "moe-infinity",
                 "mixtral-offloading", "oracle"):
        assert name in set(t["strategy"]), name
    assert t.loc[t["strategy"] == "oracle", "TBT / oracle"].iloc[0] == pytest.approx(1.0)


def test_a_ratio_inside_a_published_range():
    assert peers_common.range_effect(5.0, 2, 20).outcome() == common.REPRODUCED
    assert peers_common.range_effect(1.7, 2, 20).outcome() == common.REPRODUCED       # 2 / 1.7 - 1 = 18% <= 25%
    assert peers_common.range_effect(1.5, 2, 20).outcome() == common.NOT_REPRODUCED   # 33%
    assert peers_common.range_effect(30.0, 2, 20).outcome() == common.NOT_REPRODUCED
    assert peers_common.range_effect(float("nan"), 2, 20).outcome() == common.INCONCLUSIVE
