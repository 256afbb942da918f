# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""workloads/convert_routed_experts.py: vLLM- and SGLang-style routed-experts
output to a trace, read back by the Python reader and, where the binary is
given (MOEBENCH_BIN), by the C++ one."""

import base64
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "python"))

import convert_routed_experts as cre  # noqa: E402
import moebench_trace as mt  # noqa: E402


def test_nested_lists_and_base64_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    a = np.array([[rng.permutation(8)[:2] for _ in range(3)] for _ in range(5)], dtype=np.int32)
    b = np.array([[rng.permutation(8)[:2] for _ in range(3)] for _ in range(4)], dtype=np.int32)
    inp = tmp_path / "req.jsonl"
    inp.write_text(json.dumps({"prompt_len": 3, "routed_experts": a.tolist()}) + "\n\n" +
                   json.dumps({"prompt_len": 1, "routed_experts": base64.b64encode(b.astype("<i4").tobytes()).decode(),
                               "shape": [4, 3, 2]}) + "\n")
    out = tmp_path / "t.safetensors"
    assert cre.main([str(inp), "--experts", "8", "--model", "tiny-mixtral", "--out", str(out)]) == 0
    t = mt.read(str(out))
    assert t.num_sequences == 2 and (t.moe_layers, t.routed_experts, t.top_k) == (3, 8, 2)
    assert t.prompt_len.tolist() == [3, 1] and t.decode_len.tolist() == [2, 3]
    assert (t.sequence(0)["topk_ids"] == a).all() and (t.sequence(1)["topk_ids"] == b).all()
    assert np.allclose(t.topk_weights, 0.5)
    assert "1/k" in t.metadata["source"]
    bin_ = os.environ.get("MOEBENCH_BIN")
    if bin_:
        r = subprocess.run([bin_, "trace", "stats", str(out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("line,msg", [
    ('{"prompt_len": 1}', "expected an object with 'routed_experts'"),
    ('{"routed_experts": [[[9, 1]]]}', "expected expert ids in [0, 8)"),
    ('{"routed_experts": "AAAA", "shape": [1, 1, 2]}', "expected 2 int32 ids (8 bytes)"),
    ('{"routed_experts": [[[3, 3]]]}', "expected distinct expert ids"),
    ('{"routed_experts": [[1, 2]]}', "expected routed_experts as integers [tokens][layers][top_k]"),
    ('not json', "expected a JSON object"),
])
def test_errors_name_the_line(tmp_path, capsys, line, msg):
    inp = tmp_path / "bad.jsonl"
    inp.write_text('{"routed_experts": [[[1, 2]]]}\n' + line + "\n")
    assert cre.main([str(inp), "--experts", "8", "--model", "m", "--out", str(tmp_path / "t.safetensors")]) == 2
    err = capsys.readouterr().err
    assert f"{inp}:2" in err and msg in err
    assert not (tmp_path / "t.safetensors").exists()
