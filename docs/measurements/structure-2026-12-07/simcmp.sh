#!/bin/bash
# $1 binary, $2 results root: serving subsets and the suites whose cases read the attention paths
cd "$(git rev-parse --show-toplevel)"
run() { MOEBENCH_HOME=$(pwd) $1 -q -j 2 --results $2 "${@:3}" > /dev/null 2>&1 || echo "FAIL ${@:3}"; }
run $1 $2 suites/serving.toml --filter workload.seed=1,hardware.preset=ktransformers-rtx4080
run $1 $2 suites/serving-memory.toml --filter workload.seed=1
run $1 $2 suites/regression/serving.toml
run $1 $2 suites/smoke.toml
run $1 $2 suites/peers-moe-lightning-t4.toml
run $1 $2 suites/hybrimoe-fig9.toml
