#!/bin/bash
# Every conversion of the logs gen.py writes, by one moebench binary:
#   run.sh BIN OUTDIR   (the logs in $JL, default /tmp/jl)
# Each case's stdout and stderr with its exit status, and each trace's
# sha256; compare two OUTDIRs with diff -r after replacing the OUTDIR path.
export MOEBENCH_HOME=$(git rev-parse --show-toplevel)
B=$1; O=$2; rm -rf $O; mkdir -p $O; cd ${JL:-/tmp/jl}
c() { n=$1; shift; "$B" trace convert "$@" --model mixtral-8x7b --out $O/$n.trace > $O/$n.out 2>&1; echo "rc $?" >> $O/$n.out; }
for m in ids topkprobs logits fullprobs renorm; do c $m $m.jsonl; done
c missing-error missing.jsonl
for x in drop fill hole; do c missing-$x missing.jsonl --missing $x; done
c perforward perforward.jsonl --layout per-forward
c two ids.jsonl topkprobs.jsonl
for b in 1 2 3 4 5 6; do c bad$b bad$b.jsonl; done
c bad2-mapped bad2.jsonl --field seq=request --field token=pos --field layer=layer_idx --field experts=topk_ids
c badfield ids.jsonl --field nope=x
c badmissing ids.jsonl --missing maybe
for f in $O/*.trace; do sha256sum $f | cut -c1-16 > $f.sha; rm $f; done
