#!/usr/bin/env python3
# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Records moebench routing traces from Hugging Face transformers MoE models
, for users who have the weights (and, for large models, a GPU).

    python3 workloads/record_hf.py --model PATH --text FILE --out trace.safetensors \\
        [--sequences 8] [--seq-len 256] [--prompt-len 64] [--device cuda] [--dtype bfloat16]

It hooks every MoE block of the model (a module with a `gate` router whose
`weight` is [experts, hidden] and an `experts` module): the router's input
is the gate input, its output the router logits, and the arguments the
block hands its experts (token indices and combine weights, in
transformers 5) are the routing the model itself applies, so the trace
holds exactly what the model's own router returned. With older
transformers, whose blocks loop over a list of experts, the routing is
recomputed from the logits with the model's routing function. Ids are
stored in rank order (highest router score first), router probabilities
as the softmax (or, DeepSeek-V3, the sigmoid scores), and the routers as
gate weights (DeepSeek-V3: its e_score_correction_bias as the selection
bias), so `moebench trace stats` measures cross-layer predictability on
the result.

Supported model types: mixtral, qwen2_moe, qwen3_moe, deepseek_v2,
deepseek_v3 (others with the same block shape are tried as softmax top-k).
Each sequence runs as one forward pass over its tokens (no KV cache), which
routes every token as token-by-token decoding would, up to floating-point
differences. Tested on tiny randomly initialised models built from configs
(workloads/test_record_hf.py; needs torch and transformers)."""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "python"))
import moebench_trace as mt  # noqa: E402

ROUTING = {"mixtral": "softmax-topk", "qwen2_moe": "softmax-topk", "qwen3_moe": "softmax-topk",
           "deepseek_v2": "softmax-topk", "deepseek_v3": "sigmoid-grouped-bias"}


def moe_blocks(model):
    """The model's MoE blocks in forward order."""
    out = []
    for m in model.modules():
        g = getattr(m, "gate", None)
        w = getattr(g, "weight", None)
        if g is not None and w is not None and hasattr(m, "experts") and getattr(w, "dim", lambda: 0)() == 2 \
                and w.shape[0] > 1:
            out.append(m)
    return out


def routing_config(cfg) -> dict:
    t = getattr(cfg, "model_type", "")
    r = {"model_type": t, "routing": ROUTING.get(t, "softmax-topk"), "top_k": int(cfg.num_experts_per_tok),
         "n_group": 1, "topk_group": 1, "norm_topk_prob": bool(getattr(cfg, "norm_topk_prob", False)),
         "routed_scaling_factor": float(getattr(cfg, "routed_scaling_factor", 1.0) or 1.0)}
    if t == "mixtral":
        r["norm_topk_prob"] = True  # Mixtral always renormalises the top-k
    if t in ("deepseek_v2", "deepseek_v3"):
        r["n_group"] = int(getattr(cfg, "n_group", 1) or 1)
        r["topk_group"] = int(getattr(cfg, "topk_group", 1) or 1)
        if t == "deepseek_v2":
            if getattr(cfg, "topk_method", "greedy") == "group_limited_greedy":
                r["routing"] = "softmax-group-limited"
            else:
                r["n_group"] = r["topk_group"] = 1
    return r


