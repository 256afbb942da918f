#!/usr/bin/env bash
# The known-truth test's three rows (docs/KNOWN_TRUTH.md, "What it finds"), from a built tree:
# the testbed as the datasheets give it, fitted on the baselines without the cpu-under-copy
# term, and fitted with it (the committed profile).
# The fit itself: cp profile-datasheet.toml configs/hardware/known-truth-h200.toml, then
# scripts/fit-testbed known-truth-h200 --write --no-shares --iterations 8 (fit.log).
set -eu
cd "$(dirname "$0")/../../.."
here=docs/measurements/known-truth-2026-12-07
py=$(sed -n 's/^PYTHON=//p' build/.python 2>/dev/null || echo /usr/bin/python3)
# Each row's profile shadows the tracked one through MOEBENCH_CONFIG_PATH (a folder of presets,
# under /tmp): the tracked configs/hardware/known-truth-h200.toml is read, never written.
presets=/tmp/known-truth-presets
row() {  # name profile-file: run both suites on that profile, judge
  local out=/tmp/known-truth-$1
  rm -rf "$out" "$presets"
  mkdir -p "$presets/hardware"
  cp "$2" "$presets/hardware/known-truth-h200.toml"
  for b in 1 8; do
    MOEBENCH_CONFIG_PATH=$presets build/bin/run_suite -q -j 2 suites/known-truth/h200-batch$b.toml \
      --out "$out/known-truth-h200-batch$b/run" > /dev/null 2>&1
  done
  echo "== $1"
  "$py" analysis/known_truth.py --results "$out" --out "$out/report"
}
row datasheet "$here/profile-datasheet.toml"
sed 's/^factor = 1.17$/factor = 1.0/' configs/hardware/known-truth-h200.toml > /tmp/known-truth-without-term.toml
row fitted-without-term /tmp/known-truth-without-term.toml
row fitted configs/hardware/known-truth-h200.toml
cp /tmp/known-truth-fitted/report/index.md "$here/index.md"
cp /tmp/known-truth-fitted/report/claims.csv "$here/claims.csv"

# Today's strategies against the ones that were replayed: suites/gpu-replay.toml's cases, one
# batch's sequences each (steps 0-6 are then the whole run), simulated on the profile they were
# replayed from; total_time_s against the replay's sim_us.
echo "== today's simulation / the replayed simulation (h100-host-calibrated)"
for b in 1 8; do
  sed -e "s/^sequences = 8/sequences = $b/" -e "s/^batch_size = \[1, 8\]/batch_size = $b/" \
      -e 's/^timeline = true/timeline = false/' suites/gpu-replay.toml > /tmp/known-truth-replay-b$b.toml
  rm -rf /tmp/known-truth-replay-b$b
  build/bin/run_suite -q -j 2 /tmp/known-truth-replay-b$b.toml --out /tmp/known-truth-replay-b$b > /dev/null
done
"$py" - <<'PY'
import csv
ref = {}
for r in csv.DictReader(open("docs/measurements/gpu-h200-2026-11-27/replay-base-1.csv")):
    a = dict(p.strip().split("=") for p in r["axes"].split(";"))
    ref[(r["strategy"], a["model.preset"], a["workload.batch_size"], float(a["strategy.residency.cache_ratio"]))] = float(r["sim_us"])
by = {}
for b in (1, 8):
    for r in csv.DictReader(open(f"/tmp/known-truth-replay-b{b}/runs.csv")):
        k = (r["strategy"], r["model"], r["workload.batch_size"], float(r["strategy.residency.cache_ratio"]))
        by.setdefault(r["strategy"], []).append(float(r["total_time_s"]) * 1e6 / ref[k])
for s, q in by.items():
    print(f"{s:24s} {min(q):.4f} - {max(q):.4f}")
PY
