#!/usr/bin/env python3
# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Trains one small MoE language model (tiny_moe.py has the
architecture) on a text corpus, byte-level, on the CPU by default.

    python3 workloads/tiny_moe/train.py --family mixtral --out models/tiny-mixtral
    python3 workloads/tiny_moe/train.py --fixture --family deepseek --out workloads/tiny_moe/testdata

Corpus: the King James Bible from Debian's bible-kjv packages (the `bible`
program prints it as plain text), or any UTF-8 file with --text; the last
5% of its bytes are held out for validation. Fixed seeds; --threads pins the
CPU threads (results depend on it). Writes, atomically:
  model.safetensors      the weights rounded to bf16 (BF16 tensors), the
                         config in the metadata ("config", JSON)
  reference.safetensors  the first --ref-tokens held-out bytes, the logits
                         and each layer's top-k ids and weights that this
                         PyTorch model computes for them with the saved
                         (bf16-rounded) weights: what the C++ forward pass
                         is tested against
  train_log.csv          step, train loss, aux loss, validation loss (nats per byte)
  summary.json           validation loss and perplexity per byte, seconds, settings
--fixture skips training: a randomly initialised model of the fixture size
(tiny_moe.FIXTURE) and its reference, for the tests.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import tiny_moe as tm  # noqa: E402


def corpus(path: str | None) -> bytes:
    if path:
        data = pathlib.Path(path).read_bytes()
    else:
        if not shutil.which("bible"):
            sys.exit("error: expected the `bible` program (Debian package bible-kjv) for the default corpus, "
                     "found none on PATH; `apt-get install bible-kjv`, or pass --text FILE")
        data = subprocess.run(["bible", "Gen 1:1-Rev 22:21"], check=True, capture_output=True).stdout
    if len(data) < 10_000:
        sys.exit(f"error: expected a corpus of at least 10000 bytes, found {len(data)} in {path or 'bible'}")
    return data


def batches(data: torch.Tensor, batch: int, seq: int, gen: torch.Generator):
    starts = torch.randint(0, len(data) - seq - 1, (batch,), generator=gen)
    x = torch.stack([data[s: s + seq] for s in starts])
    y = torch.stack([data[s + 1: s + seq + 1] for s in starts])
    return x.long(), y.long()


@torch.no_grad()
def evaluate(model, val: torch.Tensor, seq: int, n: int = 16, batch: int = 16) -> float:
    gen = torch.Generator().manual_seed(1234)  # the same batches every time
    total = 0.0
    for _ in range(n):
        x, y = batches(val, batch, seq, gen)
        logits, _ = model(x)
        total += torch.nn.functional.cross_entropy(logits.reshape(-1, tm.VOCAB), y.reshape(-1)).item()
    return total / n


@torch.no_grad()
def write_reference(model, tokens: torch.Tensor, out: pathlib.Path, meta: dict):
    rec = []
    logits, _ = model(tokens[None, :], record=rec)
    t = {"tokens": tokens.to(torch.int32), "logits": logits[0].float()}
    t["topk_ids"] = torch.stack([ids.to(torch.int32) for _, ids, _ in rec])  # [L, T, k]
    t["topk_weights"] = torch.stack([w.float() for _, _, w in rec])
    tm.save_safetensors(out / "reference.safetensors", t, meta)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", choices=sorted(tm.FAMILIES), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--text", help="corpus file (default: the KJV Bible via `bible`)")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--aux", type=float, default=0.01, help="load-balance loss coefficient")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ref-tokens", type=int, default=64)
    ap.add_argument("--fixture", action="store_true", help="no training: the test fixture's size, random weights")
    a = ap.parse_args(argv)

    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    model = tm.TinyMoE(a.family, tm.FIXTURE if a.fixture else None)
    cfg = tm.config(model)
    if a.fixture:
        tm.round_to_bf16_(model)
        gen = torch.Generator().manual_seed(a.seed + 1)
        tokens = torch.randint(0, tm.VOCAB, (24,), generator=gen)
        meta = {"config": json.dumps(cfg), "source": f"train.py --fixture --family {a.family} --seed {a.seed}"}
        tm.save_safetensors(out / f"{a.family}.safetensors",
                            {k: v.to(torch.bfloat16) for k, v in tm.tensor_names(model).items()}, meta)
        (out / "ref").mkdir(exist_ok=True)
        write_reference(model, tokens, out / "ref", meta)
        os.replace(out / "ref" / "reference.safetensors", out / f"{a.family}.reference.safetensors")
        (out / "ref").rmdir()
        print(f"wrote {out}/{a.family}.safetensors and {a.family}.reference.safetensors")
        return 0

    data = torch.tensor(list(corpus(a.text)), dtype=torch.uint8)
    split = int(len(data) * 0.95)
    train, val = data[:split], data[split:]
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), weight_decay=0.1)
    warm = max(1, a.steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / a.steps))))
    gen = torch.Generator().manual_seed(a.seed)
    log_rows, t0 = [], time.time()
    for step in range(1, a.steps + 1):
        x, y = batches(train, a.batch, a.seq, gen)
        logits, probs = model(x)
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, tm.VOCAB), y.reshape(-1))
        aux = tm.aux_loss(probs, model.c["top_k"])
        opt.zero_grad()
        (ce + a.aux * aux).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 100 == 0 or step == a.steps:
            v = evaluate(model, val, a.seq)
            log_rows.append({"step": step, "train_loss": round(ce.item(), 5), "aux_loss": round(aux.item(), 5),
                             "val_loss": round(v, 5), "seconds": round(time.time() - t0, 1)})
            print(f"step {step}: train {ce.item():.4f} aux {aux.item():.4f} val {v:.4f} nats/byte "
                  f"({time.time() - t0:.0f} s)", flush=True)
    seconds = time.time() - t0
    tm.round_to_bf16_(model)
    val_loss = evaluate(model, val, a.seq)
    meta = {"config": json.dumps(cfg), "source": f"train.py --family {a.family} --steps {a.steps} --seed {a.seed} "
            f"--threads {a.threads} (torch {torch.__version__})"}
    tm.save_safetensors(out / "model.safetensors",
                        {k: v.to(torch.bfloat16) for k, v in tm.tensor_names(model).items()}, meta)
    write_reference(model, val[: a.ref_tokens].long(), out, meta)
    with open(out / "train_log.csv.tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(log_rows[0]))
        w.writeheader()
        w.writerows(log_rows)
    os.replace(out / "train_log.csv.tmp", out / "train_log.csv")
    summary = {"family": a.family, "config": cfg, "params": sum(p.numel() for p in model.parameters()),
               "val_loss_nats_per_byte": round(val_loss, 5), "val_perplexity_per_byte": round(math.exp(val_loss), 4),
               "train_seconds": round(seconds, 1), "steps": a.steps, "batch": a.batch, "seq": a.seq, "lr": a.lr,
               "aux": a.aux, "seed": a.seed, "threads": a.threads, "torch": torch.__version__,
               "corpus": a.text or "KJV Bible (bible-kjv)", "corpus_bytes": len(data), "heldout_bytes": len(val)}
    (out / "summary.json.tmp").write_text(json.dumps(summary, indent=1) + "\n")
    os.replace(out / "summary.json.tmp", out / "summary.json")
    (out / "heldout.txt").write_bytes(bytes(val.tolist()))
    print(f"validation: {val_loss:.4f} nats/byte, perplexity {math.exp(val_loss):.3f} per byte ({seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
