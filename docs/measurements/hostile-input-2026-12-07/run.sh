#!/usr/bin/env bash
# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
# The fourth hostile-input round's inputs, each run against a build of this
# tree: its exit code, its wall time and the first line it prints on stderr.
# Usage: docs/measurements/hostile-input-2026-12-07/run.sh [BUILD_BIN] > log.txt
# Writes only under a temporary folder it removes.
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=${1:-$ROOT/build/bin}
PY=$(sed -n 's/^PYTHON=//p' "$ROOT/build/.python" 2>/dev/null || echo /usr/bin/python3)
T=$(mktemp -d /tmp/hostile-XXXXXX)
trap 'rm -rf "$T"' EXIT
export MOEBENCH_HOME=$ROOT
cd "$T" || exit 1
echo "# $(date -u +%FT%TZ), $(git -C "$ROOT" rev-parse --short HEAD), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"

# try NAME CMD...: one line "NAME | exit | seconds | first stderr line".
try() {
  local name=$1; shift
  local t0=$(date +%s.%N)
  "$@" > "$T/out" 2> "$T/err"
  local rc=$?
  local t1=$(date +%s.%N)
  printf '%s | %s | %.2f | %s\n' "$name" "$rc" "$(echo "$t1 - $t0" | bc)" "$(grep -v '^$' "$T/err" | head -1 | cut -c1-220)"
}
suite() {  # suite FILE WORKLOAD-LINES...
  local f=$1; shift
  { printf 'strategies = ["llamacpp"]\n[suite]\nname = "h"\n[model]\npreset = "%s"\nexpert_dtype = "int4"\n' "${MODEL:-mixtral-8x7b}"
    printf '[hardware]\npreset = "hybrimoe-a6000"\n[workload]\nsequences = 6\nbatch_size = 2\n'
    printf '%s\n' "$@"; } > "$f"
}
row() { "$PY" -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][0]; print(' '.join(f'{k}={r.get(k)}' for k in sys.argv[2:]))" "$@"; }

suite uniform.toml 'prompt_len = 16' 'decode_len = 8' 'lengths = "uniform"' 'prompt_len_max = 64'
try "uniform lengths, static scheduler (was SIGSEGV)" "$BIN/run_suite" uniform.toml -q --out r-uniform
printf '{"arrival_time": 0, "prompt_len": 10, "output_len": 16}\n%.0s' 1 2 3 4 5 6 > lens.jsonl
suite file-static.toml 'lengths = "file"' 'arrivals = "lens.jsonl"'
try "file lengths, batch arrival, static (was SIGSEGV)" "$BIN/run_suite" file-static.toml -q --out r-file
echo "  recorded: $(row r-file/runs.jsonl status workload.prompt_len workload.decode_len) (output_len 16 = 15 decode steps)"
suite with-len.toml 'prompt_len = 64' 'lengths = "file"' 'arrivals = "lens.jsonl"'
try "file lengths with a workload prompt_len" "$BIN/run_suite" with-len.toml --dry-run -q
suite gamma.toml 'prompt_len = 16' 'arrival = "gamma"' 'arrival_cv = 1e-300' 'scheduler = "continuous"'
try "arrival_cv = 1e-300 (looped for ever)" "$BIN/run_suite" gamma.toml -q --out r-gamma
suite rate.toml 'prompt_len = 16' 'arrival = "poisson"' 'rate = 1e-300' 'scheduler = "continuous"'
try "rate = 1e-300 (blamed the hardware)" "$BIN/run_suite" rate.toml --dry-run -q
mkfifo fifo.jsonl
for a in fifo.jsonl /dev/zero /tmp; do
  suite "a.toml" 'prompt_len = 16' 'arrival = "file"' "arrivals = \"$a\"" 'scheduler = "continuous"'
  try "arrivals = $a" timeout 60 "$BIN/run_suite" a.toml -q --out "r-$RANDOM"
done
printf '{"arrival_time": 0, "prompt_len": 10000000, "output_len": 1}\n%.0s' 1 2 3 4 5 6 > long.jsonl
MODEL=qwen2-57b-a14b suite long.toml 'arrival = "file"' 'lengths = "file"' 'arrivals = "long.jsonl"' 'scheduler = "continuous"'
try "a 10,000,000-token prompt on qwen2-57b-a14b (13.6 GB and growing)" timeout 60 "$BIN/run_suite" long.toml -q --out r-long
for n in 9223372036854775807 9200000000000000000; do
  printf '{"arrival_time": 0, "prompt_len": %s, "output_len": %s}\n%.0s' $n $n $n $n $n $n > big.jsonl
  suite big.toml 'arrival = "file"' 'lengths = "file"' 'arrivals = "big.jsonl"' 'scheduler = "continuous"'
  try "lengths of $n" "$BIN/run_suite" big.toml --dry-run -q
done
for start in 0 1733558400 100000000000 1000000000000; do
  "$PY" -c "
