#!/usr/bin/env bash
# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
# The GPU machine's work, in the order that spends a lent machine best (tests, calibration,
# benchmarks), every log into one folder. Run from the repository root on a
# machine with a GPU:
#   scripts/gpu-session.sh BIN_DIR OUT_DIR [all|measure|replay]
# BIN_DIR holds moebench, run_suite and bench_gpu, and gpu_experts_tests
# there or in ../tests (build/bin after `make build`: `make gpu-session`, or
# binaries built elsewhere); OUT_DIR
# receives machine.txt (nvidia-smi, lscpu), gpu-tests.log, gpu-layer-tests.log,
# tools-tests.log, sanitizer.log, calibrate.log, the calibrated profile
# h100-host-calibrated.toml, calibrate-under-load.log and its profile
# h100-host-under-load.toml (every table measured while the other lanes run),
# bench-gpu.log and bench-gpu-spare-core.log (one CPU thread fewer), and
# replay-TAG.csv and .log per replay variant. A failing
# step is logged and the next one still runs; the exit status is the first
# failure's.
set -u
bin=${1:?BIN_DIR}
out=${2:?OUT_DIR}
mode=${3:-all}
# The tests' binary: in BIN_DIR, or in the build's tests/ folder beside it.
tests_bin="$bin/gpu_experts_tests"
[ -x "$tests_bin" ] || tests_bin="$bin/../tests/gpu_experts_tests"
mkdir -p "$out"
export MOEBENCH_HOME=${MOEBENCH_HOME:-$PWD}
threads=${THREADS:-$(nproc)}
status=0
step() {  # step NAME command...
  local name=$1
  shift
  echo "== $name: $*" | tee -a "$out/steps.log"
  local t0=$SECONDS
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$out/steps.log"
  tail -n 40 "$out/$name.log"
  [ $rc -ne 0 ] && [ $status -eq 0 ] && status=$rc
  return 0
}
{ nvidia-smi; lscpu; } > "$out/machine.txt" 2>&1
if [ "$mode" = all ] || [ "$mode" = measure ]; then
  step gpu-tests "$tests_bin"
  replay_tests_bin="$(dirname "$tests_bin")/replay_gpu_tests"
  [ -x "$replay_tests_bin" ] && step replay-gpu-tests "$replay_tests_bin"
  # The rest of a layer on the GPU (kernels/cuda/gpu_layer.h) and the other
  # lanes' load of calibrate --under-load.
  layer_tests_bin="$(dirname "$tests_bin")/gpu_layer_tests"
  [ -x "$layer_tests_bin" ] && step gpu-layer-tests "$layer_tests_bin"
  tools_tests_bin="$(dirname "$tests_bin")/tools_tests"
  [ -x "$tools_tests_bin" ] && step tools-tests "$tools_tests_bin"
  # The same tests under compute-sanitizer's memcheck (out-of-bounds and
  # misaligned device accesses, CUDA API errors), where the toolkit has it;
  # without the test that runs out of device memory on purpose (memcheck
  # counts that refused cudaMalloc as an error).
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  if [ -n "$sanitizer" ]; then
    step sanitizer "$sanitizer" --tool memcheck --error-exitcode 3 "$tests_bin" \
      --gtest_filter=-GpuExperts.AFailedCudaCallIsNamedInTheError
    [ -x "$layer_tests_bin" ] && step sanitizer-layer "$sanitizer" --tool memcheck --error-exitcode 3 \
      "$layer_tests_bin" --gtest_filter=-GpuLayer.ALongerContextTakesLonger
  fi
  step calibrate "$bin/moebench" calibrate --hardware h100-host --out "$out/h100-host-calibrated.toml" \
    --threads "$threads" --tokens 1,2,3,4,6,8,12,16,24,32,48,64,128,256 --repeats 51 \
    --models deepseek-v2-lite,qwen3-30b-a3b --dtypes bf16,int8
  # The same tables measured while the other lanes run (tools/calibrate_load.h).
  step calibrate-under-load "$bin/moebench" calibrate --hardware h100-host --under-load \
    --out "$out/h100-host-under-load.toml" --threads "$threads" \
    --tokens 1,2,3,4,6,8,12,16,24,32,48,64,128,256 --repeats 51 \
    --models deepseek-v2-lite,qwen3-30b-a3b --dtypes bf16
  step bench-gpu "$bin/bench_gpu" --threads "$threads"
  # The same with one core left to the thread that launches the GPU work.
  step bench-gpu-spare-core "$bin/bench_gpu" --threads "$((threads - 1))"
fi
if [ "$mode" = all ] || [ "$mode" = replay ]; then
  # The hybrid strategies simulated on the profile measured here, their task
  # graphs run for real (moebench replay, docs/GPU.md): steps 0-6 of each
  # case (a prefill and six decode steps), in three variants of the host
  # side: the calibrated thread count (all cores but one) with one thread
  # per GPU-side lane, the same with one launching thread for all of them,
  # and four cores left to the threads that feed the GPU. One CSV per
  # variant, both models.
  results=$(mktemp -d)
  if ! "$bin/run_suite" suites/gpu-replay.toml --out "$results/gpu-replay" > "$results/suite.log" 2>&1; then
    tail -n 20 "$results/suite.log" | tee -a "$out/steps.log"
    status=4
  fi
  # tag:CPU threads:pool polling us[:1 = one launching thread]
  variants="base:$((threads - 1)):200 one:$((threads - 1)):200:1 t$((threads - 4)):$((threads - 4)):200"
  [ -n "${REPLAY_VARIANTS:-}" ] && variants=$REPLAY_VARIANTS  # e.g. "base:15:200"
  for v in $variants; do
    IFS=: read -r tag th sp one <<< "$v"
    launcher=""
    [ "${one:-0}" = 1 ] && launcher="--one-launcher"
    step "replay-$tag" bash -c "for m in deepseek-v2-lite qwen3-30b-a3b; do
      '$bin/moebench' replay --results '$results/gpu-replay' --model \$m --steps 0,6 \
        --threads $th --spin-us $sp $launcher --tag $tag --out '$results/out' || exit 1; done"
    { head -n 1 "$results/out/replay-deepseek-v2-lite-$tag.csv"
      tail -q -n +2 "$results/out"/replay-*-"$tag".csv; } > "$out/replay-$tag.csv" 2>/dev/null
  done
  rm -rf "$results"
fi
exit $status
