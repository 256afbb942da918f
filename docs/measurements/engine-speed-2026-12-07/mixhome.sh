#!/bin/bash
# A configuration home that both aae2601's bench_engine and today's read:
#   mixhome.sh OUT   (then MOEBENCH_HOME=OUT bench_ab.sh ...)
# The tree's configs, less the keys aae2601 does not know: the model's
# context_length (a check only), the RTX 4090 testbed's region_suites and
# [[unknown]] tables (the region analysis reads them, not a run) and its
# kernel entry's testbed_default (so that the entry applies to KTransformers'
# family only, as aae2601 reads it).
set -e
rm -rf "$1" && mkdir -p "$1"
cp -r "$(git rev-parse --show-toplevel)/configs" "$1/"
sed -i '/^context_length/d' "$1/configs/models/deepseek-v3.toml"
python3 - "$1/configs/hardware/smoe-rtx4090.toml" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s[:s.index("# The quantities this testbed")]
s = "\n".join(l for l in s.split("\n")
              if not l.startswith("region_suites") and not l.startswith("testbed_default"))
open(p, "w").write(s)
PY