for i in range(6): print('{\"arrival_time\": %s.%d, \"prompt_len\": 16, \"output_len\": 9}' % ('$start', i))" > "t$start.jsonl"
  suite "t$start.toml" 'prompt_len = 16' 'decode_len = 8' 'arrival = "file"' "arrivals = \"t$start.jsonl\"" 'scheduler = "continuous"'
  "$BIN/run_suite" "t$start.toml" -q --out "r-t$start" 2> /dev/null
  echo "  gaps of 0.1 s from $start s: $(row "r-t$start/runs.jsonl" serve_ttft_mean_ms tbt_mean_ms)"
done
printf '{"arrival_time": 0, "prompt_len": 1, "output_len": 1, "note": "caf\xe9"}\n%.0s' 1 2 3 4 5 6 > latin1.jsonl
suite latin1.toml 'prompt_len = 16' 'arrival = "file"' 'arrivals = "latin1.jsonl"' 'scheduler = "continuous"'
try "a Latin-1 byte in the arrivals file" "$BIN/run_suite" latin1.toml -q --out r-latin1
cp t0.jsonl changing.jsonl
suite changing.toml 'prompt_len = 16' 'decode_len = 8' 'arrival = "file"' 'arrivals = "changing.jsonl"' 'scheduler = "continuous"'
"$BIN/run_suite" changing.toml -q --out r-changing 2> /dev/null
sed -i 's/0.5,/0.75,/' changing.jsonl
try "the arrivals file changed, then --resume" "$BIN/run_suite" changing.toml -q --resume --out r-changing
"$BIN/run_suite" uniform.toml -q --out r-filter --filter strategy.name=llamacpp 2> /dev/null
try "--resume of a --filter run without it" "$BIN/run_suite" uniform.toml -q --resume --out r-filter
try "run_suite with a path holding byte 0xFF" "$BIN/run_suite" uniform.toml -q --out "$(printf 'r-\xff')"
try "moebench kernels --json > /dev/full" sh -c "'$BIN/moebench' kernels --json > /dev/full"
try "moebench config list, stdout closed" sh -c "'$BIN/moebench' config list >&-"
try "moebench config describe workload > /dev/full" sh -c "'$BIN/moebench' config describe workload > /dev/full"
try "run_suite --dry-run > /dev/full" sh -c "'$BIN/run_suite' uniform.toml --dry-run > /dev/full"
before=$(sha256sum "$ROOT/configs/hardware/local-cpu.toml")
try "calibrate --out configs/hardware/local-cpu.toml" sh -c "cd '$ROOT' && '$BIN/moebench' calibrate --hardware local-cpu --out configs/hardware/local-cpu.toml"
[ "$before" = "$(sha256sum "$ROOT/configs/hardware/local-cpu.toml")" ] && echo "  the tracked profile is unchanged"
try "calibrate --tokens 1,100000000" "$BIN/moebench" calibrate --hardware local-cpu --out cal.toml --tokens 1,100000000
try "calibrate --out /proc/self/x.toml" "$BIN/moebench" calibrate --hardware local-cpu --out /proc/self/x.toml
# A point whose results/ cannot be a folder (a file there: a read-only folder does not stop root).
mkdir -p p1/configs p2/configs ro/configs && touch ro/results
try "--points p1 <unwritable> p2" "$BIN/run_suite" uniform.toml -q --points p1 ro p2
grep -E 'not run|error \(above\)|complete' "$T/err" | sed 's/^/  /'
cp "$ROOT/docs/measurements/gpu-h200-2026-11-27/replay-base-1.csv" r.csv
"$PY" -c "
import csv, sys
rows = list(csv.reader(open('r.csv')))
rows[1][rows[0].index('sim_us')] = '0'
csv.writer(open('zero.csv', 'w', newline='')).writerows(rows)"
try "gpu_replay.py, sim_us 0" "$PY" "$ROOT/analysis/gpu_replay.py" zero.csv
try "gpu_replay.py, a binary file" "$PY" "$ROOT/analysis/gpu_replay.py" "$BIN/moebench"
try "gpu_replay.py, a FIFO" timeout 60 "$PY" "$ROOT/analysis/gpu_replay.py" fifo.jsonl
try "gpu_replay.py, one CSV three times" "$PY" "$ROOT/analysis/gpu_replay.py" r.csv r.csv r.csv
try "gpu_contention.py --check, missing folders" "$PY" "$ROOT/analysis/gpu_contention.py" --check nope nope2
try "gpu_contention.py --check --toml --handoff" "$PY" "$ROOT/analysis/gpu_contention.py" --check --toml --handoff
try "fit-testbed --json /tmp" "$PY" "$ROOT/scripts/fit-testbed" dali-rtx3090 --json /tmp
try "testbed-region --out /proc/h4" "$PY" "$ROOT/scripts/testbed-region" dali-rtx3090 --out /proc/h4
