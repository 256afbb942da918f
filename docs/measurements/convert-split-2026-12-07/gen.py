# Routing logs for run.sh: python3 gen.py OUTDIR (Mixtral-8x7B's shape: 32 layers, top-2 of 8).
import json, math, os, random, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
random.seed(3)
E, k, L = 8, 2, 32
def softmax(x):
    m = max(x); e = [math.exp(v - m) for v in x]; s = sum(e); return [v / s for v in e]
def rows(seqs=2, toks=5, mode="ids", skip=()):
    res = []
    for s in range(seqs):
        for t in range(toks):
            for l in range(L):
                if (s, t, l) in skip: continue
                lg = [random.gauss(0, 1) for _ in range(E)]
                p = softmax(lg)
                top = sorted(range(E), key=lambda e: -p[e])[:k]
                r = {"seq": s, "token": t, "layer": l}
                if mode == "ids": r.update(experts=top, weights=[p[e] / sum(p[i] for i in top) for e in top])
                elif mode == "topkprobs": r.update(experts=top, probs=[p[e] for e in top])
                elif mode == "logits": r.update(logits=lg)
                elif mode == "fullprobs": r.update(probs=p)
                elif mode == "renorm": r.update(experts=top, probs=[p[e] / sum(p[i] for i in top) for e in top])
                if t < 2: r["prompt"] = True
                res.append(r)
    return res
def w(name, rs):
    open(os.path.join(out, name), "w").write("".join(json.dumps(r) + "\n" for r in rs))
for m in ["ids", "topkprobs", "logits", "fullprobs", "renorm"]: w(m + ".jsonl", rows(mode=m))
w("missing.jsonl", rows(skip={(0, 2, 5), (1, 3, 0), (1, 3, 1)}))
pf = []  # positions restarting in every forward pass: a prefill of 3, then 3 decode passes
for s in range(2):
    for t in range(3):
        for l in range(L): pf.append({"seq": "req-%d" % s, "token": t, "layer": l, "experts": [0, 1], "weights": [0.6, 0.4]})
    for d in range(3):
        for l in range(L): pf.append({"seq": "req-%d" % s, "token": 0, "layer": l, "experts": [2, 3], "weights": [0.5, 0.5]})
w("perforward.jsonl", pf)
bad = {
    "bad1.jsonl": '{"seq":0,"token":0,"layer":0,"experts":[0,9],"weights":[0.5,0.5]}\n',
    "bad2.jsonl": '{"request":0,"pos":0,"layer_idx":0,"topk_ids":[0,1]}\n',
    "bad3.jsonl": '{"seq":0,"token":0,"layer":0,"experts":[0,1],"weights":[0,0]}\n',
    "bad4.jsonl": '{"seq":0,"token":0,"layer":0,"experts":[0,1],"probs":[0.5,1.5]}\n',
    "bad5.jsonl": '{"seq":0,"token":0,"layer":0,"experts":[0,1],"weights":[0.5,0.5]}\n'
                  '{"seq":"a","token":1,"layer":0,"experts":[0,1],"weights":[0.5,0.5]}\n',
    "bad6.jsonl": '{"seq":0,"token":0,"layer":0,"experts":[0,1],"weights":[0.5,0.5],"seq":1}\n',
}
for n, t in bad.items(): open(os.path.join(out, n), "w").write(t)
