"""Medians of bench_ab.sh's runs: bench_summary.py OUTDIR "title"."""
import json, statistics, sys
names = {}
for w in ("before", "after"):
    for i in range(1, 5):
        d = json.load(open(f"{sys.argv[1]}/bench_{w}_{i}.json"))
        for b in d["benchmarks"]:
            names.setdefault(b["name"], {"before": [], "after": []})[w].append(b["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1, "s": 1e3}[b["time_unit"]])
print(sys.argv[2])
for n, v in names.items():
    r = statistics.median(v["after"]) / statistics.median(v["before"])
    print(f"{n}: before {[round(x) for x in v['before']]} ms, after {[round(x) for x in v['after']]} ms, median after/before {r:.3f}")
