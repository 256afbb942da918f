#!/usr/bin/env bash
# Device session 2026-11-27: GPU tests of the later additions, then the replay's
# table/composition split, base (one thread per GPU lane) and --one-launcher, then a repeat.
set -u
t0=$SECONDS
log=$OUT/session.log
note() { echo "[$((SECONDS - t0)) s] $*" | tee -a "$log"; }
tar -xJf .devpack/devrun.tar.xz || { note "untar failed"; exit 9; }
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
export MOEBENCH_HOME=$PWD
B=.devrun/bin
{ nvidia-smi; nvidia-smi -q | grep -i -A3 "link\b\|pcie gen" | head -40; lscpu; nproc; free -g; } > "$OUT/machine.txt" 2>&1
note "tests"
timeout 150 $B/gpu_experts_tests > "$OUT/gpu-tests.log" 2>&1; note "gpu_experts_tests rc $?"
timeout 120 $B/replay_gpu_tests >> "$OUT/gpu-tests.log" 2>&1; note "replay_gpu_tests rc $?"
R=/tmp/r
timeout 120 $B/run_suite suites/gpu-replay.toml --out $R/gpu-replay -j 8 > "$OUT/suite.log" 2>&1; note "suite rc $?"
run() {  # tag model extra...
  local tag=$1 m=$2; shift 2
  timeout 110 $B/moebench replay --results $R/gpu-replay --model $m --steps 0,6 --threads 15 \
    --spin-us 200 --tag $tag --out $R/out "$@" >> "$OUT/replay-$tag.log" 2>&1
  note "replay $tag $m rc $?"
}
for m in deepseek-v2-lite qwen3-30b-a3b; do run base $m; run one $m --one-launcher; done
for m in deepseek-v2-lite qwen3-30b-a3b; do
  [ $((SECONDS - t0)) -lt 420 ] && run base2 $m
done
for tag in base one base2; do
  f=( $R/out/replay-*-$tag.csv ); [ -e "${f[0]}" ] || continue
  { head -n 1 "${f[0]}"; tail -q -n +2 "${f[@]}"; } > "$OUT/replay-$tag.csv"
done
cat $OUT/replay-*.log > "$OUT/replay.log"; rm -f $OUT/replay-*.log
note "done"
