#!/usr/bin/env python3
# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Converts the routed-experts output of serving engines into a moebench
trace: vLLM's `CompletionOutput.routed_experts` (with
`--enable-return-routed-experts`: an integer array [tokens, MoE layers,
top_k] per request, the prompt's tokens first) and SGLang's
`routed_experts` (the same ids as base64 of int32, flattened).

Input: JSON lines, one request each:
    {"prompt_len": 17, "routed_experts": [[[3, 5], [0, 7]], ...]}          # nested lists [T][L][k]
    {"prompt_len": 17, "routed_experts": "<base64 int32>", "shape": [T, L, k]}
(with vLLM: json.dumps({"prompt_len": len(out.prompt_token_ids),
 "routed_experts": out.outputs[0].routed_experts.tolist()})).

    python3 workloads/convert_routed_experts.py requests.jsonl --experts 128 --model qwen3-30b-a3b \\
        --out trace.safetensors

The engines return expert ids only: the trace's combine weights are 1/k
for every expert (the source metadata says so), so statistics and
strategies that read only which experts run (hit rates, overlap,
popularity, placement) are exact, and anything that reads the weights or
router probabilities is not available. Ids are kept in the order the
engine returns them. Errors name the line and what was expected."""

from __future__ import annotations

import argparse
import base64
import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "python"))
import moebench_trace as mt  # noqa: E402


def parse_line(obj: dict, where: str) -> tuple[int, np.ndarray]:
    if not isinstance(obj, dict) or "routed_experts" not in obj:
        raise ValueError(f"{where}: expected an object with 'routed_experts', found {str(obj)[:80]}")
    r = obj["routed_experts"]
    if isinstance(r, str):
        shape = obj.get("shape")
        if not (isinstance(shape, list) and len(shape) == 3):
            raise ValueError(f"{where}: expected 'shape': [tokens, layers, top_k] with base64 routed_experts, "
                             f"found {shape!r}")
        try:
            raw = base64.b64decode(r, validate=True)
        except ValueError:
            raise ValueError(f"{where}: expected base64 text in routed_experts, found invalid characters") from None
        if len(raw) != 4 * int(np.prod(shape)):
            raise ValueError(f"{where}: expected {int(np.prod(shape))} int32 ids ({4 * int(np.prod(shape))} bytes) "
                             f"for shape {shape}, found {len(raw)} bytes")
        ids = np.frombuffer(raw, dtype="<i4")
        ids = ids.reshape(shape)
    else:
        ids = np.asarray(r)
        if ids.ndim != 3 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"{where}: expected routed_experts as integers [tokens][layers][top_k], found an "
                             f"array of shape {ids.shape} and dtype {ids.dtype}")
    prompt = obj.get("prompt_len", 0)
    if not isinstance(prompt, int) or prompt < 0:
        raise ValueError(f"{where}: expected prompt_len >= 0, found {prompt!r}")
    return min(prompt, ids.shape[0]), ids.astype(np.int32)


def convert(lines, experts: int, out: str, model: str, source_name: str) -> dict:
    seqs = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source_name}:{i}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: expected a JSON object, found a parse error: {e}") from None
        p, ids = parse_line(obj, where)
        if seqs and ids.shape[1:] != seqs[0][1].shape[1:]:
            raise ValueError(f"{where}: expected [tokens, {seqs[0][1].shape[1]}, {seqs[0][1].shape[2]}] like "
                             f"line 1, found {list(ids.shape)}")
        if ids.size and (ids.min() < 0 or ids.max() >= experts):
            raise ValueError(f"{where}: expected expert ids in [0, {experts}), found {ids.min()}..{ids.max()}")
        if ids.shape[0] == 0:
            raise ValueError(f"{where}: expected at least one token, found none")
        srt = np.sort(ids, axis=-1)
        dup = np.argwhere((srt[..., 1:] == srt[..., :-1]).any(-1))
        if len(dup):
            raise ValueError(f"{where}: expected distinct expert ids per token and layer, found a repeated id at "
                             f"token {dup[0][0]}, layer {dup[0][1]}")
        seqs.append((p, ids))
    if not seqs:
        raise ValueError(f"{source_name}: expected at least one request, found none")
    ids = np.concatenate([s[1] for s in seqs])
    k = ids.shape[2]
    mt.write(out, topk_ids=ids, topk_weights=np.full(ids.shape, 1.0 / k, np.float32),
             prompt_len=[s[0] for s in seqs], decode_len=[s[1].shape[0] - s[0] for s in seqs], model=model,
             routed_experts=experts,
             source={"converter": "workloads/convert_routed_experts.py", "input": source_name,
                     "weights": "not recorded by the engine: 1/k each"})
    return {"requests": len(seqs), "tokens": int(ids.shape[0]), "layers": int(ids.shape[1]), "top_k": int(k)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input", help="JSON lines, one request each")
    ap.add_argument("--experts", type=int, required=True, help="routed experts per MoE layer")
    ap.add_argument("--model", required=True, help="model name stored in the trace (e.g. a configs/models preset)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        with open(a.input) as f:
            s = convert(f, a.experts, a.out, a.model, a.input)
    except (OSError, ValueError) as e:
        print(f"convert_routed_experts: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {a.out}: {s['requests']} requests, {s['tokens']} tokens, {s['layers']} MoE layers, top-{s['top_k']} "
          "(combine weights not recorded by the engine: 1/k)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
