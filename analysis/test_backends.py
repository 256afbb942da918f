# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""The real backend's tools end to end: `moebench calibrate` writes a profile
that loads and carries its tables; analysis/validation.py pairs real and
simulated cases and computes the error; analysis/kernels.py reads Google
Benchmark JSON."""

import json
import os
import pathlib
import subprocess
import sys
import time

import pandas as pd
import pytest
import kernels
import validation
import validation_tasks

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(os.environ.get("MOEBENCH_BIN", ROOT / "build" / "bin" / "moebench"))



def test_calibrate_writes_a_profile_that_loads(tmp_path):
    out = tmp_path / "cal.toml"
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    cal = r = subprocess.run([str(BIN), "calibrate", "--hardware", "local-cpu", "--out", str(out), "--models",
                        "deepseek-v2-lite", "--dtypes", "bf16", "--tokens", "1,3", "--repeats", "1",
                        "--weights-gib", "0.05", "--burst", "0", "--choice-tokens", "1,2", "--choice-repeats", "1",
                        "--layer-tokens", "1,2", "--layer-repeats", "1", "--warmup-ms", "50"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert text.startswith("# Written by `moebench calibrate")
    assert "--burst 0" in text and "--warmup-ms 50" in text and "ran top-k (a layer's worth) back to back" in text
    # the counts measured largest first, and whether a task depends on the one before it measured.
    assert "the counts largest first" in text
    assert "# A 1-token task right after a 3-token one, over one right after a 1-token task" in text
    assert 'name = "cal"' in text
    r = subprocess.run([str(BIN), "config", "show", "--hardware", str(out)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    h = json.loads(r.stdout)
    lanes = {(t["lane"], t["model"], t["dtype"]): t for t in h["table"]}
    t = lanes[("cpu-expert", "deepseek-v2-lite", "bf16")]
    assert t["tokens"] == [1.0, 3.0]
    assert all(x > 0 for x in t["time_us"])
    assert ("cpu-shared", "deepseek-v2-lite", "bf16") in lanes  # DeepSeek-V2-Lite has shared experts
    assert h["gpu"]["count"] == 0 and h["cpu"]["task_overhead_us"] > 0
    # auto's candidates timed against each other where this CPU has two or more (kernels/cpu/kernel_choice.h).
    kt = h.get("kernel_time", [])
    assert len(kt) != 1 and all(k["tokens"] == [1.0, 2.0] and len(k["time_us"]) == 2 for k in kt)
    assert ("kernel auto[" in cal.stderr) == bool(kt) and ("[[kernel_time]]" in text) == bool(kt)
    # Bad input is refused by name, and nothing is written.
    bad = tmp_path / "bad.toml"
    r = subprocess.run([str(BIN), "calibrate", "--hardware", "hybrimoe-a6000", "--out", str(bad)],
                       capture_output=True, text=True, env=env)
    # A profile with a GPU needs a GPU here (none on the CI machine).
    assert r.returncode != 0 and "measuring its GPU tables expected a CUDA device, found" in r.stderr
    r = subprocess.run([str(BIN), "calibrate", "--hardware", "local-cpu", "--out", str(bad), "--tokens", "4,2"],
                       capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "expected ascending distinct counts" in r.stderr
    # --under-load needs the other lanes: a profile with a GPU.
    r = subprocess.run([str(BIN), "calibrate", "--hardware", "local-cpu", "--out", str(bad), "--under-load"],
                       capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "calibrate --under-load: expected a profile with a GPU" in r.stderr
    assert not bad.exists()


def test_calibrate_refuses_a_tracked_out_or_one_it_cannot_write_before_measuring(tmp_path):
    """`--out configs/hardware/local-cpu.toml` once replaced the tracked profile it read (exit 0), and --out
    and a huge --tokens were checked only after the measurement (42 s here)."""
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    tracked = ROOT / "configs" / "hardware" / "local-cpu.toml"
    before = tracked.read_bytes()

    def refused(*args):
        t0 = time.time()
        r = subprocess.run([str(BIN), "calibrate", "--hardware", "local-cpu", *map(str, args)], capture_output=True,
                           text=True, env=env, cwd=ROOT)
        assert r.returncode == 2 and time.time() - t0 < 20, r.stderr
        return r.stderr

    assert "expected a path outside the tracked presets" in refused("--out", "configs/hardware/local-cpu.toml")
    assert "expected a path outside the tracked presets" in refused("--out", ROOT / "configs" / "hardware" / "x.toml")
    assert tracked.read_bytes() == before and not (ROOT / "configs" / "hardware" / "x.toml").exists()
    assert "found a directory" in refused("--out", tmp_path)
    assert "a folder a file can be written in" in refused("--out", "/proc/self/x.toml")
    assert "activations of a 100000000-token task" in refused("--out", tmp_path / "p.toml", "--tokens", "1,100000000")


def rows(backend, value, reps=1):
    return [{"status": "ok", "run.backend": backend, "model.name": "m", "model.expert_dtype": "bf16",
             "strategy": "all-cpu", "workload.batch_size": 1, "expert_ms_per_moe_layer": v, "cpu_busy_s": v,
             "tbt_mean_ms": v, "ttft_mean_ms": v} for v in ([value] if reps == 1 else value)]


def test_validation_pairs_cases_and_computes_the_error():
    df = pd.DataFrame(rows("real", [10.0, 9.0, 11.0], reps=3) + rows("sim", 11.0))
    t = validation.pair(df)
    assert len(t) == 1
    r = t.iloc[0]
    assert r["expert ms/layer real"] == 10.0  # median of the repetitions
    assert r["expert ms/layer err"] == pytest.approx(0.1)
    assert r["real spread"] == pytest.approx(0.2)
    assert pd.isna(r["TBT composition err"])  # rows without composed columns (before 2026-11-25): no split


def test_validation_splits_end_to_end_into_composition_and_tables():
    real = rows("real", [10.0, 12.0], reps=2)
    for x, c in zip(real, (9.9, 11.7)):
        x["composed_tbt_mean_ms"] = c
        x["composed_ttft_mean_ms"] = c
    t = validation.pair(pd.DataFrame(real + rows("sim", 11.55)))
    r = t.iloc[0]
    # Wall clock 11 (median), composed 10.8: the composition misses 1.8%; the simulation is 6.9% above the
    # composition and 5% above the wall clock.
    assert r["TBT composition err"] == pytest.approx(-0.2 / 11)
    assert r["TBT table err"] == pytest.approx(0.75 / 10.8)
    assert r["TBT ms err"] == pytest.approx(0.05)
    with pytest.raises(RuntimeError, match="expected rows of both backends"):
        validation.pair(pd.DataFrame(rows("real", 1.0)))


def test_noise_floor_takes_strategies_whose_simulated_work_agrees_up_to_rounding():
    def case(strategy, real, sim, batch=1):
        return {"model": "m", "dtype": "bf16", "strategy": strategy, "batch": batch,
                "expert ms/layer real": real, "expert ms/layer sim": sim}
    t = pd.DataFrame([
        # Identical work; deferral's total differs in the last bits (summation order).
        case("all-cpu", 10.0, 16.001768633641337), case("ktransformers", 11.0, 16.001768633641337),
        case("ktransformers-deferral", 12.0, 16.00176863364213),
        # Different simulated work: not a measure of the machine's noise.
        case("all-cpu", 10.0, 20.0, batch=2), case("ktransformers", 15.0, 20.1, batch=2)])
    floor = validation.noise_floor(t)
    assert floor == [pytest.approx(2.0 / 11.0)]


def test_a_miss_counts_only_where_the_machine_resolves_the_target():
    assert validation.validation_verdict(24, 24, [0.09], 0.03).startswith("target met")
    assert validation.validation_verdict(16, 24, [0.02, 0.03, 0.04], 0.04) == "target missed (16 of 24 within 5%)"
    v = validation.validation_verdict(16, 24, [0.04, 0.07, 0.08], 0.06)
    assert v.startswith("inconclusive (16 of 24 within 5%") and "7.0% median" in v
    # Errors well beyond the machine's noise are a miss even on a noisy machine.
    assert validation.validation_verdict(2, 24, [0.04, 0.07, 0.08], 0.20).startswith("target missed")
    assert validation.validation_verdict(16, 24, [], 0.04).startswith("target missed")  # no floor measured


def test_rounds_give_each_case_a_verdict_on_its_mean_error_with_a_confidence_interval():
    def table(errs):  # one round: errs[(strategy, batch)] for one model and dtype
        return pd.DataFrame([{"model": "m", "dtype": "bf16", "strategy": st, "batch": b, "expert ms/layer err": e}
                             for (st, b), e in errs.items()])
    rounds = [table({("a", 1): 0.01, ("b", 1): 0.20, ("c", 1): 0.00}),
              table({("a", 1): 0.02, ("b", 1): 0.21, ("c", 1): 0.10}),
              table({("a", 1): 0.03, ("b", 1): 0.22, ("c", 1): -0.10})]
    cases, systematic = validation.pooled(rounds)
    c = cases.set_index("strategy")
    # mean 2%, sd 1%: half-width t(2) * 0.01 / sqrt(3) = 2.48%, the whole interval within 5%.
    assert c.loc["a", "mean err"] == pytest.approx(0.02)
    assert c.loc["a", "ci95 half"] == pytest.approx(4.303 * 0.01 / 3 ** 0.5)
    assert c.loc["a", "err per round"] == "+1.0 +2.0 +3.0"
    assert list(c["verdict"]) == ["met", "missed", "inconclusive"]  # c: mean 0 but +-25%
    # The groups (here one per round) are the independent draws: their means 0.07, 0.11, 0.05.
    assert systematic["groups"] == 3 and systematic["mean"] == pytest.approx(0.23 / 3)
    assert systematic["by_group"]["m bf16"][0] == pytest.approx(0.23 / 3)  # the only model and dtype
    assert validation.series_verdict(cases) == "target missed (1 met, 1 missed, 1 inconclusive of 3 cases)"
    assert validation.series_verdict(cases[cases["verdict"] != "missed"]).startswith("inconclusive (1 met")
    assert validation.series_verdict(cases[cases["verdict"] == "met"]).startswith("target met")
    # One round alone says nothing about the spread: its interval is unbounded.
    assert validation.case_verdict(*validation.mean_ci([0.01])) == "inconclusive"


def test_validation_pools_the_finished_rounds_of_the_newest_series(tmp_path):
    res = tmp_path / "results"
    (res / "validation-interleaved").mkdir(parents=True)

    def round_(stamp, real, sim, series):
        fake_run(res / "validation-real" / f"{stamp}-m-bf16", "real", real)
        fake_run(res / "validation-sim" / stamp, "sim", sim)
        (res / "validation-interleaved" / f"{stamp}.json").write_text(json.dumps(
            {"real_runs": [f"validation-real/{stamp}-m-bf16"], "sim_run": f"validation-sim/{stamp}",
             "series": series}))
    # An older series, and three of four rounds of the newest (the fourth was interrupted: no index).
    round_("20261123T080000Z", 10.0, 20.0, {"id": "20261123T080000Z", "round": 1, "rounds": 1})
    for i, sim in enumerate([10.1, 10.2, 10.3]):
        round_(f"20261123T09000{i}Z", 10.0, sim, {"id": "20261123T090000Z", "round": i + 1, "rounds": 4})
    s = validation.run(str(res), tmp_path / "report")
    assert s["series"]["rounds"] == 3 and s["series"]["asked"] == 4
    assert s["series"]["systematic_error"] == pytest.approx(0.02)
    assert s["series"]["cases"] == {"met": 1, "missed": 0, "inconclusive": 0}
    assert s["verdict"] == "target met (1 met, 0 missed, 0 inconclusive of 1 cases) over 3 rounds"
    assert s["round_verdict"].startswith("target met")  # the latest round alone: 3%
    md = (tmp_path / "report" / "validation.md").read_text()
    assert "## Rounds: 3 of the series pooled" in md and "3 finished rounds of 4 asked for" in md
    assert (tmp_path / "report" / "validation_rounds.csv").is_file()
    # An index with no series (written before --rounds) is a series of one: no pooling.
    (res / "validation-interleaved" / "20261123T100000Z.json").write_text(json.dumps(
        {"real_runs": ["validation-real/20261123T080000Z-m-bf16"], "sim_run": "validation-sim/20261123T080000Z"}))
    s = validation.run(str(res), tmp_path / "report2")
    assert "series" not in s and s["verdict"].startswith("target missed")
    # A damaged series field is refused by name.
    (res / "validation-interleaved" / "20261123T110000Z.json").write_text(json.dumps(
        {"real_runs": ["validation-real/20261123T080000Z-m-bf16"], "sim_run": "validation-sim/20261123T080000Z",
         "series": {"id": "x", "round": 1, "rounds": "four"}}))
    with pytest.raises(RuntimeError, match="expected series.rounds and series.round as whole numbers"):
        validation.run(str(res), tmp_path / "report3")


def test_kernels_reads_benchmark_json(tmp_path):
    d = {"context": {"threads": "2", "probe_read_bw_gbps": "30.0", "probe_bf16_gflops": "200", "probe_int8_gops": "300",
                     "amx": "no", "auto_bf16": "avx512-bf16", "auto_int8": "avx512-vnni", "auto_int4": "avx512-vnni"},
         "benchmarks": [{"name": f"BM_ExpertFfn/{k}/bf16/{n}/real_time", "run_type": "iteration", "real_time": ms,
                         "time_unit": "ms", "weight_GBps": 88.1 / ms, "TFLOPs": 0.0881 * n / ms,
                         "bw_frac": 88.1 / ms / 30.0, "peak_frac": 88.1 * n / ms / 200}
                        for k, n, ms in [("avx512-bf16", 1, 3.0), ("onednn", 1, 4.0), ("avx512-bf16", 256, 60.0),
                                         ("onednn", 256, 30.0)]]}
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "bench_expert.json").write_text(json.dumps(d))
    s = kernels.run(str(tmp_path), tmp_path / "report")
    assert s["crossover_tokens"] == 256  # own kernel slower than oneDNN from 256 tokens
    md = (tmp_path / "report" / "kernels.md").read_text()
    assert "slower from 256 tokens per expert" in md
    # A faster own kernel at 256 tokens makes the own side win everywhere.
    d["benchmarks"].append({"name": "BM_ExpertFfn/avx512-bf16-gemm/bf16/256/real_time", "run_type": "iteration",
                            "real_time": 20.0, "time_unit": "ms", "weight_GBps": 4.4, "TFLOPs": 1.1, "bw_frac": 0.1,
                            "peak_frac": 0.9})
    (tmp_path / "bench" / "bench_expert.json").write_text(json.dumps(d))
    assert kernels.run(str(tmp_path), tmp_path / "report")["crossover_tokens"] is None
    assert "no AMX" in md or "AMX: no" in md
    # On a CPU with AMX the bf16 prefill line is against the tile peak.
    d["context"].update({"amx": "yes", "probe_amx_bf16_gflops": "2000"})
    d["benchmarks"].append({"name": "BM_ExpertFfn/amx-bf16/bf16/256/real_time", "run_type": "iteration",
                            "real_time": 10.0, "time_unit": "ms", "weight_GBps": 8.8, "TFLOPs": 0.9, "bw_frac": 0.3,
                            "peak_frac": 4.5, "amx_frac": 0.45})
    (tmp_path / "bench" / "bench_expert.json").write_text(json.dumps(d))
    assert kernels.run(str(tmp_path), tmp_path / "report")["crossover_tokens"] is None
    md = (tmp_path / "report" / "kernels.md").read_text()
    # The best kernel at 256 tokens is the packed vector one (1.1 TFLOP/s): 55% of 2000 GFLOP/s.
    assert "55-55% of the measured AMX bf16 tile peak" in md and "target 40%: met" in md
    # int8 tile rows (amx-quant, bf16 tiles) are measured against the bf16
    # peak too, from TFLOP/s (an older run's amx_frac against the int8 peak is not read).
    d["context"]["probe_amx_int8_gops"] = "4000"
    d["benchmarks"].append({"name": "BM_ExpertFfn/amx-quant/int8/256/real_time", "run_type": "iteration",
                            "real_time": 10.0, "time_unit": "ms", "weight_GBps": 4.7, "TFLOPs": 0.5, "bw_frac": 0.2,
                            "peak_frac": 1.7, "amx_frac": 0.125})
    (tmp_path / "bench" / "bench_expert.json").write_text(json.dumps(d))
    kernels.run(str(tmp_path), tmp_path / "report")
    md = (tmp_path / "report" / "kernels.md").read_text()
    assert "prefill int8: best kernel at 25-25% of the measured AMX bf16 tile peak" in md and "missed" in md
    assert "amx-int8 and amx-quant for int8 and int4) ran on this CPU" in md
    # where the fixed rule (auto without a calibrated profile) runs a candidate measured slower.
    d["context"].update({"auto_int8": "avx512-amx-quant"})
    d["benchmarks"].append({"name": "BM_ExpertFfn/avx512-vnni-gemm/int8/256/real_time", "run_type": "iteration",
                            "real_time": 8.0, "time_unit": "ms", "weight_GBps": 5.9, "TFLOPs": 0.6, "bw_frac": 0.2,
                            "peak_frac": 2.0})
    (tmp_path / "bench" / "bench_expert.json").write_text(json.dumps(d))
    kernels.run(str(tmp_path), tmp_path / "report")
    md = (tmp_path / "report" / "kernels.md").read_text()
    assert ("auto int8: the fixed rule (avx512-amx-quant) is slower than the fastest candidate at 256 tokens "
            "(amx-quant 1.25x avx512-vnni-gemm)") in md
    d["benchmarks"][-1]["real_time"] = 9.7  # amx-quant 1.03x the fastest: within 5%, level
    (tmp_path / "bench" / "bench_expert.json").write_text(json.dumps(d))
    kernels.run(str(tmp_path), tmp_path / "report")
    assert "auto int8: the fixed rule (avx512-amx-quant) runs the fastest candidate (within 5%)" in \
        (tmp_path / "report" / "kernels.md").read_text()
    # The rule is the kernel table's (kernels/cpu/kernel_registry.cc; bench_expert writes it into its context,
    # older files get it from `moebench kernels --json`): with the switch point above 256 tokens the fixed rule
    # runs the few-token kernel there, the fastest.
    d["benchmarks"][-1]["real_time"] = 8.0
    table = kernels.kernel_table({})
    assert {"avx512-vnni-gemm", "amx-quant", "amx-int8"} <= set(kernels.candidates(table)["int8"])
    next(k for k in table["kernels"] if k["name"] == "avx512-amx-quant")["switch_tokens"] = 300
    d["context"]["kernel_table"] = json.dumps(table)
    (tmp_path / "bench" / "bench_expert.json").write_text(json.dumps(d))
    kernels.run(str(tmp_path), tmp_path / "report")
    assert "auto int8: the fixed rule (avx512-amx-quant) runs the fastest candidate (within 5%)" in \
        (tmp_path / "report" / "kernels.md").read_text()


SUITE = """strategies = ["all-cpu", "ktransformers"]

