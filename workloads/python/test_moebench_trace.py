# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Round trips between the C++ trace tools and the numpy reader/writer.

Needs build/bin/moebench (or $MOEBENCH_BIN); `make test` builds it first."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import moebench_trace as mt

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("MOEBENCH_BIN", str(ROOT / "build" / "bin" / "moebench"))


def moebench(*args):
    env = dict(os.environ, MOEBENCH_HOME=str(ROOT))
    r = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise AssertionError(f"moebench {' '.join(map(str, args))} failed: {r.stderr}")
    return r.stdout


@pytest.fixture(scope="module")
def cpp_trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("cpp")
    path = d / "t.safetensors"
    moebench("trace", "gen", "--model", "deepseek-v2-lite", "--sequences", 3, "--prompt-len", 5,
             "--decode-len", 7, "--h-trace", 64, "--seed", 3, "--out", path)
    stats = d / "stats.json"
    moebench("trace", "stats", path, "--json", stats)
    return path, json.loads(stats.read_text())


def test_cpp_written_trace_reads_in_numpy(cpp_trace):
    path, stats = cpp_trace
    t = mt.read(str(path))
    assert t.metadata["model"] == "deepseek-v2-lite"
    assert (t.moe_layers, t.routed_experts, t.top_k) == (26, 64, 6)
    assert t.topk_ids.shape == (36, 26, 6)
    assert t.gate_input.shape == (36, 26, 64)
    assert t.gate_weight.shape == (26, 64, 64)
    assert list(t.prompt_len) == [5, 5, 5] and list(t.decode_len) == [7, 7, 7]
    # Same activation counts as the C++ statistics tool.
    assert t.popularity().tolist() == stats["popularity"]
    # The stored router probabilities rank the chosen experts first: no
    # unchosen expert has a higher probability than a chosen one (equal
    # values happen where a peaked router's small probabilities round to the
    # same f16 value, or to zero).
    probs = np.asarray(t.router_probs, dtype=np.float32)
    ids = np.asarray(t.topk_ids)
    chosen_min = np.take_along_axis(probs, ids, axis=-1).min(axis=-1)
    masked = probs.copy()
    np.put_along_axis(masked, ids, -np.inf, axis=-1)
    assert (chosen_min >= masked.max(axis=-1)).mean() > 0.99
    # Gate weights applied to gate inputs reproduce the routing (up to f16 rounding).
    g = np.asarray(t.gate_input, dtype=np.float32)
    logits = np.einsum("tlh,leh->tle", g, np.asarray(t.gate_weight)) + np.asarray(t.gate_bias)[None]
    chosen = np.argsort(-logits, axis=-1, kind="stable")[..., :6]
    agree = (np.sort(chosen, axis=-1) == np.sort(np.asarray(t.topk_ids), axis=-1)).mean()
    assert agree > 0.95
    seq1 = t.sequence(1)
    assert seq1["topk_ids"].shape == (12, 26, 6)
    assert np.array_equal(seq1["topk_ids"], np.asarray(t.topk_ids)[12:24])


def test_numpy_written_trace_reads_in_cpp(tmp_path):
    rng = np.random.default_rng(0)
    T, L, E, k, H = 10, 27 - 1, 64, 6, 32
    ids = np.stack([np.stack([rng.choice(E, k, replace=False) for _ in range(L)]) for _ in range(T)])
    w = rng.random((T, L, k), dtype=np.float32)
    path = tmp_path / "py.safetensors"
    mt.write(str(path), topk_ids=ids, topk_weights=w, prompt_len=[4, 2], decode_len=[3, 1],
             model="deepseek-v2-lite", routed_experts=E,
             gate_input=rng.standard_normal((T, L, H)), gate_weight=rng.standard_normal((L, E, H)))
    out = tmp_path / "stats.json"
    moebench("trace", "stats", path, "--json", out)
    stats = json.loads(out.read_text())
    assert stats["tokens"] == T
    expect = [np.bincount(ids[:, layer, :].ravel(), minlength=E).tolist() for layer in range(L)]
    assert stats["popularity"] == expect
    # And back through the numpy reader.
    t = mt.read(str(path))
    assert np.array_equal(np.asarray(t.topk_ids), ids)
    assert np.array_equal(np.asarray(t.topk_weights), w)


