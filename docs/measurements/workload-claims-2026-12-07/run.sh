#!/bin/sh
# The claims that read no testbed quantity (the routing's characterisation and the predictors' accuracy),
# run afresh: make characterize and make predictors write results/characterize and
# results/predictors from the workload presets, then each claim's figure script judges them and its table
# is printed here, so that analysis/causes.py checks every number a cause quotes against this log. From the
# repository root:
#   sh docs/measurements/workload-claims-2026-12-07/run.sh > docs/measurements/workload-claims-2026-12-07/log.txt 2>&1
set -e
PY=${PY:-/usr/bin/python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
make characterize predictors PY="$PY" > "$out/make.log" 2>&1 || { tail -40 "$out/make.log"; exit 1; }
# Each figure's table, then each check's verdict and its effect in every seed (and its magnitude, the effect
# over the paper's less 1, where the paper gives a number).
OUT="$out" "$PY" - <<'PYEOF'
import importlib, os, pathlib, sys
sys.path.insert(0, "analysis")
import common
for f in ("hybrimoe_fig3", "smoe_fig3", "smoe_fig5_6", "dali_fig8", "dali_fig16b", "dali_table2"):
    print(f"== analysis/{f}.py", flush=True)
    out = pathlib.Path(os.environ["OUT"]) / f
    common.reset_lookups()
    common.take_checks()
    summary = importlib.import_module(f).run("results", out)
    print(f"verdict: {common.verdict_of(summary)}")
    for md in sorted(out.glob("*.md")):
        print(md.read_text())
    for c in common.take_checks():
        eff = ", ".join(f"{e.value:+.3f}" for e in c.effects.values())
        mag = ", ".join(f"{e.value:+.3f}" for e in c.magnitudes.values())
        print(f"check: {c.name}: {c.verdict}; effect by seed {eff}" + (f"; magnitude {mag}" if mag else ""))
PYEOF
