#!/bin/bash
# What-if: the known-truth testbed with its two under-copy terms at other values (not a fit: neither term is
# identified by a baseline, docs/KNOWN_TRUTH.md). Each point is a copy of the committed profile with
# [[contention]] cpu-under-copy's factor set to C and, where G is not 1, a gpu-under-copy term of factor G;
# the suites run on it and analysis/known_truth.py judges every claim. Writes under results/known-truth-whatif/
# only. Run from the repository root after `make build`:  docs/measurements/known-truth-2026-12-07c/run.sh
set -euo pipefail
PY=${PY:-/usr/bin/python3}
root=$(pwd)
for C in 1.0 1.17 1.3 1.45; do
  for G in 1 1.4; do
    h=$root/results/known-truth-whatif/cpu$C-gpu$G
    rm -rf "$h"; mkdir -p "$h/configs/hardware"
    "$PY" - "$root/configs/hardware/known-truth-h200.toml" "$h/configs/hardware/known-truth-h200.toml" "$C" "$G" <<'PY'
import sys
src, dst, c, g = sys.argv[1:]
t = open(src).read()
old = '[[contention]]\nterm = "cpu-under-copy"\nfactor = 1.17'
assert old in t, "the committed profile's cpu-under-copy entry moved"
new = f'[[contention]]\nterm = "cpu-under-copy"\nfactor = {c}'
if g != "1":
    new = f'[[contention]]\nterm = "gpu-under-copy"\nfactor = {g}\nsource = "what-if"\n\n' + new
open(dst, "w").write(t.replace(old, new))
PY
    echo "== cpu-under-copy $C, gpu-under-copy $G"
    for b in 1 8; do
      MOEBENCH_HOME=$root MOEBENCH_CONFIG_PATH=$h/configs build/bin/run_suite -q -j 2 --results "$h/results" \
        suites/known-truth/h200-batch$b.toml >/dev/null 2>&1
    done
    "$PY" analysis/known_truth.py --results "$h/results" --out "$h/report" | sed -n 2,3p
  done
done
