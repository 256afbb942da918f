#!/usr/bin/env bash
# One unknown screened: the planners' estimate of a CPU expert's time (hardware [planning]
# cpu_expert, docs/COST_MODEL.md "Planning estimates"), at 0.5, 1 and 2 (an assumed range: a
# planner that profiles the CPU at twice or half its speed under load), on three claims that set a
# planner against another system: DALI Fig. 12 (DALI over HybriMoE, decode), HybriMoE Fig. 7-8
# (HybriMoE over kTransformers) and SMoE Table I (SMoE over KTransformers and HybriMoE). Every
# strategy's components read the same estimate; the tasks keep the testbed's costs. Each claim's
# number per workload seed, in the comparison its figure is judged in.
set -eu
cd "$(dirname "$0")/../../.."
py=$(sed -n 's/^PYTHON=//p' build/.python 2>/dev/null || echo /usr/bin/python3)
for f in 0.5 1 2; do
  shadow=/tmp/planning-screen-presets-$f
  rm -rf "$shadow"; mkdir -p "$shadow/hardware"
  for p in dali-rtx3090 hybrimoe-a6000 smoe-rtx4090; do
    { cat configs/hardware/$p.toml; printf '\n[planning]\ncpu_expert = %s\n' "$f"; } > "$shadow/hardware/$p.toml"
  done
  for s in dali/fig12-deepseek dali/fig12-mixtral dali/fig12-qwen hybrimoe-fig7-8 smoe-table1; do
    out=/tmp/planning-screen-$f/$(echo $s | tr / -)
    rm -rf "$out"
    MOEBENCH_CONFIG_PATH=$shadow build/bin/run_suite -q -j 2 suites/$s.toml --out "$out" > /dev/null 2>&1
  done
done
"$py" - <<'PY'
import csv, glob, statistics
from collections import defaultdict

def rows(f, part):
    out = []
    for p in glob.glob(f"/tmp/planning-screen-{f}/{part}/**/runs.csv", recursive=True):
        out += list(csv.DictReader(open(p)))
    return out

def ratio(rs, mode, num, den, metric, keys):
    by = defaultdict(dict)
    for r in rs:
        if r["run.comparison.mode"] != mode:
            continue
        by[(r["workload.seed"],) + tuple(r[k] for k in keys)][r["strategy"]] = float(r[metric])
    per_seed = defaultdict(list)
    for k, v in by.items():
        if num in v and den in v:
            per_seed[k[0]].append(v[num] / v[den])
    return {s: (statistics.mean(q), min(q)) for s, q in sorted(per_seed.items())}

print("cpu_expert estimate factor -> per seed: mean ratio (smallest ratio over settings)")
for f in ("0.5", "1", "2"):
    dali = []
    for m in ("deepseek", "mixtral", "qwen"):
        dali += rows(f, f"dali-fig12-{m}")
    r = ratio(dali, "mechanism", "dali", "hybrimoe", "decode_tokens_per_s", ("model", "workload.batch_size"))
    print(f"{f:>4}  DALI Fig. 12, DALI / HybriMoE decode (mechanism; paper 1.32x): "
          + ", ".join(f"{a:.2f}x ({b:.2f}x)" for a, b in r.values()))
    h = rows(f, "hybrimoe-fig7-8")
    for metric, name, paper in (("decode_tokens_per_s", "decode", "1.70x"), ("prefill_tokens_per_s", "prefill", "1.33x")):
        r = ratio(h, "mechanism", "hybrimoe", "ktransformers-frequency", metric, ("model", "workload.prompt_len"))
        print(f"{f:>4}  HybriMoE Fig. 7-8, HybriMoE / kTransformers {name} (mechanism; paper {paper}): "
              + ", ".join(f"{a:.2f}x ({b:.2f}x)" for a, b in r.values()))
    s = rows(f, "smoe-table1")
    for den, paper in (("ktransformers", "1.09x / 1.08x"), ("hybrimoe", "1.18x / 1.07x")):
        r = ratio(s, "as-published", "smoe", den, "decode_tokens_per_s", ("model",))
        print(f"{f:>4}  SMoE Table I, SMoE / {den} decode (as published; paper {paper}): "
              + ", ".join(f"{a:.2f}x ({b:.2f}x)" for a, b in r.values()))
PY