def test_numpy_reader_rejects_bad_files(tmp_path):
    good = tmp_path / "g.safetensors"
    mt.write(str(good), topk_ids=np.zeros((1, 1, 2), dtype=np.int32) + [[[0, 1]]],
             topk_weights=np.ones((1, 1, 2)), prompt_len=[0], decode_len=[1], model="m", routed_experts=4)
    data = good.read_bytes()
    trunc = tmp_path / "t.safetensors"
    trunc.write_bytes(data[:-1])
    with pytest.raises(mt.TraceError, match="truncated file"):
        mt.read(str(trunc))
    bad_ids = tmp_path / "b.safetensors"
    mt.write(str(bad_ids), topk_ids=np.array([[[0, 4]]]), topk_weights=np.ones((1, 1, 2)),
             prompt_len=[0], decode_len=[1], model="m", routed_experts=4)
    with pytest.raises(mt.TraceError, match=r"topk_ids\[token 0, layer 0\]: expected expert ids in \[0, 4\), found 4"):
        mt.read(str(bad_ids))
    # The C++ reader rejects the same file with the same words.
    r = subprocess.run([BIN, "trace", "stats", str(bad_ids)], capture_output=True, text=True,
                       env=dict(os.environ, MOEBENCH_HOME=str(ROOT)))
    assert r.returncode == 2
    assert "topk_ids[token 0, layer 0]: expected expert ids in [0, 4), found 4" in r.stderr
    with pytest.raises(mt.TraceError, match="no such|No such"):
        mt.read(str(tmp_path / "missing.safetensors"))


def test_both_readers_refuse_a_header_with_a_byte_order_mark_or_a_nul(tmp_path):
    """The C++ reader (nlohmann) skipped a UTF-8 byte-order mark and stopped at a
    NUL, taking headers the Python reader refused: both refuse them alike now."""
    good = tmp_path / "g.safetensors"
    mt.write(str(good), topk_ids=np.array([[[0, 1]]]), topk_weights=np.ones((1, 1, 2)),
             prompt_len=[0], decode_len=[1], model="m", routed_experts=4)
    data = good.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header, rest = data[8:8 + n], data[8 + n:]
    bom = b"\xef\xbb\xbf" + header.rstrip(b" ")
    bom += b" " * (n - len(bom))
    nul = header.rstrip(b" ") + b"\0" + b"x" * 4
    nul += b" " * (n - len(nul))
    for name, text, want in [("bom", bom, "a UTF-8 byte-order mark"),
                             ("nul", nul, f"a NUL byte at byte {len(header.rstrip(b' '))} of the header")]:
        path = tmp_path / f"{name}.safetensors"
        path.write_bytes(data[:8] + text + rest)
        with pytest.raises(mt.TraceError, match=want):
            mt.read(str(path))
        r = subprocess.run([BIN, "trace", "stats", str(path)], capture_output=True, text=True,
                           env=dict(os.environ, MOEBENCH_HOME=str(ROOT)))
        assert r.returncode == 2, r.stdout
        assert f"{path}: header: expected" in r.stderr and want in r.stderr, r.stderr


def test_holes_round_trip_between_numpy_and_cpp(tmp_path):
    """a row a logger dropped is a hole (every id HOLE_ID, every weight 0); numpy writes the count into the
    metadata, both readers accept it and leave it out, and a mixed row is refused by both."""
    E, k = 8, 2
    ids = np.array([[[0, 1], [2, 3]], [[mt.HOLE_ID, mt.HOLE_ID], [2, 3]], [[0, 1], [4, 5]]], dtype=np.int32)
    w = np.where(ids >= 0, 0.5, 0.0).astype(np.float32)
    path = tmp_path / "holes.safetensors"
    mt.write(str(path), topk_ids=ids, topk_weights=w, prompt_len=[0], decode_len=[3], model="m",
             routed_experts=E)
    t = mt.read(str(path))
    assert t.hole_rows == 1 and t.holes().sum() == 1 and t.holes()[1, 0]
    assert t.popularity()[0].tolist() == [2, 2, 0, 0, 0, 0, 0, 0]
    out = tmp_path / "stats.json"
    moebench("trace", "stats", path, "--json", out)
    stats = json.loads(out.read_text())
    assert stats["hole_rows"] == 1
    assert stats["popularity"][0] == [2, 2, 0, 0, 0, 0, 0, 0]
    mixed = tmp_path / "mixed.safetensors"
    bad = ids.copy()
    bad[1, 0, 1] = 3  # a hole id beside an expert
    mt.write(str(mixed), topk_ids=bad, topk_weights=w, prompt_len=[0], decode_len=[3], model="m", routed_experts=E)
    with pytest.raises(mt.TraceError, match=r"topk_ids\[token 1, layer 0\]: expected a hole"):
        mt.read(str(mixed))
    r = subprocess.run([BIN, "trace", "stats", str(mixed)], capture_output=True, text=True,
                       env=dict(os.environ, MOEBENCH_HOME=str(ROOT)))
    assert r.returncode == 2 and "topk_ids[token 1, layer 0]: expected a hole" in r.stderr, r.stderr


def test_the_numpy_writer_replaces_only_a_regular_file(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target, kind in ((fifo, "a FIFO"), (tmp_path, "a directory")):
        with pytest.raises(mt.TraceError, match=f"expected a new file or a regular file to replace, found {kind}"):
            mt.write(str(target), topk_ids=np.array([[[0, 1]]]), topk_weights=np.ones((1, 1, 2)), prompt_len=[0],
                     decode_len=[1], model="m", routed_experts=4)
    assert fifo.exists() and not any(p.name.startswith("pipe.tmp") for p in tmp_path.iterdir())
