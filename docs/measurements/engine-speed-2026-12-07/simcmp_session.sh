#!/bin/bash
# $1 binary, $2 results root: the structure note's suites (simcmp.sh) and suites/compare.toml (hybrimoe-code: late_prefetch = "issue")
cd "$(git rev-parse --show-toplevel)"
run() { MOEBENCH_HOME=$(pwd) $1 -q -j 2 --results $2 "${@:3}" > /dev/null 2>&1 || echo "FAIL ${@:3}"; }
bash docs/measurements/structure-2026-12-07/simcmp.sh $1 $2
run $1 $2 suites/compare.toml
