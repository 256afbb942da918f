#!/bin/sh
# The screen of DALI's RTX 3090 with the strategies' settings of analysis/screen_settings.toml (the prefetch
# size of HybriMoE's public code in DALI's runs) beside the profile's numbers that are neither facts nor
# unknowns, after the first screen's two numbers joined the region (../screen-2026-12-07). From the
# repository root:
#   sh docs/measurements/screen-settings-2026-12-07/run.sh > docs/measurements/screen-settings-2026-12-07/log.txt 2>&1
set -e
here=docs/measurements/screen-settings-2026-12-07
PY=${PY:-/usr/bin/python3}
MOEBENCH_HOME=$PWD MOEBENCH_RUN_SUITE=$PWD/build/bin/run_suite "$PY" scripts/testbed-region dali-rtx3090 --screen --verdicts
cp results/screen/dali-rtx3090/region.md "$here/dali-rtx3090.md"
echo "== dali-rtx3090: the screen"
sed -n '/^## The screen/,/^Not screened:/p' results/screen/dali-rtx3090/region.md | grep '^| `\|^- '
echo "== each check's number against the prefetch size (low: 0 solved again, committed: 0, high: 4)"
"$PY" - <<'PYEOF'
import json
r = json.load(open("results/screen/dali-rtx3090/region.json"))
for c in r["claims"]["claims"]:
    for k in c["checks"]:
        s = {u["key"]: u for u in k["cause"].get("by_unknown", [])}.get("strategy.hybrimoe-dali.prefetcher.prefetch_size")
        if s:
            print(f"{c['figure']} | {k['name']} | {s['low']:.3f}, {s['center']:.3f}, {s['high']:.3f} | "
                  f"{k['verdicts'].get('center')}")
PYEOF
