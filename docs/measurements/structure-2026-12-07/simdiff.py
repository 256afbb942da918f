import json, pathlib, sys
HOST = {"run_id", "utc_time", "wall_time_s", "result_of", "warnings", "preset_files", "decision_ns", "host"}
def rows(root):
    out = {}
    for f in pathlib.Path(root).glob("*/*/runs.jsonl"):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            key = (f.parent.parent.name, r.get("case_id"), r.get("repetition", 0))
            out[key] = {k: v for k, v in r.items() if k not in HOST and "decision" not in k and "wall" not in k and "host_" not in k}
    return out
a, b = rows(sys.argv[1]), rows(sys.argv[2])
print(len(a), "rows before,", len(b), "after")
diff = 0
for k in a:
    if k not in b: print("missing", k); diff += 1; continue
    for col in a[k]:
        if a[k][col] != b[k].get(col):
            diff += 1
            if diff < 10: print(k, col, a[k][col], b[k].get(col))
print("differences:", diff)
