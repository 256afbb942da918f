"""The paper-figure scripts and the report, end to end on small real runs:
a composite suite filtered to one part, and a whole figure suite."""

import os
import pathlib
import subprocess
import sys

import pandas as pd
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(os.environ.get("MOEBENCH_BIN", ROOT / "build" / "bin" / "moebench")).parent
sys.path.insert(0, str(ROOT / "analysis"))

import common  # noqa: E402
import hybrimoe_fig9  # noqa: E402
import ktransformers_deferral  # noqa: E402


def run_suite(results, *args):
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    env.pop("MOEBENCH_TEST_SLOWDOWN", None)
    r = subprocess.run([str(BIN / "run_suite"), *args, "--results", str(results), "--quiet"], capture_output=True,
                       text=True, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    res = tmp_path_factory.mktemp("results")
    run_suite(res, "suites/ablation.toml", "--filter", "part=ktransformers-deferral")
    run_suite(res, "suites/hybrimoe-fig9.toml")
    return res


def test_part_of_a_composite_run_is_found(results):
    run, df = common.find_part(str(results), "ktransformers-deferral")
    assert run.parent.name == "ablation"
    assert set(df["strategy"]) == {"deferral", "deferral-heuristic"}
    assert common.find_part(str(results), "hybrimoe-table3") == (None, None)


def test_figure_scripts_write_tables_with_paper_values(results, tmp_path):
    s = ktransformers_deferral.run(str(results), tmp_path)
    assert isinstance(s["trend_reproduced"], bool)
    t = pd.read_csv(tmp_path / "ktransformers-deferral.csv")
    assert list(t["deferred experts"]) == [0, 2, 3, 4]
    # The paper's values sit next to the harness's, from analysis/paper_values/.
    assert t.set_index("deferred experts").loc[3, "paper throughput gain"] == pytest.approx(0.33)
    assert (tmp_path / "ktransformers-deferral.png").stat().st_size > 5_000
    s = hybrimoe_fig9.run(str(results), tmp_path)
    t = pd.read_csv(tmp_path / "hybrimoe-fig9.csv")
    assert len(t) == 18
    row = t[(t["model"] == "mixtral") & (t["cache %"] == 25) & (t["policy"] == "mrs")].iloc[0]
    assert row["paper hit rate"] == pytest.approx(0.362)
    assert 0.0 <= row["harness hit rate"] <= 1.0


def test_smoe_fig15_uses_the_layers_each_system_prefetches_on(tmp_path):
    import smoe_fig15

    res = tmp_path / "results"
    run_suite(res, "suites/smoe-table1.toml", "--filter", "part=smoe-table1-deepseek-v3")
    run, df = common.find_part(str(res), "smoe-table1-deepseek-v3", suites=("smoe-table1",))
    for _, r in df.iterrows():  # the per-layer counts add up to the total
        assert sum(r["prefetch_loads_by_layer"]) == r["prefetch_loads"]
        assert len(r["prefetch_loads_by_layer"]) == 58
    s = smoe_fig15.run(str(res), tmp_path)
    assert isinstance(s["trend_reproduced"], bool)
    t = pd.read_csv(tmp_path / "smoe-fig15.csv").set_index("system")
    assert t.loc["Static", "prefetch loads"] == 0
    assert t.loc["Static", "prefetching layers"] == "0/58"
    assert t.loc["SMoE (N=2)", "prefetching layers"] == "58/58"
    assert t.loc["SMoE-Flex (N=3)", "prefetching layers"] == "29/58"  # flex_fraction 0.5


def test_report_lists_every_figure_and_the_pending_ones(results, tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "analysis" / "report.py"), "--results", str(results), "--out",
                        str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    index = (tmp_path / "index.md").read_text()
    assert "[Fig. 9](hybrimoe-fig9.md)" in index
    assert "| HybriMoE | Table III | not run |" in index
    assert "## Pending" in index and "KTransformers" in index
    html = (tmp_path / "index.html").read_text()
    assert "<img src='hybrimoe-fig9.png'" in html


def test_dali_parts_run_separately_are_each_found(tmp_path):
    res = tmp_path / "results"
    run_suite(res, "suites/dali.toml", "--filter", "part=dali-fig16")
    run_suite(res, "suites/dali.toml", "--filter", "part=dali-fig18c,strategy.cache.w_size=2")
    import dali_fig16
    import dali_fig18
    s = dali_fig16.run(str(res), tmp_path)
    t = pd.read_csv(tmp_path / "dali-fig16.csv")
    assert list(t["method"]) == ["naive", "random", "hybrimoe", "residual"]
    assert t.loc[0, "speedup over naive"] == pytest.approx(1.0)
    assert isinstance(s["trend_reproduced"], bool)
    # The random predictor's picks are rarely used; the residual predictor's more often.
    prec = t.set_index("method")["prefetch precision"]
    assert prec["random"] < prec["residual"]
    s = dali_fig18.run(str(res), tmp_path)
    t = pd.read_csv(tmp_path / "dali-fig18.csv")
    assert set(t["panel"]) == {"c"} and len(t) == 5  # w_size 2 x u_size 1, 2, 4, 8, 16