[suite]
name = "vi-{backend}"
description = "tools/validate_interleaved.py test"
reproduces = "none (simulator validation)"
backend = "{backend}"
{real_keys}
[model]
preset = ["tiny-mixtral"]
expert_dtype = ["bf16", "int8"]

[hardware]
preset = "{preset}"

[workload]
sequences = 1
prompt_len = 8
decode_len = 2
batch_size = 1
"""


def test_validate_interleaved_calibrates_each_group_just_before_its_cases(tmp_path):
    # The suites name the profile by preset name: the calibrations write it under the results root,
    # where the suites find it through MOEBENCH_CONFIG_PATH, and nothing in the tracked configs/.
    for backend, keys in [("real", "repetitions = 1\nwarmup = 0\nreal_weights_gib = 0.05\n"), ("sim", "")]:
        (tmp_path / f"{backend}.toml").write_text(SUITE.format(backend=backend, real_keys=keys,
                                                               preset="vi-test-calibrated"))
    results = tmp_path / "results"
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    env.pop("MOEBENCH_CONFIG_PATH", None)
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "validate_interleaved.py"), "--bin", str(BIN.parent),
                        "--real", str(tmp_path / "real.toml"), "--sim", str(tmp_path / "sim.toml"),
                        "--results", str(results),
                        "--calibrate-arg=--tokens=1,2", "--calibrate-arg=--repeats=1",
                        "--calibrate-arg=--choice-tokens=1,2", "--calibrate-arg=--choice-repeats=1",
                        "--calibrate-arg=--weights-gib=0.05", "--calibrate-arg=--warmup-ms=50",
                        "--calibrate-arg=--layer-tokens=1,2,8", "--calibrate-arg=--layer-repeats=1"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert not (ROOT / "configs" / "hardware" / "vi-test-calibrated.toml").exists()
    (cal,) = (results / "validation-interleaved").glob("*-configs/hardware/vi-test-calibrated.toml")
    # Each group's calibration, then that group's real cases; the simulated cases last.
    steps = [line.split()[2] + " " + line.split("--dtypes ")[1].split()[0] if " calibrate " in line
             else "real " + line.split("expert_dtype=")[1].split()[0] if "--filter" in line else "sim"
             for line in r.stdout.splitlines() if line.startswith("+ ")]
    # (Each group calibrated again after its cases, into a profile of its own: the bracket.)
    assert steps == ["calibrate bf16", "real bf16", "calibrate bf16", "calibrate int8", "real int8",
                     "calibrate int8", "sim"]
    # The chained profile has both groups' tables; the second kept the first's, and says so.
    text = cal.read_text()
    assert "Kept from the base profile" in text and "cpu-expert tiny-mixtral bf16" in text
    assert text.count("CPU expert tables measured by moebench calibrate") == 1  # not nested per link
    h = json.loads(subprocess.run([str(BIN), "config", "show", "--hardware", str(cal)],
                                  capture_output=True, text=True, env=env, check=True).stdout)
    assert {(t["model"], t["dtype"]) for t in h["table"]} == {("tiny-mixtral", "bf16"), ("tiny-mixtral", "int8")}
    (index,) = (results / "validation-interleaved").glob("*.json")
    idx = json.loads(index.read_text())
    assert len(idx["real_runs"]) == 2 and idx["sim_run"].startswith("validation-sim/")
    assert [" calibrate " in s["command"] for s in idx["steps"]] == [True, False, True, True, False, True, False]
    assert set(idx["after_profiles"]) == {"tiny-mixtral bf16", "tiny-mixtral int8"}
    assert str(cal) not in idx["steps"][2]["command"]  # the bracket leaves the chain alone
    assert idx["profile"] == str(cal.relative_to(results))
    # Both backends' cases read the generated profile (by name, through MOEBENCH_CONFIG_PATH).
    for run in idx["real_runs"] + [idx["sim_run"]]:
        rows = [json.loads(line) for line in (results / run / "runs.jsonl").read_text().splitlines()]
        assert rows and {row["hardware.name"] for row in rows} == {"vi-test-calibrated"}
    # Where this CPU has two or more of auto's candidates, the calibration timed them ([[kernel_time]]) and the
    # real cases ran the fastest at each count, saying so; where it has one, the fixed rule, also said.
    kinds = {(t["dtype"], t["kernel"]) for t in h.get("kernel_time", [])}
    for run, dtype in zip(idx["real_runs"], ["bf16", "int8"]):
        rows = [json.loads(line) for line in (results / run / "runs.jsonl").read_text().splitlines()]
        timed = {k for d, k in kinds if d == dtype}
        assert len(timed) != 1
        want = "the fastest at each token count of" if timed else "auto: no measured kernel times"
        assert all("executed with kernel auto[" in row["warnings"] or not timed for row in rows)
        assert all(want in row["warnings"] for row in rows), rows[0]["warnings"]
    s = validation.run(str(results), tmp_path / "report")
    assert s["cases"] == 4 and s["run"] == str(index)
    assert "Protocol: interleaved" in (tmp_path / "report" / "validation.md").read_text()
    # Both backends kept a timeline of every case, and the index the profile the simulated cases read:
    # the task-by-task breakdown pairs every expert task and its terms add up to the error.
    assert (results / idx["profile_copy"]).read_text() == text
    s = validation_tasks.run(str(results), tmp_path / "report")
    assert s["run"] == str(index) and set(s["groups"]) == {"tiny-mixtral bf16", "tiny-mixtral int8"}
    for g in s["groups"].values():
        assert g["error"] == pytest.approx(g["at_calibrated"] + g["at_other"], abs=1e-9)
        assert "drift" in g and "error_after" in g and isinstance(g["inside"], bool)
    assert "Bracket (routed and shared together)" in (tmp_path / "report" / "validation_tasks.md").read_text()
    t = pd.read_csv(tmp_path / "report" / "validation_tasks.csv")
    assert (t["tasks"] > 0).all()
    # Routed experts (tiny-mixtral has no shared ones) and, since 2026-11-25, the rest of the step the calibration
    # measured tables for.
    assert {"routed", "attention"} <= set(t["expert"]) <= {"routed", "attention", "lm head"}


def test_validate_interleaved_runs_a_series_of_rounds(tmp_path):
    # One dtype group per round (the test above covers two groups in a round): half the calibrations and cases.
    one_group = SUITE.replace('expert_dtype = ["bf16", "int8"]', 'expert_dtype = ["bf16"]')
    for backend, keys in [("real", "repetitions = 1\nwarmup = 0\nreal_weights_gib = 0.05\n"), ("sim", "")]:
        (tmp_path / f"{backend}.toml").write_text(one_group.format(backend=backend, real_keys=keys, preset="cal.toml"))
    results = tmp_path / "results"
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    cmd = [sys.executable, str(ROOT / "tools" / "validate_interleaved.py"), "--bin", str(BIN.parent),
           "--real", str(tmp_path / "real.toml"), "--sim", str(tmp_path / "sim.toml"),
           "--profile", str(tmp_path / "cal.toml"), "--results", str(results),
           "--calibrate-arg=--tokens=1,2", "--calibrate-arg=--repeats=1", "--calibrate-arg=--weights-gib=0.05",
           "--calibrate-arg=--warmup-ms=50", "--calibrate-arg=--choice-tokens=1,2", "--calibrate-arg=--choice-repeats=1",
           "--calibrate-arg=--layer-tokens=1,2,8", "--calibrate-arg=--layer-repeats=1"]
    r = subprocess.run(cmd + ["--rounds", "0"], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "--rounds: expected a whole number from 1 to 99, found '0'" in r.stderr
    r = subprocess.run(cmd + ["--rounds", "2"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    indexes = sorted((results / "validation-interleaved").glob("*Z.json"))
    assert len(indexes) == 2 and indexes[0].name != indexes[1].name
    series = [json.loads(p.read_text())["series"] for p in indexes]
    assert [x["round"] for x in series] == [1, 2] and series[0]["id"] == series[1]["id"] == indexes[0].stem
    # Each round calibrates afresh from the base profile: its first calibration copies --base, not the chain.
    first = [s["command"] for s in json.loads(indexes[1].read_text())["steps"] if " calibrate " in s["command"]][0]
    assert "--hardware local-cpu " in first
    s = validation.run(str(results), tmp_path / "report")
    assert s["series"]["rounds"] == 2 and s["cases"] == 2 and s["verdict"].endswith("over 2 rounds")
    # The task breakdown of the latest round, and every round's bracket (how far the machine moved).
    s = validation_tasks.run(str(results), tmp_path / "report")
    assert s["run"] == str(indexes[1])
    assert s["series_brackets"]["rounds"] == 2 and s["series_brackets"]["groups"] == 2
    assert "Brackets of all 2 rounds of the series" in (tmp_path / "report" / "validation_tasks.md").read_text()


def fake_run(d: pathlib.Path, backend: str, value: float, status: str = "complete"):
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"status": status}))
    (d / "runs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows(backend, value)))


def test_validation_reads_the_newer_of_a_single_run_and_an_interleaved_index(tmp_path):
    res = tmp_path / "results"
    single = res / "validation" / "20261123T080000Z-abcdef12"
    fake_run(single, "real", 10.0)
    with (single / "runs.jsonl").open("a") as f:
        f.write(json.dumps(rows("sim", 11.0)[0]) + "\n")
    fake_run(res / "validation-real" / "20261123T090000Z-m-bf16", "real", 10.0)
    fake_run(res / "validation-sim" / "20261123T090000Z", "sim", 10.2)
    index = res / "validation-interleaved" / "20261123T090000Z.json"
    index.parent.mkdir(parents=True)
    index.write_text(json.dumps({"real_runs": ["validation-real/20261123T090000Z-m-bf16"],
                                 "sim_run": "validation-sim/20261123T090000Z"}))
    rows_, where, protocol = validation.latest(str(res))
    assert where == index and "interleaved" in protocol
    assert validation.pair(rows_).iloc[0]["expert ms/layer err"] == pytest.approx(0.02)
    # A later single run wins.
    later = res / "validation" / "20261123T100000Z-abcdef12"
    fake_run(later, "real", 10.0)
    with (later / "runs.jsonl").open("a") as f:
        f.write(json.dumps(rows("sim", 12.0)[0]) + "\n")
    rows_, where, protocol = validation.latest(str(res))
    assert where == later and "calibrated once" in protocol
    # An index whose part did not finish is refused by name.
    later2 = res / "validation-interleaved" / "20261123T110000Z.json"
    fake_run(res / "validation-sim" / "20261123T110000Z", "sim", 10.0, status="running")
    later2.write_text(json.dumps({"real_runs": ["validation-real/20261123T090000Z-m-bf16"],
                                  "sim_run": "validation-sim/20261123T110000Z"}))
    with pytest.raises(RuntimeError, match="expected the complete run .*20261123T110000Z"):
        validation.latest(str(res))


def test_validation_tasks_splits_the_error_by_token_count():
    # Table at 1 and 4 tokens; 3 tokens interpolated. One-token tasks: mean 11 against the table's 10
    # (median 10: a table of medians is 10% low); one 3-token task 33 against 30 interpolated.
    tasks = pd.DataFrame({"model": "m", "dtype": "bf16", "kind": "routed",
                          "tokens": [1, 1, 1, 1, 1, 3],
                          "real_us": [10.0, 10.0, 10.0, 10.0, 15.0, 33.0],
                          "sim_us": [10.0, 10.0, 10.0, 10.0, 10.0, 30.0]})
    profile = {"table": [{"lane": "cpu-expert", "model": "m", "dtype": "bf16", "tokens": [1.0, 4.0],
                          "time_us": [10.0, 40.0]}]}
    t, counts = validation_tasks.decompose(tasks, profile)
    r = t.iloc[0]
    assert r["real s"] == pytest.approx(88e-6) and r["sim s"] == pytest.approx(80e-6)
    assert r["error %"] == pytest.approx(-800 / 88)
    assert r["at calibrated counts %"] == pytest.approx(-500 / 88)
    assert r["at other counts %"] == pytest.approx(-300 / 88)
    assert r["run mean / median - 1 %"] == pytest.approx(10.0)  # only counts with 5 tasks or more
    assert r["1 token: real mean / table"] == pytest.approx(1.1)
    assert counts.set_index("tokens")["calibrated"].to_dict() == {1: True, 3: False}
    # The same group calibrated again after its cases, 10% slower: the bracket [80, 88] us holds the real 88.
    later = {"m bf16": {"table": [{"lane": "cpu-expert", "model": "m", "dtype": "bf16", "tokens": [1.0, 4.0],
                                   "time_us": [11.0, 44.0]}]}}
    t, _ = validation_tasks.decompose(tasks, profile, later)
    assert t.iloc[0]["drift during the cases %"] == pytest.approx(10.0)
    assert t.iloc[0]["error against the table after %"] == pytest.approx(0.0)
    # A group whose table the profile lacks is named.
    with pytest.raises(RuntimeError, match="cpu-shared table for m bf16"):
        validation_tasks.decompose(tasks.assign(kind="shared"), profile)
