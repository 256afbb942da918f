#!/bin/sh
# The screen of every region testbed (docs/TESTBEDS.md, "Screening: which numbers move a claim"):
# `make screen` (scripts/testbed-region PROFILE --screen --verdicts for each), then each profile's
# screen table copied here and printed into the log. Resumable: a point's finished suites are not
# run again, so a second run only judges. From the repository root:
#   sh docs/measurements/screen-2026-12-07/run.sh > docs/measurements/screen-2026-12-07/log.txt 2>&1
set -e
here=docs/measurements/screen-2026-12-07
PY=${PY:-/usr/bin/python3}
make screen PY="$PY"
for p in hybrimoe-a6000 smoe-rtx4090 dali-rtx3090 ktransformers-a100 ktransformers-rtx4080 moe-lightning-t4; do
  cp "results/screen/$p/region.md" "$here/$p.md"
  echo "== $p: the screen"
  sed -n '/^## The screen/,/^Not screened:/p' "results/screen/$p/region.md" | grep '^| `\|^- '
done
