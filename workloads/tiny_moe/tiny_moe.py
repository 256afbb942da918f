# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Small decoder-only MoE language models, the PyTorch side.

Two families, byte-level (vocabulary = the 256 byte values, no tokenizer):
  mixtral   few large experts, top-2, the top-k probabilities renormalised
            (Mixtral: softmax over the chosen logits), no shared expert
  deepseek  many fine-grained experts, top-4, probabilities as the softmax
            over all experts gives them (DeepSeek-V2: norm_topk_prob false),
            one shared expert beside them
Each block: x += attn(rmsnorm(x)); x += moe(rmsnorm(x)); then a final
RMSNorm and an untied lm head. Attention is multi-head, causal, with rotary
position embeddings applied Llama-style (the two halves of each head
rotated: x * cos + rotate_half(x) * sin, inv_freq = theta^(-2i/d)).
Experts are SwiGLU: down(silu(gate x) * up x). The router is a bias-free
linear map of the block's normalised input: its softmax picks the top-k.

The C++ forward pass (workloads/model/moe_model.h) implements exactly this;
the names and shapes of the tensors in the safetensors file are its
contract (docs/TINY_MODELS.md).
"""

from __future__ import annotations

import json
import math
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

FAMILIES = {
    # hidden, layers, heads, experts, top_k, expert inter, shared experts, shared inter, norm_topk
    "mixtral": dict(hidden=128, layers=4, heads=4, experts=8, top_k=2, inter=192, shared=0, shared_inter=0,
                    norm_topk_prob=True),
    "deepseek": dict(hidden=128, layers=4, heads=4, experts=32, top_k=4, inter=48, shared=1, shared_inter=96,
                     norm_topk_prob=False),
}
VOCAB = 256
ROPE_THETA = 10000.0
RMS_EPS = 1e-5


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS) * self.weight


def rope(x, pos):
    """x [B, heads, T, hd], pos [T]."""
    hd = x.shape[-1]
    inv = 1.0 / (ROPE_THETA ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    ang = pos.float()[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1)
    sin = torch.cat([ang.sin(), ang.sin()], -1)
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x):
        B, T, D = x.shape
        pos = torch.arange(T)
        q = rope(self.q(x).view(B, T, self.heads, self.hd).transpose(1, 2), pos)
        k = rope(self.k(x).view(B, T, self.heads, self.hd).transpose(1, 2), pos)
        v = self.v(x).view(B, T, self.heads, self.hd).transpose(1, 2)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
        att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        y = att.softmax(-1) @ v
        return self.o(y.transpose(1, 2).reshape(B, T, D))


class Expert(nn.Module):
    def __init__(self, d, inter):
        super().__init__()
        self.gate = nn.Linear(d, inter, bias=False)
        self.up = nn.Linear(d, inter, bias=False)
        self.down = nn.Linear(inter, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class MoE(nn.Module):
    def __init__(self, d, c):
        super().__init__()
        self.top_k, self.norm = c["top_k"], c["norm_topk_prob"]
        self.router = nn.Linear(d, c["experts"], bias=False)
        self.experts = nn.ModuleList([Expert(d, c["inter"]) for _ in range(c["experts"])])
        self.shared = Expert(d, c["shared_inter"] * c["shared"]) if c["shared"] else None

    def route(self, h):
        """h [N, d] -> probs [N, E], ids [N, k], weights [N, k] (rank order)."""
        probs = self.router(h).softmax(-1)
        w, ids = probs.topk(self.top_k, -1)
        if self.norm:
            w = w / w.sum(-1, keepdim=True)
        return probs, ids, w

    def forward(self, x, skip=0, record=None):
        """skip: drop the `skip` lowest-ranked of the k experts (accuracy
        experiments); record: a list that gets (probs, ids, weights) appended."""
        B, T, D = x.shape
        h = x.reshape(-1, D)
        probs, ids, w = self.route(h)
        if record is not None:
            record.append((probs.detach(), ids.detach(), w.detach()))
        # (token, rank) pairs sorted by expert: one matmul per expert.
        kk = self.top_k - skip
        flat_ids = ids[:, :kk].reshape(-1)
        order = flat_ids.argsort(stable=True)
        tok = order // kk
        counts = torch.bincount(flat_ids, minlength=len(self.experts)).tolist()
        wsel = w[:, :kk].reshape(-1)[order, None]
        out = torch.zeros_like(h)
        start = 0
        for e, n in enumerate(counts):
            if n:
                t = tok[start: start + n]
                out.index_add_(0, t, wsel[start: start + n] * self.experts[e](h[t]))
            start += n
        if self.shared is not None:
            out = out + self.shared(h)
        return out.view(B, T, D), probs


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden"]
        self.attn_norm, self.attn = RMSNorm(d), Attention(d, c["heads"])
        self.moe_norm, self.moe = RMSNorm(d), MoE(d, c)

    def forward(self, x, skip=0, record=None):
        x = x + self.attn(self.attn_norm(x))
        y, probs = self.moe(self.moe_norm(x), skip, record)
        return x + y, probs


# The test fixtures' sizes (workloads/tiny_moe/testdata): the same
# families, small enough to commit with their reference outputs.
FIXTURE = {"hidden": 32, "layers": 2, "heads": 2, "inter": 24, "shared_inter": 16}
FIXTURE_EXPERTS = {"mixtral": 8, "deepseek": 16}


class TinyMoE(nn.Module):
    def __init__(self, family: str, overrides: dict | None = None):
        super().__init__()
        self.family, self.c = family, {**FAMILIES[family], **(overrides or {})}
        if overrides is FIXTURE:
            self.c["experts"] = FIXTURE_EXPERTS[family]
        c = self.c
        self.embed = nn.Embedding(VOCAB, c["hidden"])
        self.blocks = nn.ModuleList([Block(c) for _ in range(c["layers"])])
        self.norm = RMSNorm(c["hidden"])
        self.head = nn.Linear(c["hidden"], VOCAB, bias=False)

    def forward(self, tokens, skip=0, record=None):
        x = self.embed(tokens)
        probs = []
        for b in self.blocks:
            x, p = b(x, skip, record)
            probs.append(p)
        return self.head(self.norm(x)), probs


def aux_loss(probs, top_k):
    """Switch-style load balance: E * sum_e f_e P_e over the layer's tokens,
    f_e the share of top-k slots routed to e, P_e the mean probability."""
    total = 0.0
    for p in probs:
        E = p.shape[-1]
        ids = p.topk(top_k, -1).indices
        f = F.one_hot(ids, E).float().sum(1).mean(0) / top_k
        total = total + E * (f * p.mean(0)).sum()
    return total / len(probs)


def tensor_names(model: TinyMoE):
    """The file's tensor names (the C++ side's contract) -> parameters."""
    out = {"embed": model.embed.weight, "norm": model.norm.weight, "lm_head": model.head.weight}
    for i, b in enumerate(model.blocks):
        p = f"layers.{i}."
        out[p + "attn_norm"] = b.attn_norm.weight
        out[p + "moe_norm"] = b.moe_norm.weight
        for n in "qkvo":
            out[p + f"attn.{n}"] = getattr(b.attn, n).weight
        out[p + "router"] = b.moe.router.weight
        for e, ex in enumerate(b.moe.experts):
            for n in ("gate", "up", "down"):
                out[p + f"experts.{e}.{n}"] = getattr(ex, n).weight
        if b.moe.shared is not None:
            for n in ("gate", "up", "down"):
                out[p + f"shared.{n}"] = getattr(b.moe.shared, n).weight
    return out


def round_to_bf16_(model: TinyMoE):
    """Rounds every parameter to bf16 in place (kept as fp32): what is saved."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).to(torch.float32))


def config(model: TinyMoE) -> dict:
    c = model.c
    return {"family": model.family, "vocab_size": VOCAB, "hidden_size": c["hidden"], "num_layers": c["layers"],
            "num_heads": c["heads"], "head_dim": c["hidden"] // c["heads"], "routed_experts": c["experts"],
            "top_k": c["top_k"], "expert_intermediate": c["inter"], "shared_experts": c["shared"],
            "shared_intermediate": c["shared_inter"], "norm_topk_prob": c["norm_topk_prob"],
            "rope_theta": ROPE_THETA, "rms_norm_eps": RMS_EPS}


_ST = {torch.float32: ("F32", 4), torch.bfloat16: ("BF16", 2), torch.int32: ("I32", 4)}


def save_safetensors(path, tensors: dict, metadata: dict):
    """Writes a safetensors file (header JSON, then the tensors' bytes) without
    the safetensors package; atomically (a temporary file, then rename)."""
    import os
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        dt, size = _ST[t.dtype]
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        assert len(raw) == t.numel() * size
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)
