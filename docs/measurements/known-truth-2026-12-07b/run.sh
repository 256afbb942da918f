#!/usr/bin/env bash
# The known-truth test's rows of docs/KNOWN_TRUTH.md ("What it finds"), from a built tree: the
# testbed as the datasheets give it, the fitted testbed with the components planning on its own
# costs (no [planning]), and the committed profile (they plan on the H100 machine's tables, as the
# replayed plans were made). Then today's simulation of the replayed cases against the replayed
# simulation, timed as the replay times a case (prefill_time_s + decode_time_s) and as total_time_s.
set -eu
cd "$(dirname "$0")/../../.."
here=docs/measurements/known-truth-2026-12-07b
py=$(sed -n 's/^PYTHON=//p' build/.python 2>/dev/null || echo /usr/bin/python3)
# Each row's profile shadows the tracked one through MOEBENCH_CONFIG_PATH (a folder under /tmp):
# the tracked configs/hardware/known-truth-h200.toml is read, never written.
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
awk '/^\[planning\]/{skip=1; next} skip && /^\[/{skip=0} !skip' configs/hardware/known-truth-h200.toml \
  > /tmp/known-truth-own-costs.toml
row fitted-own-costs /tmp/known-truth-own-costs.toml
row fitted configs/hardware/known-truth-h200.toml
cp /tmp/known-truth-fitted/report/index.md "$here/index.md"
cp /tmp/known-truth-fitted/report/claims.csv "$here/claims.csv"

echo "== today's simulation / the replayed simulation (h100-host-calibrated): the steps' time, then total_time_s"
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
steps, total = {}, {}
for b in (1, 8):
    for r in csv.DictReader(open(f"/tmp/known-truth-replay-b{b}/runs.csv")):
        k = (r["strategy"], r["model"], r["workload.batch_size"], float(r["strategy.residency.cache_ratio"]))
        steps.setdefault(r["strategy"], []).append((float(r["prefill_time_s"]) + float(r["decode_time_s"])) * 1e6 / ref[k])
        total.setdefault(r["strategy"], []).append(float(r["total_time_s"]) * 1e6 / ref[k])
for s in steps:
    print(f"{s:24s} steps {min(steps[s]):.4f} - {max(steps[s]):.4f}   total {min(total[s]):.4f} - {max(total[s]):.4f}")
PY

echo "== the replay on the machine's own tables (replay-calibrated.csv): medians over each strategy's 8 cases"
"$py" - <<'PY'
import csv, statistics
by = {}
for r in csv.DictReader(open("docs/measurements/gpu-h200-2026-11-27/replay-calibrated.csv")):
    by.setdefault(r["strategy"], []).append(r)
def med(rows, col):
    v = [float(r[col]) for r in rows if r[col] not in ("", None)]
    return f"{statistics.median(v):.3f}" if v else "   - "
print(f"{'strategy':24s} real/sim  gpu-expert  cpu-expert  copy  composition")
for s, rows in by.items():
    rs = statistics.median(float(r["real_us"]) / float(r["sim_us"]) for r in rows)
    print(f"{s:24s} {rs:8.3f}  {med(rows, 'gpu_expert_real_over_sim'):>10s}  {med(rows, 'cpu_expert_real_over_sim'):>10s}"
          f"  {med(rows, 'copy_real_over_sim'):>5s}  {med(rows, 'composition_error'):>11s}")
PY
echo "== the committed profile's failures (true claims not reproduced, planted claims not refused)"
"$py" - <<'PY'
import csv
for r in csv.DictReader(open("docs/measurements/known-truth-2026-12-07b/claims.csv")):
    bad = (r["planted"] == "no") == (r["verdict"] == "not reproduced") if r["planted"] == "no" else r["verdict"] != "not reproduced"
    if bad:
        print(f"{r['planted']:8s} {r['verdict']:15s} {r['claim'][:90]} | harness {r['harness_seed1']}, {r['harness_seed2']}, {r['harness_seed3']}")
PY
