#!/bin/bash
# $1 run_suite binary, $2 output file: every suite's --dry-run listing and every fuzz regression's error
cd "$(git rev-parse --show-toplevel)"
: > $2
for f in $(find suites fuzz/regressions/experiment -name "*.toml" | sort); do
  echo "== $f" >> $2
  MOEBENCH_HOME=$(pwd) timeout 120 $1 --dry-run $f >> $2 2>&1; echo "rc $?" >> $2
done
