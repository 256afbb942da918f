# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""The committed test fixtures are what train.py --fixture writes (needs
PyTorch: skipped where it is not installed, e.g. on a fresh CI machine;
`make tiny-models` installs Debian's python3-torch)."""

import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent


@pytest.mark.parametrize("family", ["mixtral", "deepseek"])
def test_fixture_is_what_the_script_writes(tmp_path, family):
    pytest.importorskip("torch")
    subprocess.run([sys.executable, str(HERE / "train.py"), "--fixture", "--family", family, "--out", str(tmp_path)],
                   check=True, capture_output=True)
    for name in (f"{family}.safetensors", f"{family}.reference.safetensors"):
        assert (tmp_path / name).read_bytes() == (HERE / "testdata" / name).read_bytes(), name


def test_corpus_error_names_the_file(tmp_path):
    pytest.importorskip("torch")
    short = tmp_path / "short.txt"
    short.write_text("too short")
    r = subprocess.run([sys.executable, str(HERE / "train.py"), "--family", "mixtral", "--out", str(tmp_path / "m"),
                        "--text", str(short)], capture_output=True, text=True)
    assert r.returncode != 0 and "short.txt" in r.stderr and "10000 bytes" in r.stderr


@pytest.mark.parametrize("family", ["mixtral", "deepseek"])
def test_model_presets_declare_the_trained_shapes(family):
    """configs/models/tiny-<family>.toml is the ModelSpec of what train.py trains."""
    pytest.importorskip("torch")
    import tomllib
    sys.path.insert(0, str(HERE))
    import tiny_moe as tm
    c = tm.FAMILIES[family]
    p = tomllib.loads((HERE.parents[1] / "configs" / "models" / f"tiny-{family}.toml").read_text())
    assert (p["num_layers"], p["hidden_size"], p["routed_experts"], p["top_k"], p["expert_intermediate"],
            p["shared_experts"], p["norm_topk_prob"], p["num_heads"], p["vocab_size"]) == \
        (c["layers"], c["hidden"], c["experts"], c["top_k"], c["inter"], c["shared"], c["norm_topk_prob"], c["heads"],
         tm.VOCAB)
    assert p.get("shared_intermediate", 0) == c["shared_inter"]
