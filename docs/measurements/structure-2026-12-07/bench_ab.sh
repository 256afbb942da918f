#!/bin/bash
# Interleaved bench_engine runs of two binaries, four each, pinned to core 1:
#   bench_ab.sh BEFORE/bench_engine AFTER/bench_engine OUTDIR
# then: python3 bench_summary.py OUTDIR "title"
set -e
mkdir -p "$3"
for i in 1 2 3 4; do
  for w in before after; do
    B=$1; [ $w = after ] && B=$2
    MOEBENCH_HOME=${MOEBENCH_HOME:-$(pwd)} taskset -c 1 "$B" --benchmark_filter='DeepSeekV3|Decisions' \
      --benchmark_format=json > "$3/bench_${w}_$i.json" 2>/dev/null
  done
done
