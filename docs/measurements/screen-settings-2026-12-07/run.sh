#!/bin/sh
# The screens of DALI's RTX 3090 and HybriMoE's A6000 with the strategies' settings of
# analysis/screen_settings.toml (the prefetch size of HybriMoE's public code in DALI's runs; HybriMoE's
# MRS averaging coefficient) beside the profiles' numbers that are neither facts nor unknowns, after the
# first screen's two numbers joined the regions (../screen-2026-12-07). From the repository root:
#   sh docs/measurements/screen-settings-2026-12-07/run.sh > docs/measurements/screen-settings-2026-12-07/log.txt 2>&1
set -e
here=docs/measurements/screen-settings-2026-12-07
PY=${PY:-/usr/bin/python3}
for p in dali-rtx3090 hybrimoe-a6000; do
  MOEBENCH_HOME=$PWD MOEBENCH_RUN_SUITE=$PWD/build/bin/run_suite "$PY" scripts/testbed-region "$p" --screen --verdicts
  cp "results/screen/$p/region.md" "$here/$p.md"
  echo "== $p: the screen"
  sed -n '/^## The screen/,/^Not screened:/p' "results/screen/$p/region.md" | grep '^| `\|^- '
  echo "== $p: each check's number against each strategy setting (low, committed, high)"
  P="$p" "$PY" - <<'PYEOF'
import json, os
r = json.load(open(f"results/screen/{os.environ['P']}/region.json"))
for c in r["claims"]["claims"]:
    for k in c["checks"]:
        for s in k["cause"].get("by_unknown", []):
            if s["key"].startswith("strategy."):
                print(f"{s['key']} | {c['figure']} | {k['name']} | {s['low']:.3f}, {s['center']:.3f}, {s['high']:.3f} | "
                      f"{k['verdicts'].get('center')}")
PYEOF
done
