#!/usr/bin/env bash
# Device session 2026-11-27, second run: calibrate this host (bf16 CPU and GPU tables),
# simulate the gpu-replay suite on that profile, replay base and --one-launcher.
set -u
t0=$SECONDS
log=$OUT/session2.log
note() { echo "[$((SECONDS - t0)) s] $*" | tee -a "$log"; }
left() { [ $((SECONDS - t0 + $1)) -lt 185 ]; }
tar -xJf .devpack/devrun.tar.xz || { note "untar failed"; exit 9; }
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
export MOEBENCH_HOME=$PWD
B=.devrun/bin
{ nvidia-smi -L; lscpu | head -30; } > "$OUT/machine2.txt" 2>&1
C=/tmp/cfg/configs/hardware; mkdir -p $C
[ -e $C/h100-host-calibrated.toml ] || timeout 150 $B/moebench calibrate --hardware h100-host --out $C/h100-host-calibrated.toml \
  --threads 15 --repeats 21 --tokens 1,2,3,4,6,8,12,16,24,32,48,64,128,256 \
  --models deepseek-v2-lite,qwen3-30b-a3b --dtypes bf16 --transition-rounds 0 > "$OUT/calibrate.log" 2>&1
rc=$?; note "calibrate rc $rc"
[ $rc -eq 0 ] || exit 3
cp $C/h100-host-calibrated.toml "$OUT/h200-host-calibrated.toml"
export MOEBENCH_CONFIG_PATH=/tmp/cfg/configs
R=/tmp/r-cal-$$
timeout 60 $B/run_suite suites/gpu-replay.toml --out $R/gpu-replay -j 8 > "$OUT/suite2.log" 2>&1; note "suite rc $?"
run() {  # tag model extra...
  local tag=$1 m=$2; shift 2
  left 0 || { note "skip $tag $m"; return; }
  timeout 100 $B/moebench replay --results $R/gpu-replay --model $m --steps 0,6 --threads 15 \
    --spin-us 200 --tag $tag --out $R/out "$@" >> "$OUT/replay2.log" 2>&1
  note "replay $tag $m rc $?"
}
for m in deepseek-v2-lite qwen3-30b-a3b; do run cal $m; done
:
for tag in cal calone; do
  f=( $R/out/replay-*-$tag.csv ); [ -e "${f[0]}" ] || continue
  { head -n 1 "${f[0]}"; tail -q -n +2 "${f[@]}"; } > "$OUT/replay-$tag.csv"
done
note "done"
