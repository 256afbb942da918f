#!/usr/bin/env bash
# Which HybriMoE implementation is consistent with the HybriMoE numbers DALI published (Table 9,
# batch 32, 50% cache: 1.65 tokens/s a sequence on Mixtral-8x7B, 1.75 on Qwen3-30B-A3B)? Each
# candidate decodes Table 9's case on the DALI testbed twice: with the testbed's fitted host time
# (configs/hardware/dali-rtx3090.toml as committed) and with no host time per layer at all
# (stack.ktransformers.layer_overhead_us = 0: the fastest it can run there). A candidate whose
# second number is below the published one cannot be the HybriMoE DALI measured.
set -eu
cd "$(dirname "$0")/../../.."
shadow=/tmp/baselines-as-run-presets
rm -rf "$shadow"; mkdir -p "$shadow/hardware"
sed 's/^layer_overhead_us = .*/layer_overhead_us = 0/' configs/hardware/dali-rtx3090.toml \
  > "$shadow/hardware/dali-rtx3090.toml"
for m in mixtral-8x7b qwen3-30b-a3b; do
  cat > /tmp/baselines-as-run-$m.toml <<TOML
[suite]
name = "baselines-as-run-$m"
comparison = "as-published"
backend = "sim"
seed = 1
[hardware]
preset = "dali-rtx3090"
[model]
preset = "$m"
expert_dtype = "int4"
[workload]
sequences = 32
prompt_len = 64
decode_len = 64
batch_size = 32
[strategy_defaults]
residency.cache_ratio = 0.5
[[strategy]]
preset = "hybrimoe"
name = "paper"
[[strategy]]
preset = "hybrimoe-code"
name = "code"
[[strategy]]
preset = "hybrimoe-code"
name = "code, no unread buffer"
assigner = { kind = "hybrimoe-greedy", prefill = "gpu-ondemand", single_token_schedule = true, prefill_buffer = false }
[[strategy]]
preset = "hybrimoe-code"
name = "code, greedy on every decode step"
assigner = { kind = "hybrimoe-greedy", prefill = "gpu-ondemand", single_token_schedule = false, prefill_buffer = true }
TOML
  for host in fitted none; do
    out=/tmp/baselines-as-run-$m-$host
    rm -rf "$out"
    if [ $host = none ]; then
      MOEBENCH_CONFIG_PATH=$shadow build/bin/run_suite -q -j 2 /tmp/baselines-as-run-$m.toml --out "$out" > /dev/null 2>&1
    else
      build/bin/run_suite -q -j 2 /tmp/baselines-as-run-$m.toml --out "$out" > /dev/null 2>&1
    fi
  done
  echo "== $m, batch 32, 50% cache: decode tokens/s a sequence (DALI Table 9's HybriMoE: $([ $m = mixtral-8x7b ] && echo 1.65 || echo 1.75))"
  python3 - "$m" <<'PY'
import csv, sys
m = sys.argv[1]
rows = {h: {r["strategy"]: float(r["decode_tokens_per_s"]) / 32 for r in csv.DictReader(open(f"/tmp/baselines-as-run-{m}-{h}/runs.csv"))}
        for h in ("fitted", "none")}
print(f"{'candidate':36s} {'fitted host time':>17s} {'no host time':>13s}")
for s in rows["fitted"]:
    print(f"{s:36s} {rows['fitted'][s]:17.3f} {rows['none'][s]:13.3f}")
PY
done
