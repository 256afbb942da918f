#!/usr/bin/env bash
# The baseline as a counterfactual: each claim of SMoE Fig. 10, SMoE Fig. 13 and DALI Fig. 12 that sets
# its system against HybriMoE, run against HybriMoE as the paper ran it (the suite's entry, named
# "hybrimoe") and against the paper's HybriMoE (preset hybrimoe with its own assigner and prefetcher,
# added to the same suite as "hybrimoe-paper"), in the comparison the figure is judged in. Per workload
# seed. docs/STRATEGIES.md, "Baselines as each paper ran them".
set -eu
cd "$(dirname "$0")/../../.."
py=$(sed -n 's/^PYTHON=//p' build/.python 2>/dev/null || echo /usr/bin/python3)
out=/tmp/baseline-counterfactual
rm -rf "$out"; mkdir -p "$out"
paper_entry() {  # the paper's HybriMoE with the suite's own prefetch count and slots
  printf '\n[[strategy]]\npreset = "hybrimoe"\nname = "hybrimoe-paper"\n%s\n' "$1"
}
for s in smoe-fig10-11/deepseek-v3 smoe-fig10-11/qwen3; do
  { cat suites/$s.toml; paper_entry 'prefetcher = { kind = "impact", depth = 3, max_prefetch = 1 }
residency.slots_per_layer = 8'; } > $out/$(basename $s).toml
done
{ cat suites/smoe-fig13.toml; paper_entry 'prefetcher = { kind = "impact", depth = 3, max_prefetch = 2 }
residency.slots_per_layer = 8'; } > $out/smoe-fig13.toml
for m in deepseek mixtral qwen; do
  { cat suites/dali/fig12-$m.toml; paper_entry ''; } > $out/dali-fig12-$m.toml
done
for f in $out/*.toml; do
  build/bin/run_suite -q -j 2 "$f" --out "${f%.toml}" > /dev/null 2>&1
done
"$py" - "$out" <<'PY'
import csv, glob, statistics, sys
from collections import defaultdict
out = sys.argv[1]

def rows(name):
    return list(csv.DictReader(open(f"{out}/{name}/runs.csv")))

def per_seed(rs, mode, keys, f):
    by = defaultdict(dict)
    for r in rs:
        if r["run.comparison.mode"] == mode:
            by[(r["workload.seed"],) + tuple(r[k] for k in keys)][r["strategy"]] = r
    seeds = defaultdict(list)
    for k, v in by.items():
        seeds[k[0]].append(v)
    return {s: f(v) for s, v in sorted(seeds.items())}

for m in ("deepseek-v3", "qwen3"):
    rs = rows(m)
    for h in ("hybrimoe", "hybrimoe-paper"):
        r = per_seed(rs, "as-published", ("workload.prompt_len",),
                     lambda v: max(float(x[h]["ttft_mean_ms"]) / float(x["smoe"]["ttft_mean_ms"]) for x in v))
        print(f"SMoE Fig. 10, {m}: SMoE + Pipe over {h}, largest over prompt lengths (paper 2.98x / 1.82x): "
              + ", ".join(f"{x:.2f}x" for x in r.values()))
rs = rows("smoe-fig13")
for h in ("hybrimoe", "hybrimoe-paper", "smoe"):
    r = per_seed(rs, "as-published", (), lambda v: statistics.mean(
        float(x[h]["bd_wait_cache_ms_per_token"]) / 58 for x in v))  # 58 MoE layers
    print(f"SMoE Fig. 13: {h} waits for copies, ms per token and MoE layer (paper: HybriMoE about 1.0, SMoE 0): "
          + ", ".join(f"{x:.3f}" for x in r.values()))
dali = sum((rows(f"dali-fig12-{m}") for m in ("deepseek", "mixtral", "qwen")), [])
for h in ("hybrimoe", "hybrimoe-paper"):
    r = per_seed(dali, "mechanism", ("model", "workload.batch_size"), lambda v: [
        float(x["dali"]["decode_tokens_per_s"]) / float(x[h]["decode_tokens_per_s"]) for x in v])
    print(f"DALI Fig. 12: DALI over {h}, decode, mean (smallest) over models and batches (paper 1.32x): "
          + ", ".join(f"{statistics.mean(q):.2f}x ({min(q):.2f}x)" for q in r.values()))
PY
