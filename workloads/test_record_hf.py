# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""workloads/record_hf.py on tiny randomly initialised transformers models
built from configs (no weights downloaded): the trace holds exactly the
routing each model's own router returns. Needs torch and transformers
(skipped where they are missing, as on a fresh CI machine; run where they
are, e.g. `python3 -m pytest workloads/test_record_hf.py`)."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "python"))

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import moebench_trace as mt  # noqa: E402
import record_hf  # noqa: E402

COMMON = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=4,
              max_position_embeddings=64)
CONFIGS = {
    "mixtral": dict(num_hidden_layers=2, num_local_experts=8, num_experts_per_tok=2),
    "qwen2_moe": dict(num_hidden_layers=2, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=16,
                      shared_expert_intermediate_size=32, norm_topk_prob=False, decoder_sparse_step=1,
                      mlp_only_layers=[]),
    "qwen3_moe": dict(num_hidden_layers=2, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=16,
                      norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], head_dim=8),
    "deepseek_v2": dict(num_hidden_layers=3, first_k_dense_replace=1, n_routed_experts=8, n_shared_experts=1,
                        num_experts_per_tok=2, moe_intermediate_size=16, kv_lora_rank=16, q_lora_rank=None,
                        qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8, topk_method="group_limited_greedy",
                        n_group=2, topk_group=1, routed_scaling_factor=1.0),
    "deepseek_v3": dict(num_hidden_layers=3, first_k_dense_replace=1, n_routed_experts=8, n_shared_experts=1,
                        num_experts_per_tok=2, moe_intermediate_size=16, kv_lora_rank=16, q_lora_rank=16,
                        qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8, n_group=2, topk_group=1,
                        norm_topk_prob=True, routed_scaling_factor=2.5),
}


def tiny_model(model_type):
    try:
        cfg = transformers.AutoConfig.for_model(model_type, **COMMON, **CONFIGS[model_type])
    except Exception as e:  # a transformers version without this model type
        pytest.skip(f"transformers {transformers.__version__} cannot build {model_type}: {e}")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg).float().eval()
    with torch.no_grad():  # routers initialised to zero in some versions: make them decide something
        for b in record_hf.moe_blocks(model):
            b.gate.weight.normal_(0.0, 1.0)
            bias = getattr(b.gate, "e_score_correction_bias", None)
            if bias is not None:
                bias.normal_(0.0, 0.3)
    return model


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_trace_holds_the_routing_the_model_returns(tmp_path, model_type):
    model = tiny_model(model_type)
    blocks = record_hf.moe_blocks(model)
    assert len(blocks) == CONFIGS[model_type]["num_hidden_layers"] - CONFIGS[model_type].get("first_k_dense_replace", 0)
    # The routers' own outputs, captured independently of the recorder.
    seen = {l: [] for l in range(len(blocks))}
    hooks = [b.gate.register_forward_hook(lambda m, i, o, l=l: seen[l].append(o)) for l, b in enumerate(blocks)]
    gen = torch.Generator().manual_seed(1)
    seqs = [torch.randint(0, 64, (n,), generator=gen).tolist() for n in (12, 9)]
    out = tmp_path / "t.safetensors"
    s = record_hf.record(model, seqs, prompt_len=4, out=str(out), model_name=f"tiny-{model_type}")
    for h in hooks:
        h.remove()
    tr = mt.read(str(out))
    k = CONFIGS[model_type]["num_experts_per_tok"]
    assert (tr.moe_layers, tr.routed_experts, tr.top_k) == (len(blocks), 8, k)
    assert s["tokens"] == 21
    for l in range(len(blocks)):
        own = seen[l]
        assert len(own) == 2  # one forward per sequence
        for si, o in enumerate(own):
            if isinstance(o, tuple):  # transformers 5: (logits, weights, indices)
                want_ids, want_w = o[2].long(), o[1].float()
            else:  # older: logits only; the recorder's routing function is the reference
                want_ids, want_w = record_hf.route_from_logits(torch, o, record_hf.routing_config(model.config))
            seq = tr.sequence(si)
            got_ids, got_w = seq["topk_ids"][:, l, :], seq["topk_weights"][:, l, :]
            for t in range(len(seqs[si])):
                order = np.argsort(-want_w[t].numpy(), kind="stable") if model_type != "deepseek_v3" else None
                assert set(got_ids[t].tolist()) == set(want_ids[t].tolist()), (model_type, l, si, t)
                w_by_id = dict(zip(want_ids[t].tolist(), want_w[t].tolist()))
                assert np.allclose(got_w[t], [w_by_id[e] for e in got_ids[t]], rtol=1e-5, atol=1e-6)
                if order is not None:  # rank order: highest probability first
                    assert got_ids[t].tolist() == want_ids[t][order].tolist()
            probs = seq["router_probs"][:, l, :].astype(np.float32)
            assert probs.shape == (len(seqs[si]), 8)
    assert s["own_routing_layers"] + s["recomputed_layers"] == 2 * len(blocks)
    bin_ = os.environ.get("MOEBENCH_BIN")
    if bin_:  # the C++ reader accepts it and measures cross-layer predictability on it
        r = subprocess.run([bin_, "trace", "stats", str(out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "gate reuse" in r.stdout


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_routing_function_equals_the_models_router(model_type):
    """The fallback for transformers versions that do not hand the block's
    choice to a hookable experts module: the routing recomputed from the
    logits is the model's own (checked where the router returns indices)."""
    model = tiny_model(model_type)
    rc = record_hf.routing_config(model.config)
    checked = 0
    for b in record_hf.moe_blocks(model):
        x = torch.randn(40, model.config.hidden_size, generator=torch.Generator().manual_seed(3))
        with torch.no_grad():
            o = b.gate(x)
        if not isinstance(o, tuple):
            pytest.skip("this transformers version's router returns logits only")
        bias = getattr(b.gate, "e_score_correction_bias", None)
        with torch.no_grad():
            ids, w = record_hf.route_from_logits(torch, o[0], rc, None if bias is None else bias.detach())
        for t in range(40):
            assert set(ids[t].tolist()) == set(o[2][t].tolist()), (model_type, t)
            w_by_id = dict(zip(o[2][t].tolist(), o[1][t].float().tolist()))
            assert np.allclose(w[t].numpy(), [w_by_id[e] for e in ids[t].tolist()], rtol=1e-5, atol=1e-6)
        checked += 1
    assert checked >= 1