def route_from_logits(torch, logits, rc: dict, selection_bias=None):
    """The routing function applied to logits [N, E] -> (ids [N, k], weights [N, k]) for transformers
    versions whose hooks do not expose the block's own choice."""
    E, k = logits.shape[-1], rc["top_k"]
    if rc["routing"] == "sigmoid-grouped-bias":
        scores = logits.float().sigmoid()
        choice = scores + (selection_bias if selection_bias is not None else 0)
        if rc["n_group"] > 1:
            g = choice.view(-1, rc["n_group"], E // rc["n_group"]).topk(2, dim=-1)[0].sum(-1)
            keep = torch.zeros_like(g).scatter_(1, g.topk(rc["topk_group"], dim=-1)[1], 1)
            mask = keep.unsqueeze(-1).expand(-1, rc["n_group"], E // rc["n_group"]).reshape(-1, E)
            choice = choice.masked_fill(~mask.bool(), float("-inf"))
        ids = choice.topk(k, dim=-1)[1]
        w = scores.gather(1, ids)
    else:
        probs = logits.float().softmax(-1)
        sel = probs
        if rc["n_group"] > 1:
            g = probs.view(-1, rc["n_group"], E // rc["n_group"]).max(dim=-1).values
            keep = torch.zeros_like(g).scatter_(1, g.topk(rc["topk_group"], dim=-1)[1], 1)
            mask = keep.unsqueeze(-1).expand(-1, rc["n_group"], E // rc["n_group"]).reshape(-1, E)
            sel = probs.masked_fill(~mask.bool(), 0.0)
        w, ids = sel.topk(k, dim=-1)
    if rc["norm_topk_prob"]:
        w = w / (w.sum(-1, keepdim=True) + 1e-20)
    return ids, w * rc["routed_scaling_factor"]


def record(model, sequences, prompt_len: int, out: str, model_name: str = "", source: dict | None = None) -> dict:
    """Runs `model` on each token sequence (lists of ids) and writes the trace to `out`. Returns a summary."""
    import torch
    blocks = moe_blocks(model)
    if not blocks:
        raise SystemExit(f"error: expected MoE blocks (a `gate` router with a [experts, hidden] weight and "
                         f"`experts`) in {type(model).__name__}, found none")
    rc = routing_config(model.config)
    L = len(blocks)
    E, H = blocks[0].gate.weight.shape
    k = rc["top_k"]
    sel_bias = [getattr(b.gate, "e_score_correction_bias", None) for b in blocks]
    cur = {}
    handles = []
    for l, b in enumerate(blocks):
        def gate_hook(mod, inputs, output, l=l):
            x = inputs[0].detach().reshape(-1, inputs[0].shape[-1])
            logits = (output[0] if isinstance(output, tuple) else output).detach().reshape(-1, E)
            cur.setdefault(l, {}).update(gate_input=x.float().cpu(), logits=logits.float().cpu())

        def experts_hook(mod, args, l=l):
            if len(args) >= 3 and torch.is_tensor(args[1]) and not args[1].is_floating_point():
                cur.setdefault(l, {}).update(ids=args[1].detach().cpu(), weights=args[2].detach().float().cpu())
        handles.append(b.gate.register_forward_hook(gate_hook))
        handles.append(b.experts.register_forward_pre_hook(experts_hook))
    ids_all, w_all, p_all, x_all, own = [], [], [], [], 0
    device = next(model.parameters()).device
    try:
        with torch.no_grad():
            for seq in sequences:
                cur.clear()
                model(torch.tensor([list(seq)], device=device), use_cache=False)
                T = len(seq)
                ids_s, w_s, p_s, x_s = (np.zeros((T, L, k), np.int32), np.zeros((T, L, k), np.float32),
                                        np.zeros((T, L, E), np.float32), np.zeros((T, L, H), np.float32))
                for l in range(L):
                    c = cur[l]
                    logits = c["logits"]
                    bias = sel_bias[l].detach().float().cpu() if sel_bias[l] is not None else None
                    if "ids" in c:
                        ids, w = c["ids"].long(), c["weights"]
                        own += 1
                    else:
                        ids, w = route_from_logits(torch, logits, rc, bias)
                    probs = logits.sigmoid() if rc["routing"] == "sigmoid-grouped-bias" else logits.softmax(-1)
                    rank = probs + (bias if bias is not None else 0)
                    order = rank.gather(1, ids).argsort(dim=-1, descending=True, stable=True)
                    ids_s[:, l] = ids.gather(1, order).numpy()
                    w_s[:, l] = w.gather(1, order).numpy()
                    p_s[:, l] = probs.numpy()
                    x_s[:, l] = c["gate_input"].numpy()
                ids_all.append(ids_s), w_all.append(w_s), p_all.append(p_s), x_all.append(x_s)
    finally:
        for h in handles:
            h.remove()
    gate_w = np.stack([b.gate.weight.detach().float().cpu().numpy() for b in blocks])
    sb = np.stack([(s.detach().float().cpu().numpy() if s is not None else np.zeros(E, np.float32))
                   for s in sel_bias])
    lens = [len(s) for s in sequences]
    mt.write(out, topk_ids=np.concatenate(ids_all), topk_weights=np.concatenate(w_all),
             prompt_len=[min(prompt_len, n) for n in lens], decode_len=[n - min(prompt_len, n) for n in lens],
             model=model_name or rc["model_type"], routed_experts=int(E), routing=rc["routing"],
             router_probs=np.concatenate(p_all), gate_input=np.concatenate(x_all), gate_weight=gate_w,
             gate_bias=np.zeros((L, E), np.float32), selection_bias=sb, n_group=rc["n_group"],
             topk_group=rc["topk_group"], norm_topk_prob=rc["norm_topk_prob"],
             routed_scaling_factor=rc["routed_scaling_factor"],
             source=source or {"recorder": "workloads/record_hf.py", "model_type": rc["model_type"]})
    return {"layers": L, "experts": int(E), "top_k": k, "tokens": int(sum(lens)),
            "own_routing_layers": own, "recomputed_layers": len(sequences) * L - own}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a local Hugging Face model folder (or hub id, if reachable)")
    ap.add_argument("--text", required=True, help="text file; tokenised with the model's tokenizer")
    ap.add_argument("--out", required=True)
    ap.add_argument("--sequences", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    a = ap.parse_args(argv)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(a.model)
    ids = tok(pathlib.Path(a.text).read_text(), return_tensors=None)["input_ids"]
    need = a.sequences * a.seq_len
    if len(ids) < need:
        raise SystemExit(f"error: {a.text}: expected at least {need} tokens ({a.sequences} x {a.seq_len}), "
                         f"found {len(ids)}")
    model = AutoModelForCausalLM.from_pretrained(a.model, torch_dtype=getattr(torch, a.dtype)).to(a.device).eval()
    seqs = [ids[i * a.seq_len:(i + 1) * a.seq_len] for i in range(a.sequences)]
    s = record(model, seqs, a.prompt_len, a.out, model_name=pathlib.Path(a.model).name,
               source={"recorder": "workloads/record_hf.py", "model": a.model, "text": a.text})
    print(f"wrote {a.out}: {s['tokens']} tokens, {s['layers']} MoE layers, {s['experts']} experts, top-{s['top_k']}; "
          f"routing taken from the model's own blocks in {s['own_routing_layers']} layer passes, recomputed from "
          f"the logits in {s['recomputed_layers']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
